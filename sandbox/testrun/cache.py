"""A test run asked for twice on the same tree: the second one is the first one's result.

After each applied patch the harness runs the tests; a model that then asks for the same run gets
that result again instead of a second run. It is given only when nothing can differ: the tree's
content hash (every file's bytes, the executable bit, link targets, ignored files included) and
the test command with its test ids are the same as the last run's, that run finished within the
time limit asked for now, and it left the tree as it found it. Anything else, or a run that did
not finish, runs again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.container.base import Sandbox
from sandbox.testrun.run import TestRun, run_tests
from sandbox.worktree.workspace import Workspace


@dataclass(frozen=True)
class _Key:
    tree: str
    test_cmd: str
    test_ids: tuple[str, ...]


class TestRunCache:
    """Runs the tests in `box` over `workspace`, or hands back the last run when provably the
    same; `reused` says which the last call did."""

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, *, box: Sandbox, workspace: Workspace) -> None:
        self._box = box
        self._workspace = workspace
        self._last: tuple[_Key, TestRun] | None = None
        self.reused = False
        self.runs = 0  # test runs really made
        self.skipped = 0  # runs answered from the last one

    def run(
        self, *, test_cmd: str, test_ids: Sequence[str] = (), timeout_s: float | None = None
    ) -> TestRun:
        """The tests' result on the tree as it is now."""
        key = _Key(self._workspace.content_hash(), test_cmd, tuple(test_ids))
        if self._last is not None and self._last[0] == key and _fits(self._last[1], timeout_s):
            self.reused = True
            self.skipped += 1
            return self._last[1]
        self.reused = False
        self._last = None
        run = run_tests(self._box, test_cmd=test_cmd, test_ids=test_ids, timeout_s=timeout_s)
        self.runs += 1
        result = run.result
        # A run that changed the tree (a test writing into the workspace) is not repeatable.
        if result.finished and self._workspace.content_hash() == key.tree:
            self._last = (key, run)
        return run


def _fits(run: TestRun, timeout_s: float | None) -> bool:
    """A finished run gives the same result under any time limit it finished within (the first
    run's limit is the user's, an edited tree's is shorter: policies.limits)."""
    return timeout_s is None or run.result.duration_s <= timeout_s
