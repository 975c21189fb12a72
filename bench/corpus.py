"""Real repositories: the sandbox against their own CI's venv (docs/evaluation.md).

    python3 bench/corpus.py [REPO ...] [--list bench/corpus.toml] [--work DIR]
        [--sandbox-only | --reference-only | --report] [--redo-reference] [--with-workarounds]

For each repository of the list (or those named; a name not in the list may be a local path or
a git URL, with --install and --test), at its pinned commit:

1. the reference: a fresh venv, the project's own install commands, its CI's test command with
   a JUnit report; cached in WORK/NAME/reference.json, so the sandbox side can run alone
   (--sandbox-only) and a changed entry runs again;
2. the sandbox: `worker sandbox run-tests --repo R --json` with no flag, from this checkout, on
   a fresh clone (nothing the reference built is in it); WORK/NAME/sandbox.json;
3. the comparison (bench/corpus_compare.py): equal, or the first cause; a markdown table on
   stdout and in WORK/table.md.

--with-workarounds runs the sandbox side of the entries that name a `workaround` (run-tests
flags for a documented limit) with those flags: WORK/NAME/sandbox-workaround.json and
WORK/table-workarounds.md.

An entry with `ecosystem = "go"` (bench/corpus-go.toml) is a Go module: its reference is the
Go the sandbox picks for its go.mod, on the host, running `go test -json` (bench/corpus_go.py).
An entry with `ecosystem = "node"` (bench/corpus-node.toml: `--list bench/corpus-node.toml`)
is a JavaScript or TypeScript repository: its reference is the host's Node, the CI's install
commands and its test command, with the runner's per-test report (bench/corpus_node.py); the
sandbox side is the same `run-tests` with no flag. An entry with `ecosystem = "java"`
(bench/corpus-java.toml) is a Maven project: its reference is the host's JDK 17 and Maven (or
its own `./mvnw`), `mvn -B test` with a local repository of the bench's own (WORK/m2), then the
same offline, its Surefire reports read into the sandbox's ids (bench/corpus_java.py). An entry
with `ecosystem = "rust"` (bench/corpus-rust.toml) is a Rust crate: its reference is the host's
Rust, `cargo fetch` and its `cargo test --no-fail-fast` offline, its plain output read into the
sandbox's ids (bench/corpus_rust.py); run it with `--user ''` (the host's toolchain is root's).

A repository comes from, in order: its `source` (a path or a URL), the fetch mirror
(MIRROR/owner+name/repo), or https://github.com/owner/name. Installs use PyPI alone (the host's
pip configuration is left out); uv, poetry and pdm come from a tool venv (WORK/tools).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [str(ROOT), str(HERE)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from corpus_compare import Comparison, Row, Side, compare, table  # noqa: E402
from corpus_go import go_for, go_proxy_env, run_go_reference  # noqa: E402
from corpus_java import java_version, run_java_reference  # noqa: E402
from corpus_node import node_version, run_node_reference  # noqa: E402
from corpus_rust import run_rust_reference, rust_version  # noqa: E402

from sandbox.testrun.junit import parse_junit  # noqa: E402

TOOLS = ("uv", "poetry", "pdm")
# pdm 2.29.4 with hishel 2.0 fails on import; pdm[locked] pins what it was released with.
TOOL_REQUIREMENTS = ("uv", "poetry", "pdm[locked]")
JUNIT_FLAGS = "-o junit_family=xunit1 -p no:cacheprovider"
# A CI runner's PATH has the system's folders and the venv's, not this machine's pyenv shims.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The host's pip settings (a local wheel folder, extra file indexes) would make the reference a
# venv no CI has; the sandbox's set-up sees PyPI alone.
DROPPED_ENV = ("PIP_", "UV_", "POETRY_", "PDM_", "VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One repository of the list: where it comes from, its commit, how its CI tests it."""

    name: str
    source: str
    commit: str
    install: tuple[str, ...]
    test: str
    packaging: str = ""
    ci: str = ""
    env: dict[str, str] = field(default_factory=dict)
    submodules: dict[str, str] = field(default_factory=dict)  # path -> owner/name or URL
    workaround: tuple[str, ...] = ()  # run-tests flags that make a known difference go away
    ecosystem: str = "python"  # or "node", "go", "java", "rust": bench/corpus_node.py, ...
    runner: str = ""  # node: the runner whose report names the tests (bench/node_host.py)
    report: str = ""  # node: the test command with {report_flags} where the report is asked
    modules: tuple[str, ...] = ()  # go: `owner/name@tag` of each module served as its proxy

    def key(self, python: str, user: str) -> str:
        """What decides the reference's result: a changed entry runs it again."""
        data = [self.source, self.commit, self.install, self.test, self.env, self.submodules]
        if self.ecosystem != "python":
            data += [self.ecosystem, self.runner, self.report, *self.modules]
        return hashlib.sha256(json.dumps([*data, python, user]).encode()).hexdigest()[:16]


