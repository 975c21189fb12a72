"""Where the bug likely is in a Rust project: the lines of its own source files that the failing
tests' texts name (no run needed).

A Rust failure names its places itself: a panic's `panicked at src/lib.rs:42:9`, a backtrace's
`at ./src/lib.rs:42:9` (RUST_BACKTRACE=1, innermost frame first), a compiler error's
`--> src/lib.rs:10:5`. cargo runs rustc from the workspace's root, so the paths are the
repository's (a member's: `core/src/lib.rs`). The places in the project's own writable files
(not tests/, not a dependency's in CARGO_HOME, not the standard library's `/rustc/..`) are the
suspects, innermost first; a line of a `#[cfg(test)]` module or a `#[test]` function is the
test's own, not a suspect. A test whose assertion failed in the test itself names only the
test's line: the first message's definitions (grounding.py: what the test calls) show where to
look. A doc-test's own lines are not the file's: rustdoc compiles the example as a program of
its own (`rust_out`), so its panic's `src/lib.rs:9:1` counts lines of that program, not of the
file; those are dropped, and a doc-test names only the crate's frames its backtrace has.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from sandbox.ecosystems.base import FailedRun, Places
from sandbox.ecosystems.rust.source import definitions, parse_rust, test_modules
from sandbox.source.places import Place, no_code
from sandbox.testrun.junit import TestFailure
from sandbox.worktree.repo_files import RepoFiles

MAX_FAILURES = 50  # failing tests whose texts are read
#: `src/lib.rs:42:9` after `panicked at `, `at `, `--> ` or alone.
_FRAME = re.compile(r"(?<![\w/.-])(?:\./)?((?:[\w.-]+/)*[\w.-]+\.rs):(\d+)(?::(\d+))?")
#: A doc-test's id (`src/lib.rs::Type::method (line 684)`), and what in its text counts the
#: example's own lines: the panic's place, and a backtrace frame of rustdoc's `rust_out` crate.
_DOC_TEST = re.compile(r".+\.rs::.* \(line \d+\)")
_DOC_OWN = re.compile(
    r"panicked at (?:\./)?[\w./-]+\.rs:\d+(?::\d+)?|rust_out::[^\n]*\n\s*at [^\n]*"
)


def frames(text: str) -> Iterator[tuple[str, int]]:
    """Each `file.rs:line` of `text`, in order (the repository-relative ones: no `/rustc/`,
    no absolute path)."""
    for match in _FRAME.finditer(text):
        yield match.group(1), int(match.group(2))


def failure_places(
    failures: Sequence[TestFailure], *, workspace: Path, allowed: Callable[[str], bool]
) -> tuple[list[list[Place]], dict[str, list[str]]]:
    """For each failure, the lines of the project's own Rust files it names, innermost first,
    each once; files `allowed` refuses (tests/, manifests), blank lines, comments and lines
    past the file's end left out."""
    files = RepoFiles(workspace)
    texts_of: dict[str, list[str] | None] = {}
    tests_of: dict[str, list[tuple[int, int]]] = {}
    out: list[list[Place]] = []
    for failure in failures[:MAX_FAILURES]:
        depth = 0
        counted: set[tuple[str, int]] = set()
        places: list[Place] = []
        text = f"{failure.message}\n{failure.traceback}"
        if _DOC_TEST.fullmatch(failure.test_id):
            text = _DOC_OWN.sub("", text)
        for path, line in frames(text):
            if not allowed(path) or (path, line) in counted:
                continue
            if path not in texts_of:
                read = files.read(path)
                texts_of[path] = read.splitlines() if read is not None else None
                tests_of[path] = test_lines(path, read) if read is not None else []
            lines = texts_of[path]
            if lines is None or line > len(lines) or no_code(lines[line - 1]):
                continue
            if any(a <= line <= b for a, b in tests_of[path]):
                continue  # the test's own line (its assert!): not a suspect
            counted.add((path, line))
            places.append(Place(path, line, depth))
            depth += 1
        out.append(places)
    return out, {rel: lines for rel, lines in texts_of.items() if lines is not None}


def test_lines(path: str, text: str) -> list[tuple[int, int]]:
    """The lines of a file's `#[cfg(test)]` modules and `#[test]` functions."""
    src = parse_rust(path, text.encode())
    if src is None:
        return []
    spans = [(d.start, d.end) for d in definitions(src) if d.is_test]
    spans += [(n.start_point.row + 1, n.end_point.row + 1) for _, n in test_modules(src)]
    return spans


def read_places(run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]) -> Places:
    """The places a cargo run's failures name (the search ranks them)."""
    failures = run.summary.failures if run.summary is not None else ()
    places, lines = failure_places(failures, workspace=workspace, allowed=allowed)
    return Places(
        places,
        lines,
        source="cargo test failures (panics, backtraces, compiler errors)",
        why_empty="no failure names a line of the project's own source",
    )
