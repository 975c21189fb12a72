"""The ecosystems the harness knows, and which one a repository or a test command is.

Order matters where a repository is more than one (a Python backend beside a JS front end):
the test command given names its ecosystem; without one, the first whose marker files the
repository's root has, in this order; then Python for a tree of bare `.py` files.
"""

from __future__ import annotations

from pathlib import Path

from sandbox.ecosystems.base import Ecosystem, NoTestCommand
from sandbox.ecosystems.go.ecosystem import GO
from sandbox.ecosystems.node.ecosystem import NODE
from sandbox.ecosystems.python.ecosystem import PYTHON
from sandbox.errors import SandboxUsageError

ECOSYSTEMS: tuple[Ecosystem, ...] = (PYTHON, NODE, GO)


def ecosystem_running(test_cmd: str) -> Ecosystem | None:
    """The ecosystem whose runner `test_cmd` is; None: a command no ecosystem knows (its
    outcome is its exit code)."""
    return next((e for e in ECOSYSTEMS if e.runs(test_cmd)), None)


def recognised(repo: Path) -> list[Ecosystem]:
    """The ecosystems whose marker files `repo`'s root has, in ECOSYSTEMS' order."""
    found = [e for e in ECOSYSTEMS if e.recognises(repo)]
    if not found and PYTHON.recognises_loosely(repo):
        found.append(PYTHON)
    return found


def ecosystem_for(repo: Path, test_cmd: str | None) -> Ecosystem | None:
    """The ecosystem a run on `repo` is: the test command's, else the first recognised."""
    if test_cmd:
        if (running := ecosystem_running(test_cmd)) is not None:
            return running
    found = recognised(repo)
    return found[0] if found else None


def detect_test_command(workspace: Path, *, shown: Path | None = None) -> str:
    """The test command of the repository copied at `workspace` when none is given; an error
    naming `shown` (the user's repository, not our copy of it) when no ecosystem can tell."""
    where = shown or workspace
    for ecosystem in recognised(workspace):
        try:
            command = ecosystem.test_command(workspace)
        except NoTestCommand as exc:
            raise SandboxUsageError(
                f"cannot tell how to run the tests of {where}: {exc}; pass --test-cmd"
            ) from None
        if command is not None:
            return command
    raise SandboxUsageError(f"cannot tell how to run the tests of {where}: pass --test-cmd")
