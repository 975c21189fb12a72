"""The one table from error classes to exit codes (documented in the README)."""

from __future__ import annotations

from policies.errors import ConfigError, PolicyRefusal
from sandbox.errors import (
    ProjectEnvironmentError,
    SandboxError,
    SandboxTimeSpent,
    SandboxUsageError,
    SetupFailed,
)
from worker.ci.errors import FlakyOnly, Unverified
from worker.errors import EnvironmentProblem, ProjectEnvironment, UsageError
from worker.loop.endings import RunEnded
from worker.publish.errors import NotPublished

EXIT_FIXED = 0
EXIT_NOT_FIXED = 1
EXIT_USAGE = 2
EXIT_ENVIRONMENT = 3
EXIT_FLAKY_ONLY = 4  # worker ci: every failure was flaky; no model call made
EXIT_UNVERIFIED = 5  # worker ci: fixed by exit code only, without --allow-exit-code-only
EXIT_PROJECT_ENVIRONMENT = 6  # set-up failed, a module missing, wrong Python/Node
EXIT_INTERRUPTED = 130

#: First match wins: a spent sandbox time is a budget (1) before it is a sandbox error (3).
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (KeyboardInterrupt, EXIT_INTERRUPTED),
    (RunEnded, EXIT_NOT_FIXED),
    (NotPublished, EXIT_NOT_FIXED),
    (FlakyOnly, EXIT_FLAKY_ONLY),
    (Unverified, EXIT_UNVERIFIED),
    (SandboxTimeSpent, EXIT_NOT_FIXED),
    (UsageError, EXIT_USAGE),
    (ConfigError, EXIT_USAGE),
    (PolicyRefusal, EXIT_USAGE),
    (SandboxUsageError, EXIT_USAGE),
    (ProjectEnvironment, EXIT_PROJECT_ENVIRONMENT),
    (SetupFailed, EXIT_PROJECT_ENVIRONMENT),
    (ProjectEnvironmentError, EXIT_PROJECT_ENVIRONMENT),  # a toolchain no source has
    (SandboxError, EXIT_ENVIRONMENT),
    (EnvironmentProblem, EXIT_ENVIRONMENT),
)
#: Errors we raise on purpose: reported in one line. Anything else is a bug of ours.
EXPECTED: tuple[type[BaseException], ...] = tuple(cls for cls, _ in EXIT_CODES)


def exit_code_for(exc: BaseException) -> int:
    """The exit code for an error; an unexpected one (a bug) ends as not fixed."""
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    return EXIT_NOT_FIXED
