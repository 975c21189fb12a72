"""What a run records about itself for replay: the tree it started from and how it was asked.

The tree hash covers the files a run's working copy is made of
(`sandbox.worktree.workspace.tree_files`,
the very list the copy is made from, git run safely on the user's repository; never the run's
own output folder): each file's path, executable bit and bytes, a link's target.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.worktree.workspace import tree_files

# Flags that say where outputs go or how the run is shown: replay sets its own.
_OWN_FLAGS = frozenset({"--repo", "--out", "--base-url", "--model"})
_OWN_SWITCHES = frozenset({"--apply", "--json", "--quiet"})
_DELIVERY = frozenset({"--branch"})


def tree_hash(repo: Path, *, exclude: Path | None = None) -> tuple[str, int]:
    """(sha256 of the tree, number of files) as a run's working copy would hold it."""
    repo = repo.resolve()
    skip = exclude.resolve() if exclude is not None else None
    digest = hashlib.sha256()
    count = 0
    for rel in tree_files(repo):
        path = repo / rel
        if skip is not None and path.absolute().is_relative_to(skip):
            continue
        if path.is_symlink():
            kind, data = b"l", os.fsencode(os.readlink(path))
        elif path.is_file():
            kind = b"x" if os.access(path, os.X_OK) else b"f"
            data = path.read_bytes()
        else:
            continue
        count += 1
        name = os.fsencode(rel)
        digest.update(kind + len(name).to_bytes(4, "big") + name)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest(), count


@dataclass(frozen=True, kw_only=True)
class RunHeader:
    """The trace's `run` event: the command line as given, the tree, the endpoint's kind.

    Written whole by every run (`run_header`); read back from a trace that may be old, cut
    short or not ours, so each field read is None (argv: empty) where the line lacks it."""

    argv: tuple[str, ...] = ()
    repo: str | None = None
    tree: str | None = None  # tree_hash's sha256
    files: int | None = None
    model: str | None = None
    local: bool = False  # the bundled model
    backend: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The event's fields, in the order written since trace version 1."""
        return {
            "argv": list(self.argv),
            "repo": self.repo,
            "tree": self.tree,
            "files": self.files,
            "model": self.model,
            "local": self.local,
            "backend": self.backend,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunHeader:
        """The fields of a `run` event as read (its `type` and `t` ignored)."""
        argv = data.get("argv")
        files = data.get("files")
        return cls(
            argv=tuple(str(word) for word in argv) if isinstance(argv, list) else (),
            repo=_text(data.get("repo")),
            tree=_text(data.get("tree")),
            files=files if isinstance(files, int) and not isinstance(files, bool) else None,
            model=_text(data.get("model")),
            local=bool(data.get("local")),
            backend=_text(data.get("backend")),
        )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def run_header(
    *, argv: Sequence[str], repo: Path, out: Path, model: str, local: bool, backend: str
) -> RunHeader:
    """The header of a run about to start: the tree hashed as its working copy will hold it."""
    tree, files = tree_hash(repo, exclude=out)
    return RunHeader(
        argv=tuple(argv),
        repo=str(repo),
        tree=tree,
        files=files,
        model=model,
        local=local,
        backend=backend,
    )


def replay_flags(argv: Sequence[str]) -> list[str]:
    """The recorded command line's own flags (the verb dropped), less those replay sets itself:
    where the repository and the outputs are, the endpoint, delivery and output format."""
    words = list(argv[1:]) if argv and not argv[0].startswith("-") else list(argv)
    kept: list[str] = []
    skip_next = False
    for word in words:
        if skip_next:
            skip_next = False
            continue
        flag = word.split("=", 1)[0]
        if flag in _OWN_FLAGS or flag in _DELIVERY:
            skip_next = "=" not in word
            continue
        if flag in _OWN_SWITCHES:
            continue
        kept.append(word)
    return kept
