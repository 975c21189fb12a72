"""Run an eval's tasks, N at once, each as its own `worker fix` process, each patch re-checked.

Why processes and not threads: each task is then exactly the run a user gets from `worker fix`
(its exit code, report.json, trace, signals and clean-up, its own bundled model server), one
task's crash or hang cannot take the batch down, and the exit-code table stays in the command
line, which nothing below it may import.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.worktree.workspace import remove_dir
from worker.evaluate.outcome import TaskOutcome, read_outcome
from worker.evaluate.recheck import recheck
from worker.evaluate.tasks import EvalTask, materialize

#: Extra seconds a fix process gets beyond its own --timeout before the eval ends it.
KILL_GRACE_S = 300.0


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
class EvalSettings:
    """How to run the batch: where, how many at once, and the flags each `worker fix` gets."""

    out: Path
    workers: int = 1
    redo: bool = False
    fix_flags: tuple[str, ...] = ()
    fix_timeout_s: float | None = None
    budget: EvalBudget = field(default_factory=EvalBudget)


@dataclass(kw_only=True)
class BatchResult:
    """Every task's outcome (None: not run), and why the batch stopped early, if it did."""

    outcomes: dict[str, TaskOutcome | None]
    stopped: str | None = None
    ran: int = 0
    notes: list[str] = field(default_factory=list)  # lines for results.md (a cluster's story)


