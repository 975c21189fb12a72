"""What decides a set-up image: the key it is cached under.

The base image's id, the command, the network (mode, the names of the variables passed, never
their values, the allowed hosts), the installer's fields, what the build reads from the user's
checkout, and the content of exactly the files the installer names as its inputs
(`Installer.inputs`: a Python project's requirement files, a Node project's lockfile, a Go
module's go.mod, go.sum and vendor/modules.txt). A file outside those changes no key; a change
to one of them sets up anew.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path

MAX_MATCHES = 50  # files one glob adds to the key, at most
MAX_DIRS = 5_000  # folders a `**/` glob walks, at most
#: Folders a `**/` glob does not walk into: what set-up writes, and version control.
SKIPPED = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "target"})


def input_files(repo: Path, patterns: Iterable[str]) -> list[str]:
    """The files of `repo` that `patterns` name (a name, a glob, `**/` at any depth), sorted;
    a name is listed whether or not it exists (its absence is part of the key)."""
    found: set[str] = set()
    for pattern in patterns:
        if not any(c in pattern for c in "*?["):
            found.add(pattern)
        elif pattern.startswith("**/"):
            found.update(_anywhere(repo, pattern[3:]))
        else:
            matches = sorted(p.relative_to(repo).as_posix() for p in repo.glob(pattern))
            found.update(matches[:MAX_MATCHES])
    return sorted(found)


def hash_inputs(digest: hashlib._Hash, repo: Path, patterns: Iterable[str]) -> None:
    """Each named file's name and content into `digest` (links and folders left out)."""
    for name in input_files(repo, patterns):
        path = repo / name
        if path.is_file() and not path.is_symlink():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")


def _anywhere(repo: Path, pattern: str) -> list[str]:
    """The files at any depth whose path below the root matches `pattern` at its end (`go.mod`,
    `vendor/modules.txt`), hidden and set-up folders left out, the walk bounded."""
    out: list[str] = []
    for walked, (folder, dirs, files) in enumerate(os.walk(repo)):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith("."))
        if walked >= MAX_DIRS:
            break
        rel = Path(folder).relative_to(repo).as_posix()
        for name in files:
            path = name if rel == "." else f"{rel}/{name}"
            if fnmatchcase(path, pattern) or fnmatchcase(path, f"*/{pattern}"):
                out.append(path)
                if len(out) >= MAX_MATCHES:
                    return out
    return out
