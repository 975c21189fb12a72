"""The worker's own errors (the loop's endings are in worker/loop/endings.py). Exit codes are the
command line's business: worker/cli/exit_codes.py maps every error class to one, in one table."""

from __future__ import annotations


class WorkerError(Exception):
    """Base of the errors the worker itself raises on purpose."""


class UsageError(WorkerError, ValueError):
    """Bad flag, missing repository, invalid request: the user can fix the call."""


class EnvironmentProblem(WorkerError, RuntimeError):
    """Something outside the user's call is missing or broken (the model endpoint, say)."""


class ProjectEnvironment(EnvironmentProblem):
    """The project's own environment is broken before any change (its set-up failed, its tests
    import what is not installed, it needs another Python): no edit of the code mends that, so
    the run stops before the first model call."""


class OutOfSpace(EnvironmentProblem):
    """A disk the worker writes to (the --out folder, the temp folder) is full."""


class ModelUnavailable(EnvironmentProblem):
    """The model endpoint is unreachable or keeps refusing after retries."""


class Interrupted(WorkerError, KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; the run stops, cleans up and reports."""
