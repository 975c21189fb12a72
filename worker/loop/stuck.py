"""Stuck detection: the same call with the same result again and again, or no progress at all."""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass(kw_only=True)
class StuckDetector:
    """Counts identical (tool, arguments, result) calls among the recent ones, and idle steps.

    A call seen again within the last `window` calls counts as a repeat, so that cycles
    (A, B, C, A, B, C, ...) are caught as well as plain repeats.

    >>> d = StuckDetector(nudge_at=2, stop_at=3)
    >>> [d.observe("read_file", {"path": "a.py"}, "same") for _ in range(3)]
    [None, 'nudge', 'stop']
    """

    nudge_at: int = 2
    stop_at: int = 4
    window: int = 9
    idle_steps: int = 10
    _recent: deque[str] = field(default_factory=deque)
    _idle: int = 0
    _best: tuple[float, int] | None = field(default=None)

    def observe(self, tool: str, arguments: Any, result: str) -> str | None:
        """Record one tool call; returns "nudge", "stop" or None."""
        key = hashlib.sha256(
            json.dumps([tool, arguments, result], sort_keys=True, default=str).encode()
        ).hexdigest()
        self._recent.append(key)
        while len(self._recent) > self.window:
            self._recent.popleft()
        repeats = self._recent.count(key)
        if repeats >= self.stop_at:
            return "stop"
        if repeats >= self.nudge_at:
            return "nudge"
        return None

    def step_done(self, *, failing: float, diff_size: int) -> bool:
        """Record the state after a step (failing tests, infinity for a run without a report);
        True when nothing improved for `idle_steps` steps."""
        state = (failing, diff_size)
        if self._best is None or state[0] < self._best[0] or state[1] != self._best[1]:
            self._best = (min(state[0], self._best[0]) if self._best else state[0], state[1])
            self._idle = 0
        else:
            self._idle += 1
        return self._idle >= self.idle_steps
