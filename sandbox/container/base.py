"""The sandbox contract, and the bookkeeping both backends share.

`Sandbox` is what the rest of the code may use of a sandbox: `with box:`, `box.run(...)`,
`box.stage(...)`. `SandboxBase` does, once, what every backend needs around a command: the
total-time budget, numbered logs, capped output capture, the base environment and the context
management. A backend supplies only what differs: `start`, `close`, `_running`, `_stage_dir`,
`_staged_path` and `_execute`.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from policies.limits import Limits
from policies.secrets import NO_SECRETS, Secrets
from sandbox.container.output import OutputCapture
from sandbox.container.results import CommandResult
from sandbox.errors import SandboxError, SandboxTimeSpent
from sandbox.worktree.fixture_guard import FixtureGuard

#: What a command sees of the environment besides the backend's own: nothing of the host's.
BASE_ENV = {
    "HOME": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "LANG": "C.UTF-8",
    "CI": "1",
    "PYTHONUNBUFFERED": "1",
}
LOG_MAX_BYTES = 64 * 1024 * 1024


class Sandbox(Protocol):
    """The contract: a started sandbox over `workspace` that runs commands with limits."""

    workspace: Path
    isolation_label: str

    @property
    def placement(self) -> str:
        """Where commands find the working copy: "mounted" or "copied" (a container), "host"."""
        ...

    def __enter__(self) -> Sandbox: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def run(
        self,
        command: str,
        *,
        timeout_s: float | None = None,
        capture_file: str | None = None,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        """Run `command` with /bin/sh in the workspace, the whole tree killed at the limit;
        `capture_file` is read back after it; `env` adds variables to this command alone."""
        ...

    def stage(self, name: str, data: bytes) -> str:
        """Put a file where commands can read it; returns its path as commands see it."""
        ...

    def pull(self, rels: Iterable[str]) -> None:
        """Make `rels` of the workspace on this machine what commands left them as (for a
        copy that lives in the container; nothing to do where commands write this one)."""
        ...


class SandboxBase:
    """What every backend shares; see the module docstring for what a backend supplies."""

    isolation_label = "?"
    placement = "host"

    def __init__(
        self,
        *,
        workspace: Path,
        control_dir: Path,
        limits: Limits,
        output_bytes: int = 16_000,
        log_dir: Path | None = None,
    ) -> None:
        self.workspace = workspace
        self.control_dir = control_dir
        self.limits = limits
        self._output_bytes = output_bytes
        self._log_dir = log_dir
        self._used_s = 0.0
        self._count = 0
        self._guard: FixtureGuard | None = None
        self._secrets = NO_SECRETS

    # -- lifecycle: the backend's start and close ------------------------------------------

    def __enter__(self) -> SandboxBase:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def pull(self, rels: Iterable[str]) -> None:
        """Nothing to do: commands write this machine's copy itself (see `Sandbox.pull`)."""

    def watch(self, guard: FixtureGuard) -> None:
        """Sweep `guard` after every command: each result names the fixtures it put back."""
        self._guard = guard

    def mask(self, secrets: Secrets) -> None:
        """Mask `secrets` in every later command's output and log (policies/secrets.py)."""
        self._secrets = secrets

    # -- use ---------------------------------------------------------------------------------

    def stage(self, name: str, data: bytes) -> str:
        """Put a file where commands can read it; returns its path as commands see it."""
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        if safe in {"", ".", ".."} or safe.startswith(".local-"):
            raise ValueError(f"cannot stage a file named {name!r}")
        path = self._stage_dir() / safe
        path.write_bytes(data)
        os.chmod(path, 0o644)
        return self._staged_path(safe)

    def run(
        self,
        command: str,
        *,
        timeout_s: float | None = None,
        capture_file: str | None = None,
        env: dict[str, str] | None = None,
    ) -> CommandResult:
        """Run `command` with /bin/sh in the workspace, killed (whole tree) at the time limit;
        `env` adds variables to this command's environment."""
        if not self._running():
            raise SandboxError("the sandbox is not running")
        remaining_total = self.limits.total_timeout_s - self._used_s
        if remaining_total <= 0:
            raise SandboxTimeSpent(
                f"the sandbox's total time limit ({self.limits.total_timeout_s:g}s) is spent"
            )
        limit = min(timeout_s or self.limits.command_timeout_s, remaining_total)
        self._count += 1
        log_path = self._log_dir / f"command-{self._count:03d}.log" if self._log_dir else None
        capture = OutputCapture(
            keep_bytes=self._output_bytes,
            log_path=log_path,
            log_max_bytes=LOG_MAX_BYTES,
            secrets=self._secrets,
        )
        started = time.monotonic()
        try:
            result = self._execute(
                command,
                limit=limit,
                capture=capture,
                capture_file=capture_file,
                env={**BASE_ENV, **(env or {})},
                log_path=log_path,
            )
            if self._guard is not None and (put_back := self._sweep(self._guard)):
                result = dataclasses.replace(result, fixtures_put_back=put_back)
            return result
        finally:
            capture.close()
            self._used_s += time.monotonic() - started

    # -- what a backend supplies -------------------------------------------------------------

    def _running(self) -> bool:
        raise NotImplementedError

    def _sweep(self, guard: FixtureGuard) -> tuple[str, ...]:
        """The fixtures the command changed, put back (on the copy the commands see)."""
        return guard.sweep()

    def _stage_dir(self) -> Path:
        return self.control_dir

    def _staged_path(self, safe_name: str) -> str:
        raise NotImplementedError

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
        """Run one command within `limit` seconds, feeding its output to `capture`."""
        raise NotImplementedError
