"""One act (a sandbox's start or removal, the sweep of dead workers' leftovers) on a thread,
beside the caller's own work, its error raised in the caller when it waits."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class OnThread:
    """One sandbox act (`box.start`, `box.close`) on a thread, beside the caller's own work:
    `begin` once, `wait` for it (raising its error), or `settle` (wait, ignoring the error: the
    caller is already leaving)."""

    def __init__(self, act: Callable[[], Any], *, name: str) -> None:
        self._act = act
        self._name = name
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def begin(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self._act()
        except BaseException as exc:  # noqa: BLE001 - raised again by wait(), in the caller
            self._error = exc

    def wait(self) -> None:
        self.begin()  # never begun (the copy never said it was ready: no files at all): now
        self.settle()
        error, self._error = self._error, None
        if error is not None:
            raise error

    def settle(self) -> None:
        if self._thread is not None:
            self._thread.join()