def resolve(repo: str, mirror: Path) -> str:
    """A git source for `owner/name`, a path or a URL."""
    if "://" in repo or repo.startswith(("/", ".", "~")) or Path(repo).is_dir():
        return str(Path(repo).expanduser().resolve()) if "://" not in repo else repo
    fetched = mirror / repo.replace("/", "+") / "repo"
    return str(fetched) if fetched.is_dir() else f"https://github.com/{repo}.git"


def load_list(path: Path, mirror: Path) -> list[Entry]:
    """The entries of the list file."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entries = []
    for repo in data.get("repo", []):
        entries.append(
            Entry(
                name=repo["name"],
                source=resolve(repo.get("source") or repo["github"], mirror),
                commit=repo["commit"],
                install=tuple(repo["install"]),
                test=repo["test"],
                packaging=repo.get("packaging", ""),
                ci=repo.get("ci", ""),
                env=dict(repo.get("env", {})),
                submodules={p: resolve(s, mirror) for p, s in repo.get("submodules", {}).items()},
                workaround=tuple(repo.get("workaround", ())),
                ecosystem=repo.get("ecosystem", "python"),
                runner=repo.get("runner", ""),
                report=repo.get("report", ""),
                modules=tuple(repo.get("modules", ())),
            )
        )
    return entries


class GitFailed(RuntimeError):
    """A clone, checkout or submodule update failed: that repository's side is not run."""


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise GitFailed(f"git {' '.join(args)}: {last}")
    return done.stdout.strip()


def checkout(entry: Entry, dest: Path) -> None:
    """A fresh clone at the pinned commit, with its tags and submodules (as CI checks out)."""
    shutil.rmtree(dest, ignore_errors=True)
    git("clone", "-q", "--no-checkout", entry.source, str(dest))
    git("-c", "advice.detachedHead=false", "checkout", "-q", entry.commit, cwd=dest)
    for path, url in entry.submodules.items():
        names = git("config", "-f", ".gitmodules", "--get-regexp", r"\.path$", cwd=dest)
        name = next(n for n, p in (line.split() for line in names.splitlines()) if p == path)
        git("config", f"{name[: -len('.path')]}.url", url, cwd=dest)
        git("-c", "protocol.file.allow=always", "submodule", "update", "--init", "--", path,
            cwd=dest)  # fmt: skip


def tool_bin(work: Path, python: str) -> Path:
    """A folder holding uv, poetry and pdm alone (their venv's python and pip stay out of PATH),
    installed on first use with `python` (one the reference's user may run)."""
    venv, links = work / "tools", work / "tools-bin"
    if not all((links / t).exists() for t in TOOLS):
        if not all((venv / "bin" / t).exists() for t in TOOLS):
            subprocess.run([python, "-m", "venv", str(venv)], check=True)
            subprocess.run([venv / "bin" / "pip", "install", "-q", *TOOL_REQUIREMENTS], check=True,
                           env=plain_env())  # fmt: skip
        links.mkdir(parents=True, exist_ok=True)
        for t in TOOLS:
            (links / t).unlink(missing_ok=True)
            (links / t).symlink_to(venv / "bin" / t)
    return links


