"""The errors of Rust's toolchain choice and set-up: a toolchain no source has, a crate the
registry lacks (exit 6, before any model call)."""

from __future__ import annotations

from sandbox.errors import ProjectEnvironmentError


class WrongRust(ProjectEnvironmentError):
    """The project asks for a Rust no source here has (a channel such as `nightly`, or a
    release newer than any): the message names what was asked and what exists."""
