"""A set-up inferred from a repository's files: the command, where it came from, what was
left out. Each ecosystem infers one (sandbox/ecosystems/*/); sandbox/setup/choice.py chooses."""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.setup.installer import PLAIN, Installer
from sandbox.setup.tool import SetupTool


@dataclass(frozen=True, kw_only=True)
class SetupPlan:
    """The set-up command inferred for a repository, where it came from, and what was left out."""

    command: str | None
    sources: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    requires_python: str | None = None
    #: What the command does in a few words, where the command itself is too long to say (or,
    #: with no command, why there is nothing to install).
    summary: str | None = None
    #: The registry hosts, variables and tree folders of the installer the command runs.
    installer: Installer = PLAIN
    #: A tool the command runs before the project's install (poetry, pdm, uv): installed once,
    #: into a cached layer the set-up starts from (sandbox/setup/tool.py).
    tool: SetupTool | None = None
    #: What each test run starts with, read with the set-up (CI's build before its tests,
    #: with its file and line): said on the set-up's line whatever else the line says, since
    #: it runs after every edit, also where there is nothing to install.
    before_tests: str | None = None

    def describe(self) -> str:
        """One line for the user (the whole command is in report.json)."""
        then = f"; each test run starts with {self.before_tests}" if self.before_tests else ""
        if self.command is None:
            why = self.summary or "nothing to install (no package metadata or requirement files)"
            return f"inferred set-up: {why}{then}"
        if self.summary is not None:
            return f"inferred set-up: {self.summary}{then}"
        return f"inferred set-up: {self.command} (from {'; '.join(self.sources)}){then}"
