"""Where the bug likely is on a Go module: the lines of its own source files that the failing
tests' texts name (sandbox/ecosystems/node/places.py does the same for JavaScript; these need no run
at all).

A Go failure names its places itself (sandbox/ecosystems/go/frames.py): a panic's stack
(innermost call first), a compiler error's `file:line:col`, a test's own `t.Errorf` line. The
places in the module's own files (not a `_test.go`, not a dependency's, writable) are the
suspects, as the same `Suspect`: scored by how many failing tests name the line (ef / F), and
among equals the innermost first. A `panic(..)` is the error's line, not often its cause: the
condition of the `if` around it comes first. A test whose assertion failed in the test itself
names no such line: the first message's definitions (sandbox/ecosystems/go/grounding.py: what the
test calls) show where to look.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from sandbox.ecosystems.base import FailedRun, Places
from sandbox.ecosystems.go.frames import frames, package_of
from sandbox.ecosystems.go.modules import find_modules
from sandbox.ecosystems.go.source import GoSource, guard_line, parse_go
from sandbox.source.places import Place, no_code
from sandbox.testrun.junit import TestFailure
from sandbox.worktree.repo_files import RepoFiles

MAX_FAILURES = 50  # failing tests whose texts are read


def failure_places(
    failures: Sequence[TestFailure], *, workspace: Path, allowed: Callable[[str], bool]
) -> tuple[list[list[Place]], dict[str, list[str]]]:
    """For each failure, the lines of the module's own Go source files it names, innermost
    first, each once; lines of `_test.go` files, of files `allowed` refuses, and lines that are
    blank, comments or past the file's end are left out."""
    files = RepoFiles(workspace)
    texts_of: dict[str, list[str] | None] = {}
    parsed: dict[str, GoSource | None] = {}
    modules = find_modules(workspace)
    out: list[list[Place]] = []
    for failure in failures[:MAX_FAILURES]:
        depth = 0
        text = f"{failure.message}\n{failure.traceback}"
        counted: set[tuple[str, int]] = set()
        places: list[Place] = []
        folder = package_of(failure.test_id)
        root = modules.module_root(folder)
        for frame in frames(text, folder=folder, workspace=workspace, module_root=root):
            if frame.path.endswith("_test.go") or not allowed(frame.path):
                continue
            if frame.path not in texts_of:
                read = files.read(frame.path)
                texts_of[frame.path] = read.splitlines() if read is not None else None
            lines = texts_of[frame.path]
            if lines is None or frame.line > len(lines) or no_code(lines[frame.line - 1]):
                continue
            guard = _guard(frame.path, lines, frame.line, parsed)
            for line in ([guard] if guard is not None else []) + [frame.line]:
                if (frame.path, line) not in counted:
                    counted.add((frame.path, line))
                    places.append(Place(frame.path, line, depth))
            depth += 1
        out.append(places)
    return out, {rel: lines for rel, lines in texts_of.items() if lines is not None}


def read_places(run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]) -> Places:
    """The places a Go run's failures name (the search ranks them)."""
    failures = run.summary.failures if run.summary is not None else []
    places, lines = failure_places(failures, workspace=workspace, allowed=allowed)
    return Places(
        places,
        lines,
        source="go test failures",
        why_empty="no failure names a line of the module's own source",
    )


def _guard(rel: str, lines: list[str], line: int, parsed: dict[str, GoSource | None]) -> int | None:
    if not lines[line - 1].lstrip().startswith("panic("):
        return None
    if rel not in parsed:
        parsed[rel] = parse_go(rel, "\n".join(lines).encode())
    src = parsed[rel]
    return guard_line(src, line) if src is not None else None
