"""How a `worker ci` run ends when it is neither fixed nor an ordinary failure to fix."""

from __future__ import annotations

from worker.errors import WorkerError


class FlakyOnly(WorkerError):
    """Every failing test passed at least once on the unchanged tree: nothing for a model."""


class Unverified(WorkerError):
    """The tests pass with the patch, but only the exit code said so (no JUnit report), and the
    user did not accept that (--allow-exit-code-only)."""
