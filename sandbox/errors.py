"""The errors of the sandbox layer: the daemon, the image, the container, the test command."""

from __future__ import annotations

from pathlib import Path


class SandboxError(RuntimeError):
    """A sandbox operation failed for a reason that is not the command's own fault."""


class DockerUnavailable(SandboxError):
    """The Docker daemon cannot be reached."""


class DaemonGone(DockerUnavailable):
    """The Docker daemon stopped answering in the middle of a run (stopped, killed, restarting)."""


class SandboxGone(SandboxError):
    """The sandbox container was removed or stopped from outside while the worker used it."""


class ImageError(SandboxError):
    """The sandbox image is missing and could not be built."""


class SandboxTimeSpent(SandboxError):
    """The sandbox's total time limit is spent: a budget, not a broken environment."""


class SandboxUsageError(ValueError):
    """The caller asked for something the sandbox cannot do: no such repository, no way to
    tell how its tests run."""


class ProjectEnvironmentError(SandboxError):
    """What the project asks of its environment cannot be had: a toolchain version no source
    has. The project's to change, not the machine's (exit 6, before any model call)."""


class ToolchainUnavailable(SandboxError):
    """No toolchain can be had: its source did not answer and nothing is cached, or what it
    served is not what it listed (a size over the cap, a checksum that differs)."""


class SetupFailed(SandboxError):
    """The set-up command failed or ran out of time; `str()` is one line naming both."""

    def __init__(
        self,
        *,
        command: str,
        tail: str,
        network_error: str | None,
        setup_network: str,
        how: str,
        timed_out: bool = False,
        cause: str = "",
        log: Path | None = None,
    ) -> None:
        self.command = command
        self.tail = tail
        self.network_error = network_error
        self.setup_network = setup_network
        self.timed_out = timed_out
        self.log = log
        shown = " ".join(command.split())
        shown = shown if len(shown) <= 100 else shown[:97] + "..."
        last = next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")
        cause = (network_error or cause or last or "no output")[:240]
        where = f" (whole log: {log})" if log else ""
        super().__init__(
            f"set-up command {how}, network {setup_network}: `{shown}`: {cause}{where}"
        )
