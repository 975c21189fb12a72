"""One `cargo test` run read into the `TestSummary` the verdict reads (docs/rust-tests.md).

The run's folder (a fresh /tmp path per run, command.py) is packed into the report as a tar:

- `cargo.json`: cargo's standard output with `--message-format=json`: which executable is
  which target (`compiler-artifact`), each compiler error and its target with its rendered
  text (`compiler-message`; `json-render-diagnostics` would print those to standard error as
  text instead, and a library that does not compile would read as no test at all); and,
  between those lines, rustdoc's own output of the doc-tests;
- per test binary, what RUNNER left: `b.XXXXXX.bin` (the executable cargo started),
  `.log` (libtest's `--logfile`: one `ok NAME` / `failed NAME` / `ignored NAME` line per test,
  written by the harness as each test ends, never by the tests' output), `.out` (its standard
  output and error: the failure texts, never an outcome) and `.rc` (its exit status);
- per package's doc-tests, what RUSTDOC left: `d.XXXXXX.log` (rustdoc's own harness's).
  Since edition 2024 rustdoc runs the doc-tests merged into one binary, through RUNNER too:
  a binary that is no artifact of cargo's is rustdoc's, its log not read, its output only
  the doc-tests' failure texts.

Test ids: a unit test of a library, `<crate>::<path>` (`demo::tests::adds`: the crate's name,
which in a workspace is its package's); of any other target (an integration test, a binary, an
example), the target's file from the repository's root and the test's path
(`tests/it.rs::adds`, `core/tests/it.rs::adds`, `src/main.rs::tests::parses`); a doc-test, its
file from the workspace's root and its item and line (`src/lib.rs::add (line 3)`).

A test is an outcome only where libtest's log says so. A test binary that ended early
(`std::process::exit(0)` in a test, an abort) leaves the tests it had not finished out of its
log: none of them passes. A binary that failed with no failing test in its log (a crash, a
non-zero exit outside any test) is one "error" for its target, and none of its passes is
trusted (each is "error"), as Go's package that did not finish. A target that does not compile
is one "error", id its target's, with the compiler's rendered message (its `--> file:line:col`
spans read by places.py); the verdict counts every test under it an error.
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
from dataclasses import dataclass, field
from typing import Any

from sandbox.testrun.junit import MAX_TESTCASES, TestFailure, TestSummary

OUTPUT_LINES = 40  # of a failing test's output, kept
LINE_CHARS = 300
MAX_MEMBER_BYTES = 20_000_000
OUT_BYTES = 400_000  # of a test binary's output, kept by the runner (its end)

#: The test runner cargo starts each test binary with (`target.<host>.runner`): `$1` is the
#: binary, the rest its arguments; a log file of its own in the run's folder, then its output
#: said on standard error (cargo's standard output is the JSON).
RUNNER = f"""\
#!/bin/sh
# worker: cargo's test runner (sandbox/ecosystems/rust/report.py)
d=$(dirname "$0")
n=$(mktemp "$d/b.XXXXXX") || exit 90
bin=$1; shift
printf '%s\\n' "$bin" > "$n.bin"
"$bin" "$@" --logfile "$n.log" > "$n.full" 2>&1
rc=$?
printf '%s\\n' "$rc" > "$n.rc"
cat "$n.full" >&2
tail -c {OUT_BYTES} "$n.full" > "$n.out"; rm -f "$n.full"
exit $rc
"""
#: rustdoc as cargo calls it: a doc-test run (`--test`) gets a log file of its own.
RUSTDOC = """\
#!/bin/sh
# worker: rustdoc for cargo (sandbox/ecosystems/rust/report.py)
for a in "$@"; do
  if [ "$a" = "--test" ]; then
    d=$(dirname "$0")
    n=$(mktemp "$d/d.XXXXXX") || exit 90
    exec rustdoc "$@" --test-args "--logfile=$n.log"
  fi