class EvalBatch:
    """One eval over a task list; `run()` returns when every task is done or the budget stops it."""

    def __init__(
        self,
        *,
        tasks: Sequence[EvalTask],
        settings: EvalSettings,
        say: Callable[[str], None],
        on_outcome: Callable[[BatchResult], None] = lambda _result: None,
    ) -> None:
        self._tasks = list(tasks)
        self._settings = settings
        self._say = say
        self._on_outcome = on_outcome
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._spent_tokens = 0
        self._spent_cost = 0.0
        self._started = time.monotonic()
        self._result = BatchResult(outcomes={})

    @property
    def result(self) -> BatchResult:
        """What is known so far (after `run()`, or after it was interrupted)."""
        return self._result

    def task_dir(self, task: EvalTask) -> Path:
        return self._settings.out / "tasks" / task.id

    def run(self) -> BatchResult:
        """Run what is not done yet; on Ctrl-C or SIGTERM the fix processes are ended too."""
        todo: queue.Queue[EvalTask] = queue.Queue()
        for task in self._tasks:
            done = None if self._settings.redo else read_outcome(self.task_dir(task))
            self._result.outcomes[task.id] = done
            if done is None:
                todo.put(task)
            else:
                line = f"{task.id}: done before ({describe_outcome(done)}); --redo runs it again"
                self._say(line)
        threads = [
            threading.Thread(target=self._drain, args=(todo,), name=f"eval-{n}", daemon=True)
            for n in range(max(1, min(self._settings.workers, todo.qsize())))
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)
        except BaseException:
            self._stop.set()
            self._end_children()
            for thread in threads:
                thread.join()
            raise
        return self._result

    def _drain(self, todo: queue.Queue[EvalTask]) -> None:
        while not self._stop.is_set():
            with self._lock:
                spent = self._settings.budget.exceeded(
                    tokens=self._spent_tokens,
                    cost_usd=self._spent_cost,
                    seconds=time.monotonic() - self._started,
                )
                if spent is not None:
                    if self._result.stopped is None:
                        self._result.stopped = spent
                        self._say(f"stopping: {spent}; no new task starts")
                    return
                try:
                    task = todo.get_nowait()
                except queue.Empty:
                    return
            try:
                outcome = self._run_task(task)
            except Exception as exc:  # noqa: BLE001 - one task's trouble is reported, not fatal
                outcome = _failed(task, exc)
            if outcome is None:  # interrupted
                return
            with self._lock:
                self._spent_tokens += outcome.tokens
                self._spent_cost += outcome.cost_usd or 0.0
                self._result.outcomes[task.id] = outcome
                self._result.ran += 1
                self._on_outcome(self._result)
            self._say(f"{task.id}: {describe_outcome(outcome)}")

    def _run_task(self, task: EvalTask) -> TaskOutcome | None:
        task_dir = self.task_dir(task)
        remove_dir(task_dir / "fix")
        remove_dir(task_dir / "recheck")
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "result.json").unlink(missing_ok=True)
        self._say(f"{task.id}: running")
        repo = materialize(task, into=self._settings.out / "repos" / task.id)
        started = time.monotonic()
        exit_code = self._fix(task, repo, task_dir)
        seconds = time.monotonic() - started
        if self._stop.is_set():
            return None
        outcome = outcome_from_report(task, task_dir / "fix", exit_code, seconds)
        started = time.monotonic()
        checked = recheck(task, repo, outcome.patch, work_dir=task_dir / "recheck")
        outcome.recheck_seconds = round(time.monotonic() - started, 3)
        outcome.resolved = checked.resolved
        outcome.recheck = checked.to_dict()
        outcome.write(task_dir)
        return outcome

    def _fix(self, task: EvalTask, repo: Path, task_dir: Path) -> int:
        """`worker fix` on the task, in its own process group; its exit code."""
        command = fix_command(task, repo, task_dir / "fix", self._settings.fix_flags)
        limit = self._settings.fix_timeout_s
        with (task_dir / "fix.log").open("wb") as log:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
            with self._lock:
                self._children[proc.pid] = proc
            try:
                return proc.wait(timeout=None if limit is None else limit + KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                return end_group(proc)
            finally:
                with self._lock:
                    self._children.pop(proc.pid, None)

    def _end_children(self) -> None:
        with self._lock:
            children = list(self._children.values())
        for proc in children:
            _signal_group(proc, signal.SIGTERM)
        for proc in children:
            _wait_or_kill(proc)


def fix_command(task: EvalTask, repo: Path, out: Path, fix_flags: Sequence[str]) -> list[str]:
    """The `worker fix` command line a task runs, locally or on a cluster node."""
    command = [sys.executable, "-m", "worker.cli", "fix", "--repo", str(repo)]
    command += ["--goal", task.goal, "--out", str(out), "--quiet"]
    if task.test_cmd:
        command += ["--test-cmd", task.test_cmd]
    if task.setup:
        command += ["--setup", task.setup]
    return command + list(fix_flags)


def outcome_from_report(task: EvalTask, out: Path, exit_code: int, seconds: float) -> TaskOutcome:
    """A task's outcome from its fix run's output folder (before the re-check)."""
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        report = {"status": "crashed", "reason": f"no report.json (exit {exit_code})"}
    patch_path = out / "fix.patch"
    return TaskOutcome(
        id=task.id,
        status=str(report.get("status", "crashed")),
        exit_code=exit_code,
        reason=str(report.get("reason", "")),
        model=report.get("model"),
        steps=int(report.get("steps") or 0),
        tokens_in=int(report.get("tokens_in") or 0),
        tokens_out=int(report.get("tokens_out") or 0),
        cost_usd=report.get("cost_usd"),
        seconds=round(seconds, 3),
        patch=patch_path.read_text(encoding="utf-8") if patch_path.is_file() else "",
    )


def _failed(task: EvalTask, exc: Exception) -> TaskOutcome:
    """A task the eval itself could not run or re-check (not marked done: a resume retries it)."""
    line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return TaskOutcome(id=task.id, status="eval_error", exit_code=-1, reason=line)


def describe_outcome(outcome: TaskOutcome) -> str:
    """One task's ending, for a progress line."""
    verdict = "RESOLVED" if outcome.resolved else "not resolved"
    return (
        f"{verdict} (fix: {outcome.status}, {outcome.steps} steps, {outcome.tokens} tokens, "
        f"{outcome.seconds:.0f} s)"
    )


def _signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signum)  # our own child leads its own group (start_new_session)
        except ProcessLookupError:
            pass


def end_group(proc: subprocess.Popen[bytes], grace_s: float = 60.0) -> int:
    """End a child that leads its own process group: SIGTERM to the group, SIGKILL after
    `grace_s`; its exit status."""
    _signal_group(proc, signal.SIGTERM)
    return _wait_or_kill(proc, grace_s)


def _wait_or_kill(proc: subprocess.Popen[bytes], grace_s: float = 60.0) -> int:
    try:
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.wait()
