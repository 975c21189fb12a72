"""`worker eval` on this machine: N tasks at once, each its own `worker fix` process
(fix_run.py), each patch re-checked; the books (books.py) say what is done and what is spent."""

from __future__ import annotations

import queue
import threading
import time

from sandbox.worktree.workspace import remove_dir
from worker.evaluate.books import Books, describe_outcome
from worker.evaluate.fix_run import FixProcesses
from worker.evaluate.outcome import BatchResult, outcome_from_report
from worker.evaluate.recheck import recheck
from worker.evaluate.tasks import EvalTask, materialize

#: How the ledger names the machine of a local run's attempts.
LOCAL_NODE = "local"


class EvalBatch:
    """One eval over a task list; `run()` returns when every task is done or the budget stops it."""

    def __init__(self, *, books: Books) -> None:
        self._books = books
        self._settings = books.settings
        self._processes = FixProcesses()
        self._stop = threading.Event()

    @property
    def result(self) -> BatchResult:
        """What is known so far (after `run()`, or after it was interrupted)."""
        return self._books.result

    def run(self) -> BatchResult:
        """Run what is not done yet; on Ctrl-C or SIGTERM the fix processes are ended too."""
        with self._books:
            todo: queue.Queue[EvalTask] = queue.Queue()
            for task in self._books.todo():
                todo.put(task)
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
                self._processes.end_all()
                for thread in threads:
                    thread.join()
                raise
        return self.result

    def _drain(self, todo: queue.Queue[EvalTask]) -> None:
        while not self._stop.is_set():
            if self._books.over_budget() is not None:
                return
            try:
                task = todo.get_nowait()
            except queue.Empty:
                return
            try:
                if not self._run_task(task):  # interrupted
                    return
            except Exception as exc:  # noqa: BLE001 - one task's trouble is reported, not fatal
                outcome = self._books.failed(task, _line(exc))
                self._books.say(f"{task.id}: {describe_outcome(outcome)}")

    def _run_task(self, task: EvalTask) -> bool:
        """One task run, re-checked and committed; False when the eval was interrupted."""
        task_dir = self._settings.task_dir(task.id)
        remove_dir(task_dir / "fix")
        remove_dir(task_dir / "recheck")
        task_dir.mkdir(parents=True, exist_ok=True)
        (task_dir / "result.json").unlink(missing_ok=True)
        self._books.say(f"{task.id}: running")
        repo = materialize(task, into=self._settings.out / "repos" / task.id)
        attempt, _number = self._books.start_attempt(task.id, node=LOCAL_NODE)
        ended = self._processes.run(
            task, repo, out=task_dir / "fix", log=task_dir / "fix.log", settings=self._settings.fix
        )
        if self._stop.is_set():
            return False
        outcome = outcome_from_report(task, task_dir / "fix", ended.exit_code, ended.seconds)
        started = time.monotonic()
        checked = recheck(task, repo, outcome.patch, work_dir=task_dir / "recheck")
        outcome.recheck_seconds = round(time.monotonic() - started, 3)
        outcome.resolved = checked.resolved
        outcome.recheck = checked.to_dict()
        self._books.spend(outcome)
        self._books.commit(task, attempt, outcome, place=lambda: None)
        return True


def _line(exc: Exception) -> str:
    """A task the eval itself could not run or re-check, in one line."""
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
