"""Run sandbox commands as host processes, for machines without Docker: weaker isolation.

Same interface as `DockerSandbox` (`with LocalSandbox(...) as box`, `box.run`, `box.stage`), but a
command is a plain child process of the worker. What it does get: a minimal environment (nothing
of the host's, no API key), a private HOME and TMPDIR, no stdin, rlimits (address space, CPU time
as a backstop, file size, no core files; process count only when not root), a time limit that
kills the whole process tree, and nothing left running after a command ends. What it does not
get: network isolation, filesystem isolation (the command can read and write whatever the
worker's user can; as root, that is the whole machine), a memory limit across processes (the
address-space limit is per process), a size cap on its temporary files, or reliable OOM reports.
"""

from __future__ import annotations

import math
import os
import re
import resource
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from policies.limits import Limits
from sandbox.container.base import SandboxBase
from sandbox.container.capture import read_capture_file
from sandbox.container.output import OutputCapture
from sandbox.container.results import CommandResult
from sandbox.errors import SandboxError

LOCAL_SANDBOX_WARNING = (
    "warning: the local sandbox runs commands as host processes with only rlimits and "
    "process-tree kills: no network or filesystem isolation. Whatever the repository's code or "
    "the model's commands do, they do to this machine as this user. Use Docker for untrusted code."
)
# Marks every process a sandbox starts, so one that left both the process group and the tree
# (double fork + setsid between two scans) is still found and killed. Only a process that also
# scrubs its environment escapes; that is one of the ways this backend is weaker.
MARKER_VAR = "WORKER_LOCAL_SANDBOX"
FILE_SIZE_MAX = 1024**3  # RLIMIT_FSIZE: a runaway writer stops at 1 GiB per file
SCAN_INTERVAL_S = 0.1  # how often the process tree is collected while a command runs
DRAIN_S = 2.0  # after the command ends or is killed, how long to wait for its output to close
# Running out of address space under RLIMIT_AS is a failed allocation, not a kill: one of these on
# the output's last line, with a non-zero exit, is the best sign of it we have.
OOM_SIGNS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc")
_SHELL_SAFE = re.compile(r"[\w@%+=:,./-]+")


