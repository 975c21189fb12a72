"""Files laid over a copy of the tree: what set-up wrote into it (sandbox/setup/tree.py keeps
them), copied into each new working copy, never through a link the copy holds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path


def lay_over(source: Path, dest: Path) -> list[str]:
    """Copy every file of `source` into the tree `dest` (replacing what is there); the list of
    relative paths copied."""
    copied = []
    for top, _dirs, names in os.walk(source):
        for name in names:
            src = Path(top, name)
            rel = src.relative_to(source)
            target = dest / rel
            inside = target.parent.resolve().is_relative_to(dest.resolve())
            if not inside or target.is_symlink() or (target.exists() and not target.is_file()):
                continue  # never through a link the tree holds, never over a folder
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
            copied.append(rel.as_posix())
    return copied
