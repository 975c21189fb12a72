"""A Go module's set-up with dependencies, cold and warm, and what its build cache saves the
agent's first `go test` (docs/go-tests.md, docs/performance.md).

    python3 bench/go_setup_cache.py [--runs 2] [--mirror /work/.mirror]

The module requires two real modules, github.com/google/go-cmp v0.7.0 and
github.com/BurntSushi/toml v1.6.0 (their non-test Go files, from the fetch tool's mirrors),
served as a module proxy (tests/go_proxy.py's tree) by a server on the Docker bridge's gateway
address, the one host address the set-up fence's proxy reaches (GOPROXY=http://GATEWAY:PORT,
GONOSUMDB for them: go.sum holds the tree's own hashes). Then `worker sandbox run-tests --json`:

- cold: the set-up image built (`go mod download`, then the tests' packages compiled into the
  build cache that each test run copies into its GOCACHE: sandbox/ecosystems/go/image.py);
- warm: the set-up image cached, each run on a fresh container (so each a first `go test`);
- warm, the image's seed only (worker before the set-up kept its build cache): the same run with
  `--test-cmd` that fills GOCACHE from the image's seed alone;
- warm, empty cache: `--test-cmd "GOCACHE=/tmp/no-seed go test ./..."`.

Each row: the whole command's seconds and its test command's own (`duration_s`), medians of
--runs; the set-up images made are removed at the end. A markdown table on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# bench/sandbox.py would shadow the sandbox package.
sys.path[:] = [str(ROOT)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from sandbox.ecosystems.go.image import CACHE_SEED  # noqa: E402
from tests.go_proxy import build_proxy, go_sum  # noqa: E402

DEPS = {  # module -> (mirror owner+name, tag)
    "github.com/google/go-cmp": ("google+go-cmp", "v0.7.0"),
    "github.com/BurntSushi/toml": ("BurntSushi+toml", "v1.6.0"),
}
APP = """package app

import "github.com/BurntSushi/toml"

type Config struct {
	Name  string
	Ports []int
	Tags  map[string]string
}

func Parse(text string) (Config, error) {
	var c Config
	_, err := toml.Decode(text, &c)
	return c, err
}
"""
APP_TEST = """package app

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	got, err := Parse("Name = 'x'\\nPorts = [1, 2]\\n[Tags]\\na = 'b'\\n")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Name: "x", Ports: []int{1, 2}, Tags: map[string]string{"a": "b"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}
"""
SEED_ONLY = f"cp -R {CACHE_SEED} /tmp/seed-only && GOCACHE=/tmp/seed-only go test ./..."
EMPTY = "GOCACHE=/tmp/no-seed go test ./..."


def module_files(mirror: Path, name: str, tag: str, work: Path) -> dict[str, str]:
    """The module's go.mod, LICENSE and non-test Go files outside testdata, at `tag`."""
    out = work / name
    out.mkdir(parents=True)
    archive = subprocess.run(["git", f"--git-dir={mirror / name / 'repo'}", "archive", tag],
                             check=True, capture_output=True).stdout  # fmt: skip
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(out, filter="data")
    files = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        keep = rel in ("go.mod", "LICENSE") or (
            rel.endswith(".go") and not rel.endswith("_test.go") and "testdata/" not in rel
        )
        if path.is_file() and keep:
            files[rel] = path.read_text(encoding="utf-8")
    return files


def gateway() -> str:
    """The default bridge's gateway: the host, as containers on it reach it."""
    done = subprocess.run(
        ["docker", "network", "inspect", "bridge", "-f",
         "{{range .IPAM.Config}}{{.Gateway}}{{end}}"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return done.stdout.strip()


@contextlib.contextmanager
def serve(root: Path, host: str) -> Iterator[str]:
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


def run_tests(repo: Path, env: dict[str, str], test_cmd: str | None) -> dict[str, object]:
    command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--json",
               "--repo", str(repo)]  # fmt: skip
    command += ["--test-cmd", test_cmd] if test_cmd else []
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if "{" not in done.stdout:
        raise SystemExit(f"run-tests printed no summary: {done.stderr[-2000:]}")
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    if not summary.get("passed"):
        raise SystemExit(f"run-tests did not pass: {summary.get('headline')}\n{done.stderr}")
    setup = re.search(r"set-up done in ([\d.]+)s, cached as (\S+)", done.stderr)
    return {
        "s": seconds,
        "test_s": float(summary["duration_s"]),
        "setup_s": float(setup.group(1)) if setup else None,
        "image": setup.group(2) if setup else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="go-setup-cache-"))
    made: list[str] = []
    try:
        modules = {
            m: {tag: module_files(args.mirror, name, tag, work / "src")}
            for m, (name, tag) in DEPS.items()
        }
        build_proxy(work / "proxy", modules)
        repo = work / "app"
        repo.mkdir()
        requires = "".join(f"\t{m} {tag}\n" for m, (_n, tag) in DEPS.items())
        name = f"example.com/app // {os.urandom(6).hex()}"  # a set-up no earlier run cached
        (repo / "go.mod").write_text(f"module {name}\n\ngo 1.24\n\nrequire (\n{requires})\n")
        (repo / "go.sum").write_text(go_sum(modules))
        (repo / "app.go").write_text(APP)
        (repo / "app_test.go").write_text(APP_TEST)
        git_env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
        for git in (
            ["init", "-q"],
            ["add", "-A"],
            ["-c", "user.name=b", "-c", "user.email=b@b.invalid", "commit", "-qm", "m"],
        ):
            subprocess.run(["git", "-C", str(repo), *git], check=True, env=git_env)  # fmt: skip
        os.chmod(repo, 0o755)
        with serve(work / "proxy", gateway()) as url:
            env = {**os.environ, "PYTHONPATH": str(ROOT), "GOPROXY": url,
                   "GONOSUMDB": "github.com"}  # fmt: skip
            cold = run_tests(repo, env, None)
            made += [str(cold["image"])] if cold["image"] else []
            rows = [("cold: set-up built", [cold])]
            for name, cmd in (("warm", None), ("warm, the image's seed only", SEED_ONLY),
                              ("warm, empty cache", EMPTY)):  # fmt: skip
                rows.append((name, [run_tests(repo, env, cmd) for _ in range(args.runs)]))
    finally:
        for image in made:
            subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    print("| run | `worker sandbox run-tests` s | set-up s | its test command s |")
    print("|---|---|---|---|")
    for name, runs in rows:
        whole = statistics.median(float(r["s"]) for r in runs)  # type: ignore[arg-type]
        own = statistics.median(float(r["test_s"]) for r in runs)  # type: ignore[arg-type]
        setup = runs[0]["setup_s"]
        print(f"| {name} | {whole:.1f} | {'' if setup is None else setup} | {own:.1f} |")
    deps = ", ".join(f"{m} {t}" for m, (_n, t) in DEPS.items())
    print(f"\nexample.com/app requiring {deps}; warm rows: median of {args.runs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
