"""Scratch folders: a run's working copy, shadow git and control files, in the system's temp
folder. Each carries its owner (pid and start time), so the next worker start removes those of a
worker that died without cleaning up (SIGKILL, power cut), and never those of a live one."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from sandbox.container.owner import Owner
from sandbox.worktree.capped_dir import unmount_under

PREFIXES = ("worker-run-", "worker-setup-")
OWNER_FILE = ".worker-owner"


def make_scratch_dir(prefix: str = "worker-run-", *, parent: Path | None = None) -> Path:
    """A new private folder, marked as this process's."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        Owner.this_process().write(path / OWNER_FILE)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return path


def sweep_scratch(parent: Path | None = None) -> list[Path]:
    """Remove the marked scratch folders of dead workers under `parent` (the temp folder).

    A folder without a readable mark is left alone: it may be one whose owner has not written
    the mark yet, or one made before marks existed."""
    root = Path(parent or tempfile.gettempdir())
    removed = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIXES) or entry.is_symlink() or not entry.is_dir():
            continue
        owner = Owner.read(entry / OWNER_FILE)
        if owner is None or owner.alive():
            continue
        unmount_under(entry)  # a capped copy of a killed worker is still mounted
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed
