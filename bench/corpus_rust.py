"""The reference side of bench/corpus.py for a Rust crate (`ecosystem = "rust"` in a list): a
fresh clone, the host's own Rust (the toolchain folder of rustup's default, its `bin` first in
PATH: no rustup proxy, so a `rust-toolchain.toml` changes nothing), a CARGO_HOME and a target
folder of the entry's own, the list's `install` (`cargo fetch`, from crates.io), then its `test`
(`cargo test --no-fail-fast`, CI's flags) offline, as a developer runs it: no runner, no
wrapper, no JSON. Its output is read here, independently of the sandbox's reader
(sandbox/ecosystems/rust/report.py reads libtest's log files), into the same ids:

- `Running unittests src/lib.rs (target/debug/deps/demo-HASH)`: a library's unit tests,
  `demo::tests::adds` (the crate's name); any other target (`Running tests/it.rs (...)`,
  `Running unittests src/main.rs (...)`), its file from the repository's root, its
  executable found in `cargo test --no-run --message-format=json` run after (the same build):
  `tests/it.rs::adds`, `core/tests/it.rs::adds`;
- `Doc-tests demo`, then `test src/lib.rs - add (line 3) ... ok`: `src/lib.rs::add (line 3)`;
- `test NAME ... ok|FAILED|ignored` (libtest's ` - should panic`, ` - compile fail`,
  ` - compile` after the name cut off: its log names the test without them), until the
  `failures:` the failing tests' output follows (what a test prints is never an outcome);
- a test binary whose section never reached `test result:` (a crash, an exit inside a test),
  or that cargo says failed with no test failing, is one "error" for its target and none of
  its passes is trusted; a `harness = false` target is its exit status alone; a target that
  does not compile (`could not compile `demo` (test "it")`) one "error", id its target's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from node_host import SYSTEM_PATH, run_installs, run_shell

# The host's cargo and rustup settings would make a run no CI has.
DROPPED_ENV = ("CARGO", "RUST")  # RUST_BACKTRACE too: CI sets none
LIB_KINDS = ("lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro")

_RUNNING = re.compile(r"^\s*Running (unittests )?(\S.*?) \((.+)\)$")
_DOC = re.compile(r"^\s*Doc-tests (\S+)$")
_TEST = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored)(?:, .*)?$")
_MODE = re.compile(r" - (?:should panic|compile fail|compile)$")
_NOT_COMPILED = re.compile(r"^error: could not compile `([^`]+)` \(([^)]*)\)")
_RERUN = re.compile(r"^error: test failed, to rerun pass `([^`]*)`")
_OUTCOME = {"ok": "passed", "FAILED": "failed", "ignored": "skipped"}


def host_toolchain() -> Path:
    """The `bin` folder of the host's default rustup toolchain."""
    done = subprocess.run(["rustup", "which", "rustc"], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip()).resolve().parent


def rust_version() -> str:
    """The host's Rust release (the reference's toolchain, as node_version names Node's)."""
    rustc = host_toolchain() / "rustc"
    done = subprocess.run([str(rustc), "--version"], capture_output=True, text=True, check=True)
    return done.stdout.split()[1]


@dataclass(frozen=True)
class _Target:
    name: str  # as the compiler names the crate: `-` made `_`
    kind: str
    src: str  # from the repository's root


def targets(metadata: dict[str, Any], root: Path) -> list[_Target]:
    """Every target of the workspace's packages, as `cargo metadata --no-deps` lists them."""
    found = []
    for package in metadata.get("packages", []):
        for target in package.get("targets", []):
            found.append(_Target(
                name=target["name"].replace("-", "_"), kind=target["kind"][0],
                src=os.path.relpath(target["src_path"], root),
            ))  # fmt: skip
    return found


def executables(messages: str, root: Path) -> dict[str, _Target]:
    """Each test executable's target by its file's name, from `cargo test --no-run
    --message-format=json` (the same build: `Running` names the executable, and two packages'
    `tests/it.rs` both show as `tests/it.rs`)."""
    found = {}
    for line in messages.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("executable"):
            target = message["target"]
            found[Path(message["executable"]).name] = _Target(
                name=target["name"].replace("-", "_"), kind=target["kind"][0],
                src=os.path.relpath(target["src_path"], root),
            )  # fmt: skip
    return found


def _target_id(shown: str, executable: str, unit: bool, by_file: dict[str, _Target]) -> str:
    """The id of the target `Running [unittests ]SHOWN (EXECUTABLE)` names."""
    target = by_file.get(Path(executable).name)
    if target is not None:
        return target.name if target.kind in LIB_KINDS else target.src
    crate = Path(executable).name.rsplit("-", 1)[0]
    return crate if unit and shown.endswith("lib.rs") else shown


@dataclass
class _Section:
    target: str
    started: bool = False  # `running N tests`: a libtest harness
    finished: bool = False  # `test result:`
    said: bool = False  # `failures:`: the tests' own output follows, never an outcome
    failed_run: bool = False  # cargo: `error: test failed, to rerun pass ...`
    outcomes: dict[str, str] = field(default_factory=dict)


