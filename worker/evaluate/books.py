"""One eval's bookkeeping, the same for the local scheduler (batch.py) and the cluster one
(cluster.py): the settings as one value, the budget and what this invocation spent against it,
and the ledger as the one record of which task is done.

A task is done when the ledger holds a `result` line for it, whichever scheduler wrote it: a
local run resumes a Ray run's finished tasks and the other way round. Its `result.json` is
written too (the task's folder, for the readers of an eval), but no longer decides anything; an
--out from before the ledger was kept by local runs has its `result.json` files taken into the
ledger once, when its first line is written.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from worker.evaluate.ledger import Ledger, LedgerState, new_attempt_id, new_eval_id
from worker.evaluate.outcome import BatchResult, TaskOutcome, read_outcome
from worker.evaluate.results import write_results
from worker.evaluate.tasks import EvalTask

#: The attempt a `result.json` of a pre-ledger local run is recorded under when taken in.
ADOPTED = "adopted"


@dataclass(frozen=True, kw_only=True)
class EvalBudget:
    """Limits on the whole batch, on what this invocation spends: once one is reached no new
    task starts; the tasks under way finish."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None

    def exceeded(self, *, tokens: int, cost_usd: float, seconds: float) -> str | None:
        """Which limit is reached, in words, or None."""
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return f"the eval's token budget is spent ({tokens} >= {self.max_tokens})"
        if self.max_cost_usd is not None and cost_usd >= self.max_cost_usd:
            return f"the eval's cost budget is spent (${cost_usd:.4f} >= ${self.max_cost_usd})"
        if self.max_seconds is not None and seconds >= self.max_seconds:
            return f"the eval's time budget is spent ({seconds:.0f} s >= {self.max_seconds:.0f} s)"
        return None


@dataclass(frozen=True, kw_only=True)
class FixSettings:
    """What each task's `worker fix` gets: its flags, passed on as given (it is a process of its
    own), and the two settings the eval itself acts on, as values."""

    flags: tuple[str, ...] = ()
    timeout_s: float | None = None  # the fix's own --timeout; the eval ends it a grace later
    model: str | None = None  # the fix's --model; "local" on a cluster: one server per node

    @property
    def bundled(self) -> bool:
        """Do the fix runs use the bundled model (`--model local`)?"""
        return self.model == "local"


@dataclass(frozen=True, kw_only=True)
class EvalSettings:
    """How to run the batch: where, how many at once, each task's `worker fix`, the budget."""

    out: Path
    workers: int = 1
    redo: bool = False
    fix: FixSettings = field(default_factory=FixSettings)
    budget: EvalBudget = field(default_factory=EvalBudget)

    def task_dir(self, task_id: str) -> Path:
        return self.out / "tasks" / task_id


