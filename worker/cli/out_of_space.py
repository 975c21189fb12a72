"""A full disk, said as such: which place the worker writes to is full, instead of a bare
`[Errno 28] No space left on device` (whose file name a buffered write does not even know)."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from worker.errors import OutOfSpace

DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
#: Below this, a place counts as the full one.
NEARLY_FULL_BYTES = 1024 * 1024


def known_error(exc: BaseException, *, out: Path | None = None) -> BaseException:
    """`exc`, or an OutOfSpace that says where the disk is full when `exc` is ENOSPC/EDQUOT."""
    if not isinstance(exc, OSError) or exc.errno not in DISK_FULL:
        return exc
    places = [("--out", out), ("the temp folder", Path(tempfile.gettempdir()))]
    full = [(name, path) for name, path in places if path is not None and _nearly_full(path)]
    if full:
        name, path = full[0]
        where = f"{path} ({name}) is full"
    elif exc.filename:
        where = f"cannot write {exc.filename}"
    else:
        where = "a folder the worker writes to is full"
    error = OutOfSpace(f"no space left on device: {where}; free some space or choose another")
    error.__cause__ = exc
    return error


def _nearly_full(path: Path) -> bool:
    for candidate in (path, *path.parents):
        try:
            st = os.statvfs(candidate)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize < NEARLY_FULL_BYTES
    return False
