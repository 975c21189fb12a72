"""What a step of the loop hands back: how the run ended (a verified fix), what the next model
call is asked, and a line of progress for people."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.testrun.run import TestRun
from tools.base import Observation
from worker.llm.types import PLAIN, CallSettings
from worker.loop.verify import Verification


@dataclass(frozen=True, kw_only=True)
class LoopResult:
    """How the loop ended well: a fix, verified (every other ending is raised:
    worker/loop/endings.py)."""

    reason: str
    verification: Verification  # passed

    @property
    def patch(self) -> str:
        return self.verification.patch


@dataclass(frozen=True)
class Turn:
    """After a step: the run's ending (a verified fix), or the next model call's settings (a
    nudge's warmer call that may not repeat the tool; the first edit the opening asks for)."""

    done: LoopResult | None = None
    then: CallSettings = PLAIN


@dataclass(frozen=True, kw_only=True)
class StepInfo:
    """One line of progress: what the model did in a step and how it went."""

    step: int
    tool: str
    target: str
    outcome: str
    tokens: int
    elapsed_s: float


def outcome(observation: Observation, tests: TestRun | None) -> str:
    """How a tool call went, in a few words: refused, an error, the tests after a patch."""
    if observation.refusals:
        return "refused: " + observation.refusals[0].rule
    if not observation.ok:
        return "error: " + (observation.text.splitlines() or [""])[0][:70]
    if tests is not None:
        only = f" (only the {len(tests.test_ids)} failing at the start)" if tests.test_ids else ""
        return "patched; " + tests.headline() + only
    return (observation.text.splitlines() or ["ok"])[0][:70]


def failing(tests: TestRun | None, among: Sequence[str] = ()) -> float:
    """Failing tests of a run (TestRun.failing); no run yet counts as worst, as no report does."""
    return float("inf") if tests is None else tests.failing(among)


def compared(after: TestRun | None, before: TestRun | None) -> tuple[float, float]:
    """The failing tests of two runs, counted over the same tests: where one ran only some tests
    by id (worker/loop/failing_first.py), over those; else as `failing` counts them.

    A whole suite's run and a run of its failing tests by id compare on those tests alone, so
    that failures elsewhere, which only one of them could see, count for neither."""
    ids = (after.test_ids if after is not None else ()) or (
        before.test_ids if before is not None else ()
    )
    return failing(after, ids), failing(before, ids)