class LocalSandbox(SandboxBase):
    """Commands run with /bin/sh in `workspace` on the host; see the module docstring for limits.

    `/tmp/...` capture files: TMPDIR points at a private directory, and a `capture_file` under
    `/tmp/` is rewritten, in the command too, to the same name in that directory, so
    `run_tests`'s `--junitxml=/tmp/...` works as in the container. Other literal `/tmp` paths
    in commands are the host's `/tmp`.
    """

    isolation_label = "local (weaker: no network/filesystem isolation)"

    def __init__(
        self,
        *,
        workspace: Path,
        control_dir: Path,
        limits: Limits,
        output_bytes: int = 16_000,
        log_dir: Path | None = None,
    ) -> None:
        super().__init__(
            workspace=workspace,
            control_dir=control_dir,
            limits=limits,
            output_bytes=output_bytes,
            log_dir=log_dir,
        )
        self._home = control_dir / ".local-home"
        self._tmp = control_dir / ".local-tmp"
        self._token = secrets.token_hex(8)
        self._started = False

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> LocalSandbox:
        self.start()
        return self

    def start(self) -> None:
        """Make the control directory and the private HOME and TMPDIR."""
        for path in (self.control_dir, self._home, self._tmp):
            path.mkdir(parents=True, exist_ok=True)
        self._started = True

    def close(self) -> None:
        """Kill anything a command left running; remove the private HOME and TMPDIR."""
        self._started = False
        _kill(_marked_processes(self._token))
        shutil.rmtree(self._home, ignore_errors=True)
        shutil.rmtree(self._tmp, ignore_errors=True)

    # -- use: what SandboxBase.run and .stage need of host processes ----------------------

    def _running(self) -> bool:
        return self._started

    def _staged_path(self, safe_name: str) -> str:
        return str(self.control_dir / safe_name)  # a host path: commands could write it

    def _execute(
        self,
        command: str,
        *,
        limit: float,
        capture: OutputCapture,
        capture_file: str | None,
        env: dict[str, str],
        log_path: Path | None,
    ) -> CommandResult:
        shell_command, capture_path = self._map_capture(command, capture_file)
        started = time.monotonic()
        returncode, timed_out = self._spawn(shell_command, limit, capture, env)
        duration = time.monotonic() - started
        exit_code = 128 - returncode if returncode < 0 else returncode
        output = capture.text()
        captured, capture_error = (
            read_capture_file(capture_path, name=capture_file or str(capture_path))
            if capture_path
            else (None, "")
        )
        return CommandResult(
            command=command,
            exit_code=exit_code,
            duration_s=duration,
            timed_out=timed_out,
            oom_killed=exit_code != 0 and not timed_out and _looks_oom(output),
            output=output,
            output_bytes=capture.total,
            truncated=capture.truncated,
            log_path=log_path,
            captured=captured,
            capture_error=capture_error,
        )

    # -- internals ---------------------------------------------------------------------------

    def _map_capture(self, command: str, capture_file: str | None) -> tuple[str, Path | None]:
        if not capture_file:
            return command, None
        if not capture_file.startswith("/tmp/"):
            path = Path(capture_file)
            return command, path if path.is_absolute() else self.workspace / path
        mapped = self._tmp / capture_file[len("/tmp/") :]
        text = str(mapped)
        word = text if _SHELL_SAFE.fullmatch(text) else shlex.quote(text)
        return command.replace(capture_file, word), mapped

    def _own_environment(self) -> dict[str, str]:
        # The worker's own interpreter first: `python` must mean one that works without the
        # host's HOME (pyenv shims, for one, look for their root under HOME).
        path = os.environ.get("PATH", os.defpath)
        here = os.path.dirname(sys.executable)
        if here and here not in path.split(os.pathsep):
            path = here + os.pathsep + path
        return {
            "PATH": path,
            "HOME": str(self._home),
            "TMPDIR": str(self._tmp),
            MARKER_VAR: self._token,
        }

    def _spawn(
        self, command: str, limit: float, capture: OutputCapture, env: dict[str, str]
    ) -> tuple[int, bool]:
        """Run to the end or the limit; feed output to `capture`; (returncode, timed out)."""
        read_fd, write_fd = os.pipe()
        try:
            child = subprocess.Popen(
                ["/bin/sh", "-c", command],
                cwd=self.workspace,
                env={**env, **self._own_environment()},
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                start_new_session=True,
                # Safe after fork even with threads running: it only calls setrlimit.
                preexec_fn=_rlimits(self.limits, limit),
            )
        except OSError as exc:
            os.close(read_fd)
            raise SandboxError(f"cannot start a command: {exc}") from exc
        finally:
            os.close(write_fd)
        tree = _ProcessTree(child.pid, token=self._token)
        deadline = time.monotonic() + limit
        timed_out = False
        ended_at: float | None = None  # when the shell exited or everything was killed
        eof = False
        next_scan = 0.0
        try:
            while True:
                now = time.monotonic()
                if ended_at is None:
                    if now >= next_scan:
                        next_scan = now + SCAN_INTERVAL_S
                        if tree.scan() > self.limits.pids:
                            capture.feed(
                                b"\n[worker: killed: more than %d processes]\n"
                                % (self.limits.pids,)
                            )
                            ended_at = now
                    if ended_at is None and now >= deadline:
                        timed_out = True
                        ended_at = now
                    elif ended_at is None and child.poll() is not None:
                        ended_at = now  # whatever it left running (holding the pipe) goes too
                    if ended_at is not None:
                        tree.kill()
                if ended_at is not None and (eof or now - ended_at >= DRAIN_S):
                    break
                wait = (
                    SCAN_INTERVAL_S
                    if ended_at is not None
                    else min(SCAN_INTERVAL_S, deadline - now)
                )
                if eof:
                    try:
                        child.wait(timeout=max(wait, 0.0))
                    except subprocess.TimeoutExpired:
                        pass
                    continue
                ready, _, _ = select.select([read_fd], [], [], max(wait, 0.0))
                if ready:
                    data = os.read(read_fd, 65536)
                    if data:
                        capture.feed(data)
                    else:
                        eof = True
        finally:
            os.close(read_fd)
            tree.kill()  # on every path, an exception or Ctrl-C in this loop included
            returncode = child.wait()
        return returncode, timed_out