class Books:
    """The books of one eval over one --out, open for the length of a scheduler's `run()`
    (`with`); a second driver on the same --out, local or cluster, is refused. Thread-safe."""

    def __init__(
        self,
        *,
        tasks: Sequence[EvalTask],
        settings: EvalSettings,
        say: Callable[[str], None],
    ) -> None:
        self._tasks = list(tasks)
        self._settings = settings
        self._say = say
        self._lock = threading.RLock()
        self._ledger = Ledger(out=settings.out)
        self._numbers: dict[str, int] = {}
        self._tokens = 0
        self._cost = 0.0
        self._started = time.monotonic()
        self.eval_id = ""
        self.result = BatchResult(outcomes={t.id: None for t in tasks})
        self.duplicates: list[tuple[str, str]] = []  # (task, attempt) of results kept apart

    @property
    def settings(self) -> EvalSettings:
        return self._settings

    def say(self, line: str) -> None:
        """One progress line."""
        self._say(line)

    def __enter__(self) -> Books:
        self._ledger.__enter__()
        try:
            self._open(self._ledger.read())
        except BaseException:
            self._ledger.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._ledger.__exit__(kind, exc, tb)

    def _open(self, state: LedgerState) -> None:
        self._started = time.monotonic()
        self.eval_id = state.eval_id or new_eval_id()
        if state.eval_id is None:
            self._ledger.append({"event": "eval", "eval": self.eval_id})
            self._adopt(state)
        if self._settings.redo and state.results:
            self._ledger.append({"event": "redo"})
            state = LedgerState(eval_id=self.eval_id, attempts=state.attempts)
        self._numbers = dict(state.attempts)
        self.duplicates = list(state.duplicates)
        for task in self._tasks:
            done = state.results.get(task.id)
            self.result.outcomes[task.id] = done
            if done is not None:
                line = f"{task.id}: done before ({describe_outcome(done)}); --redo runs it again"
                self._say(line)

    def _adopt(self, state: LedgerState) -> None:
        """A new ledger in an --out a local run filled before local runs kept one: its finished
        tasks' `result.json` become result lines, so that they stay done."""
        for task in self._tasks:
            outcome = read_outcome(self._settings.task_dir(task.id))
            if outcome is not None:
                self._append_result(task.id, ADOPTED, outcome)
                state.results[task.id] = outcome
                state.result_attempts[task.id] = ADOPTED

    def todo(self) -> list[EvalTask]:
        """The tasks with no result yet, in the task file's order."""
        with self._lock:
            return [t for t in self._tasks if self.result.outcomes.get(t.id) is None]

    def is_done(self, task_id: str) -> bool:
        with self._lock:
            return self.result.outcomes.get(task_id) is not None

    # -- attempts and what they spent -------------------------------------------------------------

    def start_attempt(self, task_id: str, *, node: str) -> tuple[str, int]:
        """A new attempt of a task, on the record before it starts: its id and number."""
        with self._lock:
            number = self._numbers.get(task_id, 0) + 1
            self._numbers[task_id] = number
            attempt = new_attempt_id(number)
            self._ledger.append(
                {"event": "attempt", "task": task_id, "attempt": attempt, "n": number,
                 "node": node}
            )  # fmt: skip
            return attempt, number

    def ended(self, event: str, task_id: str, attempt: str, **why: str) -> None:
        """An attempt that came to no result (`lost`, `cancelled`): on the record, so that a
        resumed driver runs the task again."""
        with self._lock:
            self._ledger.append({"event": event, "task": task_id, "attempt": attempt, **why})

    def spend(self, outcome: TaskOutcome) -> None:
        """Count what one fix run spent (a lost attempt's spend counts too)."""
        with self._lock:
            self._tokens += outcome.tokens
            self._cost += outcome.cost_usd or 0.0

    def over_budget(self) -> str | None:
        """Why no new task may start (a limit reached, or the eval stopped), or None. The
        first time a limit is reached it is said, and the eval is stopped."""
        with self._lock:
            if self.result.stopped is not None:
                return self.result.stopped
            spent = self._settings.budget.exceeded(
                tokens=self._tokens,
                cost_usd=self._cost,
                seconds=time.monotonic() - self._started,
            )
            if spent is not None:
                self.stop(spent)
            return spent

    def stop(self, why: str) -> None:
        """No new task starts; the first reason is the one on record."""
        with self._lock:
            if self.result.stopped is None:
                self.result.stopped = why
                self._say(f"stopping: {why}; no new task starts")

    # -- endings ----------------------------------------------------------------------------------

    def commit(
        self, task: EvalTask, attempt: str, outcome: TaskOutcome, *, place: Callable[[], None]
    ) -> bool:
        """The first complete result of a task is its result: `place()` puts the attempt's files
        into the task's folder, then the ledger line and `result.json` make it done. A later
        result is recorded as a duplicate, kept apart and not counted: False."""
        with self._lock:
            if self.result.outcomes.get(task.id) is not None:
                self._append_result(task.id, attempt, outcome)
                self.duplicates.append((task.id, attempt))
                return False
            place()
            self._append_result(task.id, attempt, outcome)
            task_dir = self._settings.task_dir(task.id)
            task_dir.mkdir(parents=True, exist_ok=True)
            outcome.write(task_dir)
            self._count(outcome)
            self._say(f"{task.id}: {describe_outcome(outcome)}")
            return True

    def failed(
        self, task: EvalTask, why: str, *, attempts: Sequence[dict[str, Any]] = ()
    ) -> TaskOutcome:
        """The eval itself could not run or re-check a task: counted as run, with status
        eval_error, but not in the ledger: a resume runs it again."""
        outcome = TaskOutcome(id=task.id, status="eval_error", exit_code=-1, reason=why)
        outcome.attempts = list(attempts)
        with self._lock:
            self._count(outcome)
        return outcome

    def publish(self) -> None:
        """The results files written again from what is known now."""
        with self._lock:
            write_results(self._settings.out, self._tasks, self.result)

    def _count(self, outcome: TaskOutcome) -> None:
        self.result.outcomes[outcome.id] = outcome
        self.result.ran += 1
        write_results(self._settings.out, self._tasks, self.result)

    def _append_result(self, task_id: str, attempt: str, outcome: TaskOutcome) -> None:
        self._ledger.append(
            {"event": "result", "task": task_id, "attempt": attempt, "outcome": outcome.to_dict()}
        )


def describe_outcome(outcome: TaskOutcome) -> str:
    """One task's ending, for a progress line."""
    verdict = "RESOLVED" if outcome.resolved else "not resolved"
    return (
        f"{verdict} (fix: {outcome.status}, {outcome.steps} steps, {outcome.tokens} tokens, "
        f"{outcome.seconds:.0f} s)"
    )