done
exec rustdoc "$@"
"""


@dataclass(frozen=True)
class Target:
    """A cargo target as its artifact names it."""

    kind: str  # "lib", "bin", "test", "example", "bench"
    name: str  # the crate's name
    src: str  # its file from the repository's root

    @property
    def id(self) -> str:
        return self.name if self.kind == "lib" else self.src


@dataclass
class _Run:
    executables: dict[str, Target] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)  # target id -> messages
    doc_output: list[str] = field(default_factory=list)


def parse_cargo_report(data: bytes, *, root: str) -> TestSummary:
    """The tar the run packed (module docstring); `root` is the repository's path in the
    sandbox (the targets' files are named from it). ValueError when it is not one."""
    try:
        tar = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    except tarfile.TarError as exc:
        raise ValueError(f"not a cargo test report: {exc}") from exc
    files: dict[str, bytes] = {}
    with tar:
        for member in tar:
            if not member.isfile() or member.size > MAX_MEMBER_BYTES:
                continue
            got = tar.extractfile(member)
            if got is not None:
                files[posixpath.basename(member.name)] = got.read()
    if "cargo.json" not in files:
        raise ValueError("not a cargo test report: no cargo.json in it")
    run = _read_cargo(files["cargo.json"], root)
    outcomes: dict[str, str] = {}
    failures: list[TestFailure] = []
    for name in sorted(files):
        if name.startswith("b.") and name.endswith(".bin"):
            _binary(name[:-4], files, run, root, outcomes, failures)
        elif name.startswith("d.") and name.endswith(".log"):
            _doctests(name[:-4], files, run, outcomes, failures)
        if len(outcomes) > MAX_TESTCASES:
            raise ValueError(f"the report names over {MAX_TESTCASES} tests")
    for target_id, messages in run.errors.items():
        outcomes[target_id] = "error"
        first = messages[0].splitlines()[0] if messages[0] else "does not compile"
        failures.append(
            TestFailure(
                test_id=target_id,
                kind="error",
                message=f"{target_id} does not compile: {first}",
                traceback="\n".join(_trim("\n".join(messages).splitlines())),
            )
        )
    counts = {k: sum(v == k for v in outcomes.values()) for k in ("passed", "failed", "error")}
    return TestSummary(
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["error"],
        skipped=sum(v == "skipped" for v in outcomes.values()),
        failures=tuple(failures),
        outcomes=outcomes,
    )


def _rel(path: str, root: str) -> str:
    root = root.rstrip("/")
    if path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return path


def _read_cargo(data: bytes, root: str) -> _Run:
    run = _Run()
    for raw in data.splitlines():
        line = raw.decode("utf-8", "replace")
        if not line.startswith("{"):
            run.doc_output.append(line[:LINE_CHARS])
            continue
        try:
            message = json.loads(line)
        except ValueError:
            run.doc_output.append(line[:LINE_CHARS])
            continue
        if not isinstance(message, dict):
            continue
        target = _target(message.get("target"), root)
        if target is None:
            continue
        reason = message.get("reason")
        if reason == "compiler-artifact" and isinstance(message.get("executable"), str):
            run.executables[message["executable"]] = target
        elif reason == "compiler-message":
            diagnostic = message.get("message") or {}
            if isinstance(diagnostic, dict) and diagnostic.get("level") == "error":
                rendered = str(diagnostic.get("rendered") or diagnostic.get("message") or "")
                if not rendered.startswith("aborting due to"):
                    run.errors.setdefault(target.id, []).append(rendered.strip())
    return run


def _target(raw: Any, root: str) -> Target | None:
    if not isinstance(raw, dict):
        return None
    kinds = raw.get("kind") or []
    name, src = raw.get("name"), raw.get("src_path")
    if not isinstance(name, str) or not isinstance(src, str) or not kinds:
        return None
    kind = str(kinds[0])
    if kind in ("rlib", "dylib", "cdylib", "staticlib", "proc-macro"):
        kind = "lib"
    return Target(kind=kind, name=name.replace("-", "_"), src=_rel(src, root))


def _binary(
    stem: str,
    files: dict[str, bytes],
    run: _Run,
    root: str,
    outcomes: dict[str, str],
    failures: list[TestFailure],
) -> None:
    executable = files[f"{stem}.bin"].decode("utf-8", "replace").strip()
    output = files.get(f"{stem}.out", b"").decode("utf-8", "replace")
    target = run.executables.get(executable)
    if target is None:  # not cargo's: rustdoc's merged doc-tests (their log is rustdoc's)
        run.doc_output += [line[:LINE_CHARS] for line in output.splitlines()]
        return
    rc_text = files.get(f"{stem}.rc", b"").decode().strip()
    rc = int(rc_text) if rc_text.lstrip("-").isdigit() else None
    log = files.get(f"{stem}.log")
    if log is None:  # no libtest harness (`harness = false`): the binary's exit status
        outcome = "passed" if rc == 0 else "failed"
        outcomes[target.id] = outcome
        if outcome == "failed":
            failures.append(_failure(target.id, output.splitlines(), kind="failure"))
        return
    mine: dict[str, str] = {}
    for line in log.decode("utf-8", "replace").splitlines():
        parsed = _log_line(line)
        if parsed is None:
            continue
        outcome, name = parsed
        if mine.get(name) != "failed":  # a test that ever failed failed
            mine[name] = outcome
    aborted = rc != 0 and "failed" not in mine.values()
    sections = _sections(output)
    for name, outcome in mine.items():
        if aborted and outcome == "passed":
            outcome = "error"
        test_id = f"{target.id}::{name}"
        outcomes[test_id] = outcome
        if outcome == "failed":
            failures.append(_failure(test_id, sections.get(name, [])))
    if aborted:
        outcomes[target.id] = "error"
        failures.append(
            TestFailure(
                test_id=target.id,
                kind="error",
                message=f"the tests of {target.src} did not finish (its test binary exited "
                f"with {rc} outside any test); none of its results is trusted",
                traceback="\n".join(_trim(output.splitlines())),
            )
        )


def _log_line(line: str) -> tuple[str, str] | None:
    """libtest's log line: `ok NAME`, `failed NAME`, `failed: MESSAGE NAME`, `ignored NAME`,
    `ignored: MESSAGE NAME`; a unit test's name has no space, so it is the last word."""
    head, _, rest = line.partition(" ")
    if not rest:
        return None
    if head == "ok":
        return "passed", rest.strip()
    if head.startswith("failed"):
        return "failed", rest.split()[-1] if head.endswith(":") or "(" in rest else rest.strip()
    if head.startswith("ignored"):
        return "skipped", rest.split()[-1] if head.endswith(":") else rest.strip()
    return None


def _doctests(
    stem: str,
    files: dict[str, bytes],
    run: _Run,
    outcomes: dict[str, str],
    failures: list[TestFailure],
) -> None:
    # rustdoc runs where cargo does, the workspace's root: its names are the repository's
    # (`core/src/lib.rs - add (line 3)`), whichever package's doc-tests these are.
    sections = _sections("\n".join(run.doc_output))
    for line in files.get(f"{stem}.log", b"").decode("utf-8", "replace").splitlines():
        head, _, name = line.partition(" ")
        outcome = {"ok": "passed", "failed": "failed", "ignored": "skipped"}.get(head)
        if outcome is None or " - " not in name:
            continue
        file, _, item = name.partition(" - ")
        test_id = f"{file.removeprefix('./')}::{item}"
        if outcomes.get(test_id) == "failed":
            continue
        outcomes[test_id] = outcome
        if outcome == "failed":
            failures.append(_failure(test_id, sections.get(name, [])))


def _sections(output: str) -> dict[str, list[str]]:
    """libtest's `---- NAME stdout ----` sections of a failing test's output, by NAME (text
    only: never an outcome)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if line.startswith("---- ") and line.endswith(" ----"):
            name = line[5:-5].rsplit(" ", 1)[0]
            current = out.setdefault(name, [])
            continue
        if line in ("failures:", "successes:"):  # libtest's list of names after the sections
            current = None
            continue
        if current is not None and len(current) < 4 * OUTPUT_LINES:
            current.append(line[:LINE_CHARS].rstrip())
    return out


def _failure(test_id: str, lines: list[str], *, kind: str = "failure") -> TestFailure:
    said = [line.strip() for line in lines if line.strip()]
    message = next(
        (s for s in said if "panicked at" in s),
        said[0] if said else "failed",
    )
    index = said.index(message) if message in said else -1
    if "panicked at" in message and index + 1 < len(said):
        message = f"{message} {said[index + 1]}"
    return TestFailure(
        test_id=test_id, kind=kind, message=message, traceback="\n".join(_trim(lines))
    )


def _trim(lines: list[str]) -> list[str]:
    if len(lines) <= OUTPUT_LINES:
        return lines
    half = OUTPUT_LINES // 2
    return [*lines[:half], "[... cut ...]", *lines[-half:]]
