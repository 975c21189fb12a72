"""The errors of Node's toolchain choice: a version no source has (exit 6, before any
model call), or no source answering."""

from __future__ import annotations

from sandbox.errors import ProjectEnvironmentError, ToolchainUnavailable


class WrongNode(ProjectEnvironmentError):
    """The project asks for a Node no source here has (engines.node, .nvmrc, its CI's
    setup-node): the message names what was asked and what exists."""


class NodeUnavailable(ToolchainUnavailable):
    """No Node can be had: the registry did not answer and nothing is cached, or what it
    served is not what it listed (a size over the cap, an integrity mismatch)."""