def plain_env() -> dict[str, str]:
    """The environment without the host's pip, uv, poetry, pdm and Python settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
    return env | {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def as_user(user: str) -> list[str]:
    """The prefix that runs a command as `user` when this script runs as root, else none: CI
    runs its tests as a user, and a test that expects a read-only file to refuse it passes for
    any user but root."""
    if not user or os.geteuid() != 0:
        return []
    entry = pwd.getpwnam(user)
    return ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups"]


def shell(
    command: str, *, cwd: Path, env: dict[str, str], log: Any, timeout_s: float, user: list[str]
) -> int:
    """Run `command` with bash (as `user`, a prefix from `as_user`), its output appended to
    `log`; the exit code (124: timed out)."""
    log.write(f"\n$ {command}\n")
    log.flush()
    # A session of its own, so that a timeout ends what the tests started too (xdist workers).
    with subprocess.Popen([*user, "bash", "-c", command], cwd=cwd, env=env, stdout=log,
                          stderr=subprocess.STDOUT, start_new_session=True) as proc:  # fmt: skip
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            log.write(f"\n[timed out after {timeout_s:.0f}s]\n")
            return 124


def tail(path: Path, lines: int = 3) -> str:
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " / ".join(line.strip() for line in text[-lines:])


def run_reference(
    entry: Entry, work: Path, *, python: str, user: str, timeout_s: float
) -> dict[str, Any]:
    """The CI's venv made with the interpreter `python`: install, test with a JUnit report, as
    `user` (when run as root); the result as reference.json holds it."""
    where = work / entry.name
    clone, venv, log_path = where / "ref", where / "venv", where / "reference.log"
    junit = where / "reference-junit.xml"
    result: dict[str, Any] = {"name": entry.name, "commit": entry.commit, "counts": None}
    try:
        checkout(entry, clone)
    except GitFailed as exc:
        return result | {"problem": f"checkout failed: {exc}"}
    shutil.rmtree(venv, ignore_errors=True)
    junit.unlink(missing_ok=True)
    prefix = as_user(user)
    if prefix:
        (where / "home").mkdir(exist_ok=True)
        subprocess.run(["chown", "-R", f"{user}:", str(where)], check=True)
    subprocess.run([*prefix, python, "-m", "venv", str(venv)], check=True)
    env = plain_env() | {
        "HOME": str(where / "home") if prefix else os.environ.get("HOME", "/"),
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}:{tool_bin(work, python)}:{SYSTEM_PATH}",
        "UV_PROJECT_ENVIRONMENT": str(venv),
        "UV_PYTHON": str(venv / "bin" / "python"),
    }
    started = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        steps = ["python -m pip install -q -U pip", *entry.install]
        for step in steps:
            if shell(step, cwd=clone, env=env, log=log, timeout_s=timeout_s, user=prefix):
                result["problem"] = f"install failed: `{step}`: {tail(log_path, 1)}"
                return result
        result["install_s"] = round(time.monotonic() - started, 1)
        command = f"{entry.test} --junitxml={junit} {JUNIT_FLAGS}"
        started = time.monotonic()
        code = shell(command, cwd=clone, env=env | entry.env, log=log, timeout_s=timeout_s,
                     user=prefix)  # fmt: skip
        freeze = subprocess.run([venv / "bin" / "python", "-m", "pip", "freeze"],
                                capture_output=True, text=True, env=env)  # fmt: skip
    result |= {"test_s": round(time.monotonic() - started, 1), "exit_code": code}
    result["packages"] = freeze.stdout.split()
    if not junit.is_file():
        result["problem"] = f"no JUnit report (exit {code}): {tail(log_path)}"
        return result
    summary = parse_junit(junit.read_bytes())
    result |= {
        "counts": {"passed": summary.passed, "failed": summary.failed,
                   "errors": summary.errors, "skipped": summary.skipped},
        "failing": summary.failing_ids(),
        "outcomes": dict(summary.outcomes),
    }  # fmt: skip
    return result


def run_sandbox(
    entry: Entry, work: Path, *, flags: tuple[str, ...], timeout_s: float,
    env: dict[str, str] | None = None, worker: Path = ROOT,
) -> dict[str, Any]:  # fmt: skip
    """`worker sandbox run-tests --repo R --json` with `flags` (none: the measurement; else the
    entry's workaround), the code of the checkout `worker` (this one unless --worker), on a
    fresh clone; `env` added to its environment."""
    where = work / entry.name
    clone = where / "box"
    result: dict[str, Any] = {
        "name": entry.name,
        "commit": entry.commit,
        "worker": worker_commit(worker),
        "date": datetime.date.today().isoformat(),
        "duration_s": None,
        "summary": None,
        "flags": list(flags),
    }
    try:
        checkout(entry, clone)
    except GitFailed as exc:
        return result | {"exit_code": None, "error": f"checkout failed: {exc}"}
    command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--repo", str(clone)]
    started = time.monotonic()
    with subprocess.Popen(
        [*command, *flags, "--json"],
        cwd=worker,
        env={**os.environ, **(env or {}), "PYTHONPATH": str(worker)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            proc.terminate()  # worker ends on SIGTERM and removes its containers first
            stdout, stderr = proc.communicate()
            stderr, code = f"{stderr}\nbench: timed out after {timeout_s:.0f}s", 124
    result["duration_s"] = round(time.monotonic() - started, 1)
    (where / "sandbox.log").write_text(stderr + "\n" + stdout, encoding="utf-8")
    if "{" in stdout:
        try:
            result["summary"] = json.loads(stdout[stdout.index("{") :])
        except ValueError:
            pass
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    error = ([ln for ln in lines if ln.startswith(("worker:", "bench:"))] or lines or [""])[-1]
    return result | {
        "exit_code": code,
        "error": error.removeprefix("worker: error: "),
        **setup_seconds(lines),
        "setup": [ln for ln in lines if "set-up" in ln][:6],
        "environment": [ln for ln in lines if ln.startswith("environment:")][:3],
    }


def setup_seconds(lines: Sequence[str]) -> dict[str, Any]:
    """The set-up's own seconds ("set-up done in 12.3s"; None when it was a cached image's tag
    lookup) and the seconds spent building toolchain images first ("built NAME ... in 40 s")."""
    done = [float(m[1]) for ln in lines if (m := re.search(r"set-up done in ([\d.]+)s", ln))]
    built = [float(m[1]) for ln in lines if (m := re.match(r"built \S+ .*in ([\d.]+) s$", ln))]
    return {
        "setup_s": done[-1] if done else None,
        "setup_cached": any(ln.startswith("set-up cached:") for ln in lines),
        "images_built_s": sum(built),
    }


def _setup_env_flags(names: Sequence[str]) -> list[str]:
    return [flag for name in names for flag in ("--setup-env", name)]


def worker_commit(root: Path = ROOT) -> str:
    head = git("rev-parse", "--short", "HEAD", cwd=root)
    dirty = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=root).returncode != 0
    return head + ("+changes" if dirty else "")


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def sandbox_file(entry: Entry, work: Path, *, workaround: bool) -> Path:
    """Where the sandbox side is kept: with no flag, or with the entry's workaround."""
    return work / entry.name / ("sandbox-workaround.json" if workaround else "sandbox.json")


