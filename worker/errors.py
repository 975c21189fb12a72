"""The one error family of the worker, and the one place that maps errors to exit codes."""

from __future__ import annotations

EXIT_FIXED = 0
EXIT_NOT_FIXED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_INTERRUPTED = 130


class WorkerError(Exception):
    """Base of every error the worker raises on purpose; `exit_code` says how the CLI ends."""

    exit_code = EXIT_NOT_FIXED


class UsageError(WorkerError, ValueError):
    """Bad flag, missing repository, invalid configuration: the user can fix the call."""

    exit_code = EXIT_USAGE


class ConfigError(UsageError):
    """A configuration file or preset is invalid (unknown key, wrong type)."""


class EnvironmentProblem(WorkerError, RuntimeError):
    """Something outside the user's call is missing or broken (Docker, image, model endpoint)."""

    exit_code = EXIT_ENVIRONMENT


class DockerUnavailable(EnvironmentProblem):
    """The Docker daemon cannot be reached."""


class ImageError(EnvironmentProblem):
    """The sandbox image is missing and could not be built."""


class ModelUnavailable(EnvironmentProblem):
    """The model endpoint is unreachable or keeps refusing after retries."""


class SandboxError(EnvironmentProblem):
    """A sandbox operation failed for a reason that is not the command's own fault."""


class Interrupted(WorkerError, KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; the run stops, cleans up and reports."""

    exit_code = EXIT_INTERRUPTED


def exit_code_for(exc: BaseException) -> int:
    """Map any exception to the CLI's exit code (the only mapping in the code base)."""
    if isinstance(exc, WorkerError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_NOT_FIXED
