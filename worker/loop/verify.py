"""The harness's check of a fix: the patch alone, re-run on a clean copy, judged against the
baseline by the same rules as every run (sandbox/testrun/verdict.py). Only this makes a run
"fixed"."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sandbox.testrun.run import TestRun
from sandbox.testrun.verdict import Verdict, judge
from worker.loop.interfaces import Environment
from worker.loop.trace import Trace
from worker.loop.turns import LoopResult


@dataclass(frozen=True)
class Checked:
    """The clean re-run, its verdict, and the fix when the verdict passed."""

    run: TestRun
    verdict: Verdict
    fix: LoopResult | None


def fixes(tests: TestRun | None, baseline: TestRun | None) -> bool:
    """The sandbox's own run (whole suite) says fixed, by the same rules as the re-run; a run of
    some tests by id never does (worker/loop/failing_first.py)."""
    return tests is not None and not tests.test_ids and judge(tests, baseline=baseline).passed


def clean_check(
    env: Environment,
    trace: Trace,
    *,
    baseline: TestRun | None,
    patch: str,
    tests_after: TestRun | None,
) -> Checked:
    started = time.monotonic()
    verified = env.verify(patch)
    verdict = judge(verified, baseline=baseline, patch=patch)
    trace.event(
        "verification", passed=verdict.passed, rule=verdict.rule, reasons=list(verdict.reasons),
        tests=verified.headline(), duration_s=round(time.monotonic() - started, 3),
    )  # fmt: skip
    if not verdict.passed:
        return Checked(verified, verdict, None)
    fix = LoopResult(
        fixed=True,
        reason=f"tests pass, verified on a clean copy ({verdict.describe()})",
        patch=patch,
        tests_after=tests_after,
        verification=verified,
        verdict=verdict,
    )
    return Checked(verified, verdict, fix)
