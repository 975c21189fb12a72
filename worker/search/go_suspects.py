"""Where the bug likely is on a Go module: the lines of its own source files that the failing
tests' texts name (worker/search/js_suspects.py does the same for JavaScript; these need no run
at all).

A Go failure names its places itself (sandbox/ecosystems/go/frames.py): a panic's stack
(innermost call first), a compiler error's `file:line:col`, a test's own `t.Errorf` line. The
places in the module's own files (not a `_test.go`, not a dependency's, writable) are the
suspects, as the same `Suspect`: scored by how many failing tests name the line (ef / F), and
among equals the innermost first. A `panic(..)` is the error's line, not often its cause: the
condition of the `if` around it comes first. A test whose assertion failed in the test itself
names no such line: the first message's definitions (worker/loop/go_grounding.py: what the
test calls) show where to look.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.go.frames import frames, package_of
from sandbox.ecosystems.go.modules import find_modules
from sandbox.testrun.junit import TestFailure
from sandbox.testrun.run import TestRun
from sandbox.worktree.repo_files import RepoFiles
from worker.loop.go_source import GoSource, guard_line, parse_go
from worker.loop.trace import Trace
from worker.search.frame_tally import LineTally, no_code, trace_suspects
from worker.search.suspects import Suspect

MAX_FAILURES = 50  # failing tests whose texts are read


def rank_go(
    failures: Sequence[TestFailure],
    *,
    workspace: Path,
    allowed: Callable[[str], bool],
    failed: int | None = None,
    limit: int = 12,
) -> list[Suspect]:
    """The lines of the module's own Go source files the failures name, most failures first,
    then the innermost; lines of `_test.go` files, of files `allowed` refuses, and lines that
    are blank, comments or past the file's end are left out."""
    files = RepoFiles(workspace)
    tally = LineTally()
    texts_of: dict[str, list[str] | None] = {}
    parsed: dict[str, GoSource | None] = {}
    modules = find_modules(workspace)
    for failure in failures[:MAX_FAILURES]:
        depth = 0
        text = f"{failure.message}\n{failure.traceback}"
        counted: set[tuple[str, int]] = set()
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
                    tally.add(frame.path, line, depth)
            depth += 1
    return tally.ranked(texts_of, failed=failed or len(failures), limit=limit)


def locate_in_go_failures(
    baseline: TestRun, *, workspace: Path, paths: PathPolicy, trace: Trace
) -> list[Suspect]:
    """The suspect lines of a Go run (a `suspects` trace event, as worker/search/locate.py
    writes for Python); none when the baseline names no failing test or no failure names a
    line of the module's own source."""
    if baseline.summary is None or not baseline.summary.failures:
        return []
    started = time.monotonic()
    failures = baseline.summary.failures
    suspects = rank_go(
        failures,
        workspace=workspace,
        allowed=lambda rel: paths.check(rel, write=True).allowed,
        failed=len(failures),
    )
    return trace_suspects(
        trace,
        suspects,
        started=started,
        failed=len(failures),
        passed=baseline.summary.passed,
        why_empty="no failure names a line of the module's own source",
        source="go test failures",
    )


def _guard(rel: str, lines: list[str], line: int, parsed: dict[str, GoSource | None]) -> int | None:
    if not lines[line - 1].lstrip().startswith("panic("):
        return None
    if rel not in parsed:
        parsed[rel] = parse_go(rel, "\n".join(lines).encode())
    src = parsed[rel]
    return guard_line(src, line) if src is not None else None
