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
from dataclasses import dataclass
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.go.frames import frames, package_of
from sandbox.testrun.junit import TestFailure
from sandbox.testrun.run import TestRun
from sandbox.worktree.repo_files import RepoFiles
from worker.loop.go_source import GoSource, guard_line, parse_go
from worker.loop.trace import Trace
from worker.search.suspects import MAX_TEXT, Suspect, lines_around

MAX_FAILURES = 50  # failing tests whose texts are read


@dataclass
class _Seen:
    ef: int  # failing tests whose text names the line
    depth: int  # its least depth among them (0: the first place in the module's own code)
    order: int


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
    seen: dict[tuple[str, int], _Seen] = {}
    texts_of: dict[str, list[str] | None] = {}
    parsed: dict[str, GoSource | None] = {}
    for failure in failures[:MAX_FAILURES]:
        depth = 0
        text = f"{failure.message}\n{failure.traceback}"
        counted: set[tuple[str, int]] = set()
        for frame in frames(text, folder=package_of(failure.test_id), workspace=workspace):
            if frame.path.endswith("_test.go") or not allowed(frame.path):
                continue
            if frame.path not in texts_of:
                read = files.read(frame.path)
                texts_of[frame.path] = read.splitlines() if read is not None else None
            lines = texts_of[frame.path]
            if lines is None or frame.line > len(lines) or _no_code(lines[frame.line - 1]):
                continue
            guard = _guard(frame.path, lines, frame.line, parsed)
            for line in ([guard] if guard is not None else []) + [frame.line]:
                key = (frame.path, line)
                if key in counted:
                    continue
                counted.add(key)
                if key in seen:
                    seen[key].ef += 1
                    seen[key].depth = min(seen[key].depth, depth)
                else:
                    seen[key] = _Seen(ef=1, depth=depth, order=len(seen))
            depth += 1
    total = max(failed or len(failures), 1)
    ranked = sorted(seen.items(), key=lambda kv: (-kv[1].ef, kv[1].depth, kv[1].order))
    out = []
    for (path, line), tally in ranked[:limit]:
        lines = texts_of[path] or []
        out.append(
            Suspect(
                path,
                line,
                lines[line - 1].strip()[:MAX_TEXT],
                tally.ef / total,
                tally.ef,
                0,
                around=lines_around(lines, line),
                from_stack=True,
            )
        )
    return out


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
    trace.event(
        "suspects",
        duration_s=round(time.monotonic() - started, 3),
        failed=len(failures),
        passed=baseline.summary.passed,
        why_empty="" if suspects else "no failure names a line of the module's own source",
        source="go test failures",
        lines=[{"where": s.where(), "text": s.text, "ef": s.ef, "ep": None} for s in suspects],
    )
    return suspects


def _guard(rel: str, lines: list[str], line: int, parsed: dict[str, GoSource | None]) -> int | None:
    if not lines[line - 1].lstrip().startswith("panic("):
        return None
    if rel not in parsed:
        parsed[rel] = parse_go(rel, "\n".join(lines).encode())
    src = parsed[rel]
    return guard_line(src, line) if src is not None else None


def _no_code(line: str) -> bool:
    text = line.strip()
    return not text or text.startswith(("//", "/*", "*"))
