"""Files laid over a copy of the tree: what set-up wrote into it (sandbox/setup/tree.py keeps
them), copied into each new working copy, never through a link the copy holds."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

#: Where set-up keeps the folders it moved out of the tree (`node_modules`: they live in the
#: set-up image, sandbox/setup/tree_dirs.py); each copy gets a link in their place.
DEPS_TREE = "/opt/worker-deps/tree"


def link_target(rel: str) -> str:
    """Where the link laid at `rel` in each copy of the tree points."""
    return f"{DEPS_TREE}/{rel}"


def lay_over(source: Path, dest: Path) -> list[str]:
    """Copy every file of `source` into the tree `dest` (replacing what is there), and its links
    into the image's DEPS_TREE (where nothing is there); the list of relative paths laid."""
    copied = []
    for top, dirs, names in os.walk(source):
        for name in (*dirs, *names):
            src = Path(top, name)
            is_link = src.is_symlink()
            if not is_link and name in dirs:
                continue
            rel = src.relative_to(source)
            target = dest / rel
            inside = target.parent.resolve().is_relative_to(dest.resolve())
            if not inside or target.is_symlink() or (target.exists() and not target.is_file()):
                continue  # never through a link the tree holds, never over a folder
            if is_link:
                link = os.readlink(src)
                if link != link_target(rel.as_posix()) or target.exists():
                    continue  # only the links store() makes; never over the tree's own file
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(link, target)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target)
            copied.append(rel.as_posix())
    return copied
