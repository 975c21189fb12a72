"""The cluster eval's ledger: `ledger.jsonl` in --out, append-only, one fsync'd line per event of
a task attempt, written by the driver alone (docs/scale.md).

Ray runs a task at least once; the ledger makes the eval count it exactly once: the first
`result` line of a task is its result, any later one is a duplicate, kept apart. A restarted
driver reads the ledger back and runs only what has no result.

    {"event": "eval", "eval": "e-1a2b3c4d"}
    {"event": "attempt", "task": "calc", "attempt": "1-9f8e", "n": 1, "node": "host/127.0.0.2"}
    {"event": "lost", "task": "calc", "attempt": "1-9f8e", "why": "the node died"}
    {"event": "result", "task": "calc", "attempt": "2-77aa", "outcome": {...}}
    {"event": "cancelled", "task": "calc", "attempt": "3-01cd"}   (Ctrl-C on the driver)
    {"event": "redo"}
"""

from __future__ import annotations

import fcntl
import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from worker.errors import UsageError
from worker.evaluate.outcome import TaskOutcome

LEDGER_FILE = "ledger.jsonl"


@dataclass(kw_only=True)
class LedgerState:
    """What the ledger holds, as of its last complete line (a `redo` line starts afresh)."""

    eval_id: str | None = None
    results: dict[str, TaskOutcome] = field(default_factory=dict)  # the first per task
    result_attempts: dict[str, str] = field(default_factory=dict)  # task -> winning attempt
    duplicates: list[tuple[str, str]] = field(default_factory=list)  # (task, attempt)
    attempts: dict[str, int] = field(default_factory=dict)  # task -> highest attempt number


class Ledger:
    """The open ledger of one --out; a second driver on the same --out is refused."""

    def __init__(self, *, out: Path) -> None:
        self.path = out / LEDGER_FILE
        self._file: IO[str] | None = None

    def __enter__(self) -> Ledger:
        self._file = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._file.close()
            self._file = None
            raise UsageError(f"another eval driver is writing {self.path}") from None
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            self._file.close()  # closing drops the lock
            self._file = None

    def read(self) -> LedgerState:
        """Replay every complete line; a torn last line (the driver died mid-write) is ignored."""
        state = LedgerState()
        if not self.path.is_file():
            return state
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                _apply(state, entry)
        return state

    def append(self, entry: dict[str, Any]) -> None:
        """One line, on disk before this returns."""
        assert self._file is not None, "the ledger is not open"
        self._file.seek(0, os.SEEK_END)
        if self._file.tell() > 0:
            self._file.seek(self._file.tell() - 1)
            if self._file.read(1) != "\n":  # a torn line from a killed driver stays its own
                self._file.write("\n")
        self._file.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())


def new_attempt_id(n: int) -> str:
    """An attempt's id: its number for the reader, random for uniqueness across drivers."""
    return f"{n}-{uuid.uuid4().hex[:8]}"


def new_eval_id() -> str:
    return f"e-{uuid.uuid4().hex[:8]}"


def _apply(state: LedgerState, entry: dict[str, Any]) -> None:
    event = entry.get("event")
    task = str(entry.get("task", ""))
    if event == "eval" and state.eval_id is None:
        state.eval_id = str(entry.get("eval"))
    elif event == "redo":
        state.results.clear()
        state.result_attempts.clear()
        state.duplicates.clear()
    elif event == "attempt":
        state.attempts[task] = max(state.attempts.get(task, 0), int(entry.get("n") or 0))
    elif event == "result":
        attempt = str(entry.get("attempt", ""))
        if task in state.results:
            state.duplicates.append((task, attempt))
            return
        try:
            state.results[task] = TaskOutcome.from_dict(entry["outcome"])
        except (KeyError, TypeError):
            return
        state.result_attempts[task] = attempt
