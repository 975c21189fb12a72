"""Where the bug likely is: the lines the failing tests point at, as the run's language reads
them (sandbox/ecosystems/base.py), ranked. A language whose failures name their places (a stack,
a compiler error: JavaScript, Go) needs no run (frame_tally.py ranks them); one that traces a
run of the failing tests' files (Python) gives per-line counts, ranked by suspects.py. The lines
point the search's samples; with no samples, the first message names them."""

from __future__ import annotations

import time
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.container.base import Sandbox
from sandbox.ecosystems.base import Ecosystem
from sandbox.testrun.run import TestRun
from worker.loop.trace import Trace
from worker.search.frame_tally import rank_places, trace_suspects
from worker.search.suspects import Suspect, rank

LOCATE_TIMEOUT_S = 120.0  # the traced run of the failing tests' files, at most


def locate_timeout(test_timeout_s: float | None) -> float:
    """The traced run's limit: the test command's own, at most LOCATE_TIMEOUT_S."""
    return min(test_timeout_s or LOCATE_TIMEOUT_S, LOCATE_TIMEOUT_S)


def locate(
    ecosystem: Ecosystem,
    box: Sandbox,
    baseline: TestRun,
    *,
    workspace: Path,
    paths: PathPolicy,
    timeout_s: float,
    trace: Trace,
) -> list[Suspect]:
    """The lines the failing tests point at, most suspicious first (a `suspects` trace event);
    none when the baseline names no failing test."""
    if baseline.summary is None or not baseline.summary.failures:
        return []
    started = time.monotonic()

    def allowed(rel: str) -> bool:
        return paths.check(rel, write=True).allowed

    failed = len(baseline.summary.failures)
    places = ecosystem.failure_places(baseline, workspace=workspace, allowed=allowed)
    if places is not None:
        return trace_suspects(
            trace,
            rank_places(places.places, lines=places.lines, failed=failed),
            started=started,
            failed=failed,
            passed=baseline.summary.passed,
            why_empty=places.why_empty,
            source=places.source,
        )
    counts = ecosystem.line_counts(box, baseline, timeout_s=timeout_s)
    suspects = rank(counts, workspace=workspace, allowed=allowed)
    trace.event(
        "suspects",
        duration_s=round(time.monotonic() - started, 3),
        failed=counts.failed,
        passed=counts.passed,
        why_empty=counts.why_empty,
        lines=[{"where": s.where(), "text": s.text, "ef": s.ef, "ep": s.ep} for s in suspects],
    )
    return suspects
