"""Modules a run needs only later, imported on a thread while the run does its Docker work.

Python imports are CPU-bound and hold the GIL, but the run's start is mostly waiting: on the
daemon, on the copy, on the container and the baseline tests. The loop and the tools (about
0.1 s of imports) load in that wait instead of before it. Importing a module twice is safe:
the main thread's own import of one still loading waits for it.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Iterator, Sequence


@contextlib.contextmanager
def preloaded(modules: Sequence[str]) -> Iterator[None]:
    """Import `modules` on a thread for the duration of the block; joined when it ends."""
    thread = threading.Thread(
        target=_import_all, args=(tuple(modules),), name="worker-preload", daemon=True
    )
    thread.start()
    try:
        yield
    finally:
        thread.join()


def _import_all(modules: tuple[str, ...]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the run's own import raises it again, where it is seen
            return