class _ProcessTree:
    """Every process a command started: its group, its descendants seen so far, its marker."""

    def __init__(self, pid: int, *, token: str) -> None:
        self._pgid = pid
        self._token = token
        self._seen: dict[int, psutil.Process] = {}
        try:
            self._root: psutil.Process | None = psutil.Process(pid)
        except psutil.NoSuchProcess:
            self._root = None

    def scan(self) -> int:
        """Collect descendants now (one that called setsid leaves the group, not the tree)."""
        if self._root is None:
            return 0
        try:
            children = self._root.children(recursive=True)
        except psutil.NoSuchProcess:
            return 0
        for proc in children:
            self._seen.setdefault(proc.pid, proc)
        return len(children)

    def kill(self) -> None:
        """SIGKILL the group, every descendant seen, every marked process; wait until gone."""
        self.scan()
        try:
            os.killpg(self._pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        procs = {**self._seen, **{p.pid: p for p in _marked_processes(self._token)}}
        _kill(list(procs.values()))


def _marked_processes(token: str) -> list[psutil.Process]:
    """Processes of this user whose environment carries this sandbox's marker."""
    uid = os.getuid()
    marker = f"{MARKER_VAR}={token}".encode()
    found = []
    me = os.getpid()
    for pid in psutil.pids():
        if pid == me:
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid != uid:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker not in f.read().split(b"\0"):
                    continue
            found.append(psutil.Process(pid))
        except (OSError, psutil.Error):
            continue
    return found


def _kill(procs: list[psutil.Process]) -> None:
    for proc in procs:
        try:
            proc.kill()  # psutil refuses a pid that was reused by another process
        except psutil.Error:
            pass
    # Not psutil.wait_procs: an orphan's zombie counts as running until its new parent reaps it.
    deadline = time.monotonic() + 2.0
    while procs and time.monotonic() < deadline:
        procs = [p for p in procs if _alive(p)]
        if procs:
            time.sleep(0.01)


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _looks_oom(output: str) -> bool:
    lines = output.rstrip().splitlines()
    return bool(lines) and any(sign in lines[-1] for sign in OOM_SIGNS)


def _rlimits(limits: Limits, limit_s: float) -> Callable[[], None]:
    """The child's rlimits, computed here so the forked child only calls setrlimit."""
    memory = limits.memory_mb * 1024 * 1024
    # A backstop for when the worker dies and cannot kill at the limit: CPU time can exceed wall
    # time only by the number of cores, so this never fires before the wall-clock limit.
    cpu = math.ceil(limit_s * (os.cpu_count() or 1)) + 5
    settings = [
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_FSIZE, FILE_SIZE_MAX),
        (resource.RLIMIT_CORE, 0),
    ]
    if os.geteuid() != 0:
        # RLIMIT_NPROC counts every task of the user, not of the command, and root ignores it;
        # as root the polled count of descendants (limits.pids) is the only process limit.
        settings.append((resource.RLIMIT_NPROC, _user_tasks() + limits.pids))
    fixed = [(which, _capped(which, value)) for which, value in settings]

    def apply() -> None:
        for which, value in fixed:
            resource.setrlimit(which, value)

    return apply


def _capped(which: int, value: int) -> tuple[int, int]:
    # Never raise a hard limit above the worker's own (that needs privileges and would fail).
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    return value, value


def _user_tasks() -> int:
    uid = os.getuid()
    total = 0
    for proc in psutil.process_iter(["uids", "num_threads"]):
        uids = proc.info["uids"]
        if uids is not None and uids.real == uid:
            total += proc.info["num_threads"] or 1
    return total
