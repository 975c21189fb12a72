"""Who made a container or a scratch folder: a process id and its start time, so that a later
worker can tell a dead owner (its leftovers may go) from a live one (never touched), even where
the pid has been reused since."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import psutil

#: Start times read through /proc agree to the clock tick; a reused pid starts later than that.
SAME_START_S = 0.5


@dataclass(frozen=True, kw_only=True)
class Owner:
    """A process, named by pid and start time (seconds since the epoch)."""

    pid: int
    started: float

    @classmethod
    def this_process(cls) -> Owner:
        return cls(pid=os.getpid(), started=psutil.Process().create_time())

    def alive(self) -> bool:
        """True while this very process runs (a new process with the same pid is not it)."""
        try:
            started = psutil.Process(self.pid).create_time()
        except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
            return False
        return abs(started - self.started) <= SAME_START_S

    def write(self, path: Path) -> None:
        """Record the owner in `path`, atomically: a reader never sees half of it."""
        tmp = path.with_name(f".{path.name}.{self.pid}")
        tmp.write_text(json.dumps({"pid": self.pid, "started": self.started}), encoding="utf-8")
        os.replace(tmp, path)

    @classmethod
    def read(cls, path: Path) -> Owner | None:
        """The owner recorded in `path`; None when there is none or it cannot be read."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(pid=int(data["pid"]), started=float(data["started"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
