"""Where the worker keeps what outlives a run: runs, the bundled model, small caches, locks."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def worker_home() -> Path:
    """`$WORKER_HOME`, else ~/.cache/worker."""
    return Path(os.environ.get("WORKER_HOME") or Path.home() / ".cache" / "worker")


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all (a cache another process may read meanwhile):
    a temporary file beside it, renamed over it; the temporary file removed on a failure."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
