"""How a run ends without a verified fix: the loop raises these, the command line maps them to
exit 1. Kept apart from the loop so that the command line knows them without importing it."""

from __future__ import annotations

from worker.errors import WorkerError


class RunEnded(WorkerError):
    """The run stopped without a verified fix (exit 1); `reason` says why, in words."""


class BudgetExhausted(RunEnded):
    """A step, token, cost or wall-clock budget ran out."""


class Stuck(RunEnded):
    """The model repeated itself or made no progress."""


class SamplesSpent(RunEnded):
    """No sampled first edit fixed the tests, and the run was not to go on as a conversation."""


class GaveUp(RunEnded):
    """The model said it was done twice while the tests still failed."""
