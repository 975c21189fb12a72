"""A repository's files read as hostile input: symlinks never followed, nothing outside the tree,
files over 1 MB not read, a malformed file a note and never an error.

The set-up inference (sandbox/ecosystems/python/setup_infer.py) and the choice of Python
(sandbox/ecosystems/python/pins.py)
read through it; nothing in the repository is ever run.
"""

from __future__ import annotations

import configparser
import os
import posixpath
import re
import sys
from itertools import islice
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_BYTES = 1_000_000
MAX_LISTED = 10_000  # entries of one folder looked at


class RepoFiles:
    """Reads a repository's files without following symlinks or leaving it; collects notes."""

    def __init__(self, repo: Path) -> None:
        self.root = repo.resolve()
        self.notes: list[str] = []

    def inside(self, rel: str, base: str = "") -> str | None:
        """`rel` (relative to folder `base`) normalized, if it stays in the tree without links."""
        if rel.startswith(("/", "~", "\\")) or re.match(r"[A-Za-z]:", rel):
            return None
        norm = posixpath.normpath(posixpath.join(base, rel))
        if norm == ".." or norm.startswith("../"):
            return None
        path = self.root
        for part in norm.split("/"):
            path = path / part
            if part != "." and path.is_symlink():
                return None
        return norm

    def exists(self, rel: str) -> bool:
        """`rel` is a plain file in the tree, reached through no link."""
        norm = self.inside(rel)
        return norm is not None and (self.root / norm).is_file()

    def listed(self, folder: str) -> list[str]:
        """The names in `folder` (the first MAX_LISTED, sorted), [] when it is not a folder of
        the tree reached through no link."""
        norm = self.inside(folder)
        if norm is None or not (self.root / norm).is_dir():
            return []
        return sorted(p.name for p in islice((self.root / norm).iterdir(), MAX_LISTED))

    def read(self, rel: str) -> str | None:
        """The text of file `rel`, None when absent; a note when it is there but refused."""
        if not self.exists(rel):
            if os.path.lexists(self.root / rel):
                self.notes.append(f"{rel}: a symlink, or not a plain file in the tree; not read")
            return None
        path = self.root / rel
        try:
            if path.stat().st_size > MAX_BYTES:
                self.notes.append(f"{rel}: over {MAX_BYTES} bytes; not read")
                return None
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.notes.append(f"{rel}: unreadable ({type(exc).__name__}); ignored")
            return None

    def toml(self, rel: str) -> dict[str, Any] | None:
        """File `rel` as TOML, None when absent, refused or malformed (a note then)."""
        text = self.read(rel)
        try:
            return None if text is None else tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            self.notes.append(f"{rel}: not valid TOML ({exc}); ignored")
            return None

    def ini(self, rel: str) -> configparser.ConfigParser | None:
        """File `rel` as INI, None when absent, refused or malformed (a note then)."""
        text = self.read(rel)
        cfg = configparser.ConfigParser(interpolation=None)
        try:
            cfg.read_string(text or "", source=rel)
        except configparser.Error as exc:
            self.notes.append(f"{rel}: not a valid INI file ({str(exc).splitlines()[0]}); ignored")
            return None
        return None if text is None else cfg


def requires_python(
    pyproject: dict[str, Any] | None, setup_cfg: configparser.ConfigParser | None
) -> str | None:
    """The project's `requires-python` (pyproject.toml), else setup.cfg's `python_requires`."""
    project = (pyproject or {}).get("project")
    found = project.get("requires-python") if isinstance(project, dict) else None
    if not isinstance(found, str) and setup_cfg is not None:
        found = setup_cfg.get("options", "python_requires", fallback=None)
    return found if isinstance(found, str) else None