def row(entry: Entry, work: Path, *, workaround: bool) -> Row:
    """The table's line for `entry`, from what is on disk."""
    ref_data = read_json(work / entry.name / "reference.json")
    box_data = read_json(sandbox_file(entry, work, workaround=workaround))
    reference = Side.from_reference(ref_data) if ref_data else Side(problem="not run")
    if box_data is None:
        sandbox, seconds = Side(problem="not run"), None
    else:
        sandbox = Side.from_sandbox(box_data["summary"], error=box_data["error"])
        seconds = box_data["duration_s"]
    result = compare(reference, sandbox) if box_data else Comparison(equal=False, cause="not run")
    return Row(name=entry.name, packaging=entry.packaging, reference=reference,
               sandbox=sandbox, comparison=result, sandbox_s=seconds)  # fmt: skip


def selected(args: argparse.Namespace, entries: list[Entry]) -> list[Entry]:
    """The entries named (all when none), and ad hoc repositories given as a path or a URL."""
    if not args.repos:
        return entries
    by_name = {e.name: e for e in entries}
    chosen = []
    for repo in args.repos:
        if repo in by_name:
            chosen.append(by_name[repo])
            continue
        if not (args.install and args.test):
            raise SystemExit(f"{repo}: not in {args.list}; a path or URL needs --install, --test")
        source = resolve(repo, args.mirror)
        chosen.append(Entry(
            name=Path(repo.rstrip("/")).name.removesuffix(".git"), source=source,
            commit=args.commit or git("ls-remote", source, "HEAD").split()[0],
            install=tuple(args.install), test=args.test, packaging="(ad hoc)",
        ))  # fmt: skip
    return chosen


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def reference_side(entry: Entry, work: Path, *, args: argparse.Namespace, python: str) -> None:
    """Run the reference and cache it, keyed by what decides it (`python`: the interpreter's
    version, or for a node entry Node's, for a go entry the Go release the sandbox picks, for
    a java entry the host JDK's, for a rust entry the host's Rust)."""
    toolchain = {"node": "Node", "go": "Go", "java": "Java", "rust": "Rust"}.get(
        entry.ecosystem, "Python"
    )
    say(f"{entry.name}: reference ({toolchain} {python}, user {args.user or 'root'})")
    if entry.ecosystem == "go":
        result = run_go_reference(
            entry, work, user=as_user(args.user), timeout_s=args.timeout, checkout=checkout,
            owner=args.user, go=python, mirror=args.mirror,
        )  # fmt: skip
    elif entry.ecosystem in ("java", "rust"):
        run = run_java_reference if entry.ecosystem == "java" else run_rust_reference
        result = run(
            entry, work, user=as_user(args.user), timeout_s=args.timeout, checkout=checkout,
            owner=args.user,
        )  # fmt: skip
    elif entry.ecosystem == "node":
        result = run_node_reference(
            entry, work, user=as_user(args.user), timeout_s=args.timeout, checkout=checkout,
            owner=args.user,
        )  # fmt: skip
    else:
        result = run_reference(
            entry, work, python=args.python, user=args.user, timeout_s=args.timeout
        )
    result |= {
        "key": entry.key(python, args.user),
        toolchain.lower(): python,
        "user": args.user,
        "install": entry.install,
        "test": entry.test,
        "date": datetime.date.today().isoformat(),
    }
    write_json(work / entry.name / "reference.json", result)
    problem = f"; {result['problem']}" if result.get("problem") else ""
    say(f"  {Side.from_reference(result).describe()}{problem}")


