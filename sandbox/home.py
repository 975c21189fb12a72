"""Where the worker keeps what outlives a run: runs, the bundled model, small caches, locks."""

from __future__ import annotations

import os
from pathlib import Path


def worker_home() -> Path:
    """`$WORKER_HOME`, else ~/.cache/worker."""
    return Path(os.environ.get("WORKER_HOME") or Path.home() / ".cache" / "worker")
