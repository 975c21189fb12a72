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


class ProjectEnvironmentError(SandboxError):
    """What the project asks of its environment cannot be had: a toolchain version no source
    has. The project's to change, not the machine's (exit 6, before any model call)."""


class WrongNode(ProjectEnvironmentError):
    """The project asks for a Node no source here has (engines.node, .nvmrc, its CI's
    setup-node): the message names what was asked and what exists."""


class WrongGo(ProjectEnvironmentError):
    """The module asks for a Go no source here has (go.mod's `go` directive or `toolchain`
    line): the message names what was asked and what exists."""


class GoUnavailable(SandboxError):
    """No Go can be had: the package index did not answer and nothing is cached, or what it
    served is not what it listed (a size over the cap, a sha256 mismatch)."""


class NodeUnavailable(SandboxError):
    """No Node can be had: the registry did not answer and nothing is cached, or what it
    served is not what it listed (a size over the cap, an integrity mismatch)."""
