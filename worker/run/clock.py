"""The run's clock: `--timeout` bounds the run from its start to its end, the baseline and the
line ranking included; only the dependency set-up, which has a limit of its own, is left out."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import overload

from worker.loop.endings import BudgetExhausted


@dataclass(kw_only=True)
class RunClock:
    """`limit_s` seconds (None: no limit) from `started`, a time.monotonic() value."""

    limit_s: float | None
    started: float = field(default_factory=time.monotonic)

    def leave_out(self, seconds: float) -> None:
        """Time spent on something with a limit of its own (a cold set-up) does not count."""
        self.started += seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @overload
    def cap(self, timeout_s: float, *, what: str) -> float: ...
    @overload
    def cap(self, timeout_s: None, *, what: str) -> float | None: ...
    def cap(self, timeout_s: float | None, *, what: str) -> float | None:
        """`timeout_s` cut to the time left; a spent budget ends the run, naming `what` it
        stopped before."""
        if self.limit_s is None:
            return timeout_s
        left = self.limit_s - self.elapsed()
        if left <= 0:
            raise BudgetExhausted(
                f"time budget exhausted before {what}: {self.elapsed():.0f}s of "
                f"{self.limit_s:.0f}s elapsed (max_wall_s)"
            )
        return left if timeout_s is None else min(timeout_s, left)
