"""Typed results of commands run in a sandbox."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, kw_only=True)
class CommandResult:
    """What one sandboxed command did. `output` is capped; the full log is at `log_path`."""

    command: str
    exit_code: int
    duration_s: float
    timed_out: bool
    oom_killed: bool
    output: str
    output_bytes: int
    truncated: bool
    log_path: Path | None = None
    captured: bytes | None = None  # the capture file, whole (sandbox/container/capture.py)
    capture_error: str = ""  # why a capture file that was written did not come back
    disk_exceeded: bool = False  # killed for writing more than its share of the disk
    # The folders it may write held too many files to add up (sandbox/container/runner.py:
    # WriteGuard): its writes were read as the drop of the disk's free space, which other
    # processes' writes to the same disk count in
    disk_by_free_space: bool = False
    # A thread or process could not start: the container's process limit ([limits] pids) was
    # reached (a test that waits for the threads it meant to start then hangs to the time limit)
    pids_exceeded: bool = False
    # Not run: the image's writable folders held more than [limits] workspace_mb over what they
    # held at the sandbox's first command (sandbox/container/runner.py)
    writable_full: bool = False
    # Test fixtures the command changed, put back from the snapshot since (sandbox/fixture_guard)
    fixtures_put_back: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        """False when a limit ended the command (time, memory, disk) or kept it from starting."""
        return not (self.timed_out or self.oom_killed or self.disk_exceeded or self.writable_full)

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its limits."""
        return self.exit_code == 0 and self.finished

    def describe(self) -> str:
        """One line a person or a model can read: how the command ended, and when."""
        if self.timed_out:
            return self.describe_ending(f" after {self.duration_s:.1f}s")
        if self.disk_exceeded or self.oom_killed or self.writable_full:
            return self.describe_ending()
        return self.describe_ending(f" in {self.duration_s:.2f}s")

    def describe_ending(self, took: str = "") -> str:
        """How the command ended, with no clock unless `took` says one: the same words for the
        same ending, run after run (sandbox/testrun/steady.py)."""
        if self.timed_out:
            how = f"killed at the time limit{took}"
        elif self.disk_exceeded:
            how = (
                "killed: wrote more to the workspace (or the image's writable folders) than "
                "the limit allows ([limits] workspace_mb)"
            )
            if self.disk_by_free_space:
                how += (
                    ", read as the drop of the disk's free space (too many files to add up), "
                    "where other processes' writes count too"
                )
        elif self.writable_full:
            how = (
                "not run: this sandbox's commands together have left more in the image's "
                "writable folders than the limit allows ([limits] workspace_mb)"
            )
        elif self.oom_killed:
            how = f"killed: out of memory (exit {self.exit_code})"
        else:
            how = f"exit {self.exit_code}{took}"
        cut = f", output {self.output_bytes} bytes (truncated)" if self.truncated else ""
        pids = (
            "; a thread or process could not start: the sandbox's process limit ([limits] pids) "
            "was reached"
            if self.pids_exceeded
            else ""
        )
        return f"{how}{pids}{cut}"
