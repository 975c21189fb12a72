"""What CI saw failing: the failing test ids of one or more JUnit XML files, merged."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox.ecosystems.base import Ecosystem
from sandbox.testrun.junit import TestSummary, parse_junit
from worker.errors import UsageError


@dataclass(frozen=True, kw_only=True)
class CiFailures:
    """Failing test ids in first-seen order, each once, with the files that named it."""

    failing: tuple[str, ...]
    seen_in: dict[str, tuple[str, ...]]
    files: tuple[str, ...]


def read_junit_files(
    paths: Sequence[Path], read: Callable[[bytes], TestSummary] = parse_junit
) -> CiFailures:
    """Parse and merge JUnit files (matrix jobs give several) with `read` (the ecosystem's:
    sandbox/ecosystems/); a missing, empty or non-JUnit file is a UsageError naming it."""
    seen: dict[str, list[str]] = {}
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"--junit {path}: cannot read it ({exc.strerror or exc})") from exc
        if not data.strip():
            raise UsageError(f"--junit {path}: the file is empty")
        try:
            summary = read(data)
        except ValueError as exc:
            raise UsageError(f"--junit {path}: {exc}") from exc
        for test_id in summary.failing_ids():
            seen.setdefault(test_id, []).append(str(path))
    return CiFailures(
        failing=tuple(seen),
        seen_in={k: tuple(v) for k, v in seen.items()},
        files=tuple(str(p) for p in paths),
    )


def exists_in(repo: Path, test_id: str, ecosystem: Ecosystem) -> bool:
    """Does the repository have this test, as `ecosystem` names it (a pytest id's file and
    definitions, a Node test file, a Go test's function in its package folder)? A static check:
    a test made at run time (a subclass's inherited test, a generated one) is not found and is
    reported as unknown rather than guessed at."""
    return ecosystem.has_test(repo, test_id)