def sandbox_side(
    entry: Entry, work: Path, *, workaround: bool, timeout_s: float, setup_env: Sequence[str] = (),
    mirror: Path, worker: Path = ROOT,
) -> None:  # fmt: skip
    """Run the sandbox side and keep its result (`setup_env`: host variables passed to set-up,
    what this machine needs of every repository, not a workaround of one)."""
    flags = (*(entry.workaround if workaround else ()), *_setup_env_flags(setup_env))
    say(f"{entry.name}: sandbox{' ' + ' '.join(flags) if flags else ''}")
    with go_proxy_env(entry, work, mirror) as env:  # a Go entry's modules, served meanwhile
        result = run_sandbox(entry, work, flags=flags, timeout_s=timeout_s, env=env, worker=worker)
    write_json(sandbox_file(entry, work, workaround=workaround), result)
    shown = Side.from_sandbox(result["summary"], error=result["error"])
    problem = f"; {shown.problem}" if shown.problem else ""
    say(f"  {shown.describe()} in {result['duration_s'] or 0:.0f}s{problem}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repos", nargs="*", help="names from the list, or paths / git URLs")
    parser.add_argument("--list", type=Path, default=HERE / "corpus.toml")
    parser.add_argument("--work", type=Path, default=Path("/work/corpus-data/runs"))
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument(
        "--python", default="/usr/bin/python3.11", help="the reference venv's Python (the image's)"
    )
    parser.add_argument(
        "--user", default="nobody", help="who runs the reference when this runs as root ('': root)"
    )
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds a step may take")
    side = parser.add_mutually_exclusive_group()
    side.add_argument("--sandbox-only", action="store_true", help="reuse the cached references")
    side.add_argument("--reference-only", action="store_true")
    side.add_argument("--report", action="store_true", help="print the table from the caches")
    parser.add_argument("--redo-reference", action="store_true", help="even when cached")
    parser.add_argument(
        "--with-workarounds",
        action="store_true",
        help="the sandbox side with each entry's workaround flags (only entries that have one)",
    )
    parser.add_argument(
        "--setup-env", action="append", metavar="NAME",
        help="a host variable passed to every sandbox set-up (run-tests --setup-env)",
    )  # fmt: skip
    parser.add_argument(
        "--worker", type=Path, default=ROOT,
        help="the checkout whose worker runs the sandbox side (default this one; another "
        "commit's worktree measures the before of a before/after)",
    )  # fmt: skip
    parser.add_argument("--install", action="append", help="an ad hoc repository's install")
    parser.add_argument("--test", help="an ad hoc repository's test command")
    parser.add_argument("--commit", help="an ad hoc repository's commit (default: HEAD)")
    args = parser.parse_args()
    args.mirror = args.mirror.resolve()
    work = args.work.resolve()
    entries = selected(args, load_list(args.list, args.mirror))
    if args.with_workarounds:
        entries = [e for e in entries if e.workaround]
    python = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    node = node_version() if any(e.ecosystem == "node" for e in entries) else ""
    java = java_version() if any(e.ecosystem == "java" for e in entries) else ""
    rust = rust_version() if any(e.ecosystem == "rust" for e in entries) else ""
    for entry in entries if not args.report else []:
        cached = read_json(work / entry.name / "reference.json")
        versions = {"node": node, "java": java, "python": python, "rust": rust}
        version = versions.get(entry.ecosystem) or go_for(entry.source, entry.commit)
        key = entry.key(version, args.user)
        if not args.sandbox_only and (args.redo_reference or (cached or {}).get("key") != key):
            reference_side(entry, work, args=args, python=version)
        if not args.reference_only:
            sandbox_side(entry, work, workaround=args.with_workarounds, timeout_s=args.timeout,
                         setup_env=args.setup_env or (), mirror=args.mirror,
                         worker=args.worker.resolve())  # fmt: skip
    text = table([row(e, work, workaround=args.with_workarounds) for e in entries])
    work.mkdir(parents=True, exist_ok=True)
    name = "table-workarounds.md" if args.with_workarounds else "table.md"
    if args.list.stem != "corpus":  # another list (corpus-node.toml) keeps its own table
        name = name.replace("table", f"table-{args.list.stem}")
    (work / name).write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
