"""How `worker publish` stops on purpose."""

from __future__ import annotations

from worker.errors import EnvironmentProblem, WorkerError


class NotPublished(WorkerError):
    """Nothing to publish, or not safely: the run was not verified fixed, the branch moved."""


class PublishFailed(EnvironmentProblem):
    """A step outside us failed (the push rejected, the API down or refusing); names the step."""
