"""The errors of Go's toolchain choice: a version no source has (exit 6, before any
model call), or no source answering."""

from __future__ import annotations

from sandbox.errors import ProjectEnvironmentError, ToolchainUnavailable


class WrongGo(ProjectEnvironmentError):
    """The module asks for a Go no source here has (go.mod's `go` directive or `toolchain`
    line): the message names what was asked and what exists."""


class GoUnavailable(ToolchainUnavailable):
    """No Go can be had: the package index did not answer and nothing is cached, or what it
    served is not what it listed (a size over the cap, a sha256 mismatch)."""
