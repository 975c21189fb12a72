"""A value built in a thread while the run does something else (the model client, while the
sandbox starts and the baseline runs)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar


class Closable(Protocol):
    def close(self) -> None: ...


T = TypeVar("T", bound=Closable)


class InBackground(Generic[T]):
    """`build()` runs in a daemon thread from construction on. `take()` waits for it and hands
    the value over (raising the build's error, if any); the taker closes it. `abandon()` (in a
    `finally`) makes sure a value never taken is closed, without waiting for the build: a run
    that ends before it needs the value does not pay for it."""

    def __init__(self, build: Callable[[], T], *, name: str) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._value: T | None = None
        self._error: BaseException | None = None
        self._wanted = True
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        try:
            value = self._build()
        except BaseException as exc:  # handed to take(), which raises it in the run's thread
            self._error = exc
            return
        with self._lock:
            if self._wanted:
                self._value = value
                return
        value.close()

    def take(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        with self._lock:
            value, self._value, self._wanted = self._value, None, False
        if value is None:
            raise RuntimeError("the value was already taken or abandoned")
        return value

    def abandon(self) -> None:
        with self._lock:
            value, self._value, self._wanted = self._value, None, False
        if value is not None:
            value.close()
