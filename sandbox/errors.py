"""The errors of the sandbox layer: the daemon, the image, the container, the test command."""

from __future__ import annotations


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
