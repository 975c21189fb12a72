"""Verify: the harness's check of a fix, the patch alone re-run on a clean copy and judged
against the baseline by the same rules as every run (sandbox/testrun/verdict.py). Only a passed
`Verification` makes a run "fixed"; it is made once, here, and carried to the report.

One name per act: the working copy's own run may *say fixed* (`says_fixed`), which only earns
it a verification; *verify* is the clean re-check alone (`Environment.verify` runs it, started
early by `Environment.verify_ahead`); the eval's independent *recheck* of a finished run's
patch is worker/evaluate/recheck.py.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from sandbox.testrun.run import TestRun
from sandbox.testrun.verdict import Verdict, judge
from worker.loop import prompts
from worker.loop.interfaces import Environment
from worker.loop.trace import Trace


@dataclass(frozen=True, kw_only=True)
class Verification:
    """One clean re-check: the patch it was made on, the clean copy's run, its verdict."""

    patch: str
    run: TestRun
    verdict: Verdict  # `run` judged against the baseline, `patch` checked for tampering

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    @property
    def reason(self) -> str:
        """A passed one's reason, as the run's ending says it."""
        return f"tests pass, verified on a clean copy ({self.verdict.describe()})"

    def told(self) -> str:
        """What the model is told of a failed one."""
        tests = self.run.render()
        return prompts.VERIFY_FAILED.format(verdict=self.verdict.describe(), tests=tests)


def says_fixed(tests: TestRun | None, baseline: TestRun | None) -> bool:
    """The sandbox's own run (whole suite) says fixed, by the same rules as a verification; a
    run of some tests by id never does (worker/loop/failing_first.py)."""
    return tests is not None and not tests.test_ids and judge(tests, baseline=baseline).passed


def verify(env: Environment, trace: Trace, *, baseline: TestRun | None, patch: str) -> Verification:
    """Re-run `patch` on a clean copy and judge it; the trace's `verification` event says how."""
    started = time.monotonic()
    run = env.verify(patch)
    verdict = judge(run, baseline=baseline, patch=patch)
    trace.event(
        "verification", passed=verdict.passed, rule=verdict.rule, reasons=list(verdict.reasons),
        tests=run.headline(), duration_s=round(time.monotonic() - started, 3),
    )  # fmt: skip
    return Verification(patch=patch, run=run, verdict=verdict)
