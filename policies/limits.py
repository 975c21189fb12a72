"""Resource limits for sandboxed commands: pure values, enforced by the sandbox."""

from __future__ import annotations

from dataclasses import dataclass

# An edit can make the tests hang (a loop that never ends): a test run of an edited tree is cut
# after this many times the run before any edit, and never sooner than HANG_FLOOR_S.
HANG_FACTOR = 10.0
HANG_FLOOR_S = 60.0


@dataclass(frozen=True, kw_only=True)
class Limits:
    """CPU, memory, process and time limits for one sandbox.

    >>> Limits().memory_mb
    2048
    >>> Limits(memory_mb=0)
    Traceback (most recent call last):
    ...
    ValueError: memory_mb must be positive, got 0
    """

    cpus: float = 1.0
    memory_mb: int = 2048  # swap included: the container gets no swap beyond this
    # Processes and threads together (the pids cgroup counts both). Thread-heavy tests are
    # common (once_cell's get_or_init_stress starts 1,000 behind a Barrier; a JVM runs dozens
    # before a test does): 4,096 lets them run and still stops a fork loop long before the
    # host's pid space, with memory_mb bounding it sooner. A command that reaches it is told so.
    pids: int = 4096
    tmp_mb: int = 256  # size of the tmpfs mounted at /tmp
    # What one command may write to /workspace (a host folder) and the image's writable folders:
    # counted by what their files take (sandbox/container/runner.py: WriteGuard), so another
    # process's writes to the same disk are not the command's; it keeps tests from filling it.
    workspace_mb: int = 2048
    command_timeout_s: float = 300.0  # per command, enforced inside the container
    total_timeout_s: float = 1800.0  # all commands of one sandbox together

    def __post_init__(self) -> None:
        names = (
            "cpus",
            "memory_mb",
            "pids",
            "tmp_mb",
            "workspace_mb",
            "command_timeout_s",
            "total_timeout_s",
        )
        for name in names:
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be positive, got {value!r}")


def edited_test_timeout(baseline_s: float, limit: float | None) -> float | None:
    """How long a test run of the edited working copy may take: HANG_FACTOR times the run before
    any edit, at least HANG_FLOOR_S, never more than `limit` (the test command's own timeout,
    which the clean re-check of a fix keeps).

    >>> edited_test_timeout(0.9, 300.0)
    60.0
    >>> edited_test_timeout(20.0, 300.0)
    200.0
    >>> edited_test_timeout(45.0, 300.0)
    300.0
    >>> edited_test_timeout(45.0, None)
    450.0
    """
    cap = max(HANG_FLOOR_S, HANG_FACTOR * baseline_s)
    return cap if limit is None else min(cap, limit)
