"""One task's `worker fix`, as both schedulers run it: its own process in its own process group,
its output in one folder, its stdout and stderr in one log, ended (group and all) when its time
is up or its scheduler is interrupted.

Why a process and not a call: each task is then exactly the run a user gets from `worker fix`
(its exit code, report.json, trace, signals and clean-up, its own bundled model server), one
task's crash or hang cannot take the batch down, and the exit-code table stays in the command
line, which nothing below it may import.
"""

from __future__ import annotations

import ctypes
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from worker.evaluate.books import FixSettings
from worker.evaluate.tasks import EvalTask

#: Extra seconds a fix process gets beyond its own --timeout before the eval ends it.
KILL_GRACE_S = 300.0
_PR_SET_PDEATHSIG = 1


@dataclass(frozen=True, kw_only=True)
class FixExit:
    """How a fix process ended: its exit status, and its wall-clock seconds."""

    exit_code: int
    seconds: float


def fix_command(task: EvalTask, repo: Path, out: Path, fix_flags: Sequence[str]) -> list[str]:
    """The `worker fix` command line a task runs, locally or on a cluster node."""
    command = [sys.executable, "-m", "worker.cli", "fix", "--repo", str(repo)]
    command += ["--goal", task.goal, "--out", str(out), "--quiet"]
    if task.test_cmd:
        command += ["--test-cmd", task.test_cmd]
    if task.setup:
        command += ["--setup", task.setup]
    return command + list(fix_flags)


class FixProcesses:
    """The fix processes one scheduler has running, so that an interrupt ends them all."""

    def __init__(self, *, die_with_parent: bool = False) -> None:
        self._die_with_parent = die_with_parent  # on a node: dies with the Ray worker too
        self._lock = threading.Lock()
        self._running: dict[int, subprocess.Popen[bytes]] = {}

    def run(
        self,
        task: EvalTask,
        repo: Path,
        *,
        out: Path,
        log: Path,
        settings: FixSettings,
        env: Mapping[str, str] | None = None,
    ) -> FixExit:
        """`worker fix` on the task's tree `repo`, writing `out` and `log`; waits for its end."""
        command = fix_command(task, repo, out, settings.flags)
        limit = None if settings.timeout_s is None else settings.timeout_s + KILL_GRACE_S
        started = time.monotonic()
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                env=None if env is None else dict(env), start_new_session=True,
                preexec_fn=_die_with_parent if self._die_with_parent else None,
            )  # fmt: skip
            with self._lock:
                self._running[proc.pid] = proc
            try:
                # Always with a timeout: Popen.wait then polls, and a Ray cancel's
                # KeyboardInterrupt, raised into this thread, lands within 50 ms. With none it
                # blocks in waitpid, and the cancel waits for the whole run to end.
                exit_code = proc.wait(timeout=math.inf if limit is None else limit)
            except subprocess.TimeoutExpired:
                exit_code = end_group(proc)
            except BaseException:  # a cancelled Ray task (KeyboardInterrupt): the run ends too
                end_group(proc)
                raise
            finally:
                with self._lock:
                    self._running.pop(proc.pid, None)
        return FixExit(exit_code=exit_code, seconds=round(time.monotonic() - started, 3))

    def end_all(self) -> None:
        """SIGTERM to every running fix's group, then wait (SIGKILL after a grace)."""
        with self._lock:
            children = list(self._running.values())
        for proc in children:
            _signal_group(proc, signal.SIGTERM)
        for proc in children:
            _wait_or_kill(proc)


def end_group(proc: subprocess.Popen[bytes], grace_s: float = 60.0) -> int:
    """End a child that leads its own process group: SIGTERM to the group, SIGKILL after
    `grace_s`; its exit status."""
    _signal_group(proc, signal.SIGTERM)
    return _wait_or_kill(proc, grace_s)


def _signal_group(proc: subprocess.Popen[bytes], signum: int) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signum)  # our own child leads its own group (start_new_session)
        except ProcessLookupError:
            pass


def _wait_or_kill(proc: subprocess.Popen[bytes], grace_s: float = 60.0) -> int:
    try:
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        return proc.wait()


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the process that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)