def parse_cargo_output(
    text: str, known: list[_Target], by_file: dict[str, _Target]
) -> dict[str, str]:
    """Outcome by test id of `cargo test`'s plain output (the module docstring); `known`, the
    workspace's targets, `by_file` the test executables' (`executables`)."""
    outcomes: dict[str, str] = {}
    sections: list[_Section] = []
    doc_tests = False
    for raw in text.splitlines():
        line = raw.rstrip()
        if match := _RUNNING.match(line):
            sections.append(_Section(_target_id(match[2], match[3], bool(match[1]), by_file)))
            doc_tests = False
        elif _DOC.match(line):
            sections.append(_Section("(doc-tests)"))
            doc_tests = True
        elif not sections:
            if match := _NOT_COMPILED.match(line):
                outcomes[_failed_target(match[1], match[2], known)] = "error"
            continue
        elif line.startswith("running ") and line.endswith(("tests", "test")):
            sections[-1].started = True
        elif line.startswith("test result: "):
            sections[-1].finished = True
        elif line in ("failures:", "successes:"):
            sections[-1].said = True
        elif (match := _TEST.match(line)) and sections[-1].started and not sections[-1].said:
            name = _MODE.sub("", match[1].strip())
            if doc_tests and " - " in name:
                file, _, item = name.partition(" - ")
                test_id = f"{file.removeprefix('./')}::{item}"
            else:
                test_id = f"{sections[-1].target}::{name}"
            if sections[-1].outcomes.get(test_id) != "failed":
                sections[-1].outcomes[test_id] = _OUTCOME[match[2]]
        elif _RERUN.match(line):
            sections[-1].failed_run = True
        elif match := _NOT_COMPILED.match(line):
            outcomes[_failed_target(match[1], match[2], known)] = "error"
    for section in sections:
        if section.target == "(doc-tests)":
            outcomes.update(section.outcomes)
        elif not section.started:  # `harness = false`: its exit status
            outcomes[section.target] = "failed" if section.failed_run else "passed"
        elif not section.finished or (
            section.failed_run and "failed" not in section.outcomes.values()
        ):
            outcomes.update({t: "error" if o == "passed" else o
                             for t, o in section.outcomes.items()})  # fmt: skip
            outcomes[section.target] = "error"
        else:
            outcomes.update(section.outcomes)
    return outcomes


def _failed_target(package: str, what: str, known: list[_Target]) -> str:
    """The id of the target `could not compile `PACKAGE` (WHAT)` names: `lib test`,
    `test "it"`, `bin "demo" test`, `example "x"`."""
    quoted = re.search(r'"([^"]+)"', what)
    if quoted is None:
        return package.replace("-", "_")
    name, kind = quoted[1].replace("-", "_"), what.split()[0]
    for target in known:
        if target.name == name and target.kind == kind:
            return target.src
    return name


def run_rust_reference(
    entry: Any, work: Path, *, user: Sequence[str], timeout_s: float,
    checkout: Callable[[Any, Path], None], owner: str,
) -> dict[str, Any]:  # fmt: skip
    """`entry`'s install and test (a corpus.Entry) with the host's Rust in WORK/NAME/ref, as
    `user` (a prefix; `owner` owns the folder then); the result as reference.json holds it."""
    where = work / entry.name
    clone, log_path, output = where / "ref", where / "reference.log", where / "test-output.txt"
    result: dict[str, Any] = {"name": entry.name, "commit": entry.commit, "counts": None}
    try:
        checkout(entry, clone)
    except RuntimeError as exc:
        return result | {"problem": f"checkout failed: {exc}"}
    subprocess.run(["rm", "-rf", str(where / "cargo-home"), str(where / "target")], check=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
    env = {
        **base,
        "HOME": str(where / "home"),
        "PATH": f"{host_toolchain()}:{SYSTEM_PATH}",
        "CARGO_HOME": str(where / "cargo-home"),
        "CARGO_TARGET_DIR": str(where / "target"),
        "CARGO_TERM_COLOR": "never",
        "CARGO_INCREMENTAL": "0",  # as the sandbox's image (docs/rust-tests.md)
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
    offline = env | {"CARGO_NET_OFFLINE": "true"}
    with output.open("w", encoding="utf-8") as log:
        started = time.monotonic()
        code = run_shell(entry.test, cwd=clone, env=offline, log=log, timeout_s=timeout_s,
                         user=user)  # fmt: skip
    result |= {"test_s": round(time.monotonic() - started, 1), "exit_code": code}
    metadata = subprocess.run(
        [*user, "cargo", "metadata", "--no-deps", "--format-version", "1"],
        cwd=clone, env=offline, capture_output=True, text=True,
    )  # fmt: skip
    known = targets(json.loads(metadata.stdout), clone) if metadata.returncode == 0 else []
    built = subprocess.run(
        [*user, "bash", "-c", f"{entry.test} --no-run --message-format=json"],
        cwd=clone, env=offline, capture_output=True, text=True,
    )  # fmt: skip
    by_file = executables(built.stdout, clone)
    text = output.read_text(encoding="utf-8", errors="replace")
    outcomes = parse_cargo_output(text, known, by_file)
    if not outcomes:
        return result | {"problem": f"no test in the output (exit {code})"}
    counts = {k: sum(v == k for v in outcomes.values()) for k in ("passed", "failed", "skipped")}
    counts["errors"] = sum(v == "error" for v in outcomes.values())
    return result | {
        "counts": counts,
        "failing": sorted(t for t, o in outcomes.items() if o in ("failed", "error")),
        "outcomes": outcomes,
    }
