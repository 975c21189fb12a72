"""Where the bug likely is: one traced run of the failing tests' files, their lines ranked
(worker/search/suspects.py). The lines point the search's samples; with no samples, the first
message names them."""

from __future__ import annotations

import time
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.container.base import Sandbox
from sandbox.ecosystems.python.lines_run import count_lines
from sandbox.testrun.run import TestRun
from worker.loop.trace import Trace
from worker.search.suspects import Suspect, rank

LOCATE_TIMEOUT_S = 120.0  # the traced run of the failing tests' files, at most


def locate_timeout(test_timeout_s: float | None) -> float:
    """The traced run's limit: the test command's own, at most LOCATE_TIMEOUT_S."""
    return min(test_timeout_s or LOCATE_TIMEOUT_S, LOCATE_TIMEOUT_S)


def locate(
    box: Sandbox,
    baseline: TestRun,
    *,
    workspace: Path,
    paths: PathPolicy,
    timeout_s: float,
    trace: Trace,
) -> list[Suspect]:
    """The lines the failing tests run, most suspicious first (a `suspects` trace event); none
    when the baseline names no failing test."""
    if baseline.summary is None or not baseline.summary.failures:
        return []
    started = time.monotonic()
    files = [f.test_id.split("::")[0] for f in baseline.summary.failures]
    counts = count_lines(box, test_cmd=baseline.test_cmd, test_files=files, timeout_s=timeout_s)
    suspects = rank(
        counts, workspace=workspace, allowed=lambda rel: paths.check(rel, write=True).allowed
    )
    trace.event(
        "suspects",
        duration_s=round(time.monotonic() - started, 3),
        failed=counts.failed,
        passed=counts.passed,
        why_empty=counts.why_empty,
        lines=[{"where": s.where(), "text": s.text, "ef": s.ef, "ep": s.ep} for s in suspects],
    )
    return suspects
