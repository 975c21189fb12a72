"""The loop's environment: the tools, the tests and the clean re-check (`verify`) over one sandbox
session."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from itertools import count
from pathlib import Path
from typing import Any

from policies.limits import Limits
from sandbox.prepare import Prepared
from sandbox.session import SandboxSession
from sandbox.testrun.run import TestRun, run_tests
from sandbox.testrun.verify import CleanCheck, CleanChecks
from sandbox.worktree.diff import file_paths
from tools import apply_patch
from tools.base import Observation, ToolContext
from tools.registry import ToolRegistry
from worker.llm.types import ToolCall, ToolSpec

MIN_TEST_TIMEOUT_S = 1.0  # a run started at the budget's very end: the loop ends right after


class SandboxEnvironment:
    """Implements the loop's `Environment` with a real sandbox and the real tools."""

    def __init__(
        self,
        *,
        session: SandboxSession,
        registry: ToolRegistry,
        context: ToolContext,
        prepared: Prepared,
        limits: Limits,
        run_dir: Path,
        edited_timeout_s: float | None = None,
    ) -> None:
        """`edited_timeout_s` cuts the working copy's test runs sooner than the context's
        `test_timeout_s` (policies.limits.edited_test_timeout); the clean re-check keeps that."""
        self._session = session
        self._registry = registry
        self._context = context
        self._prepared = prepared
        self._limits = limits
        self._run_dir = run_dir
        self._numbers = count(1)
        self._edited: set[str] = set()
        self._checks = CleanChecks(new=self._new_check)  # the clean re-checks of this run
        self._before_edit: dict[str, Any] = {}  # the files the last edit changed, as they were
        self._originals: dict[str, Any] = {}  # every file an edit changed, as it was at first
        self._edited_timeout_s = edited_timeout_s
        self._ends_at: float | None = None  # time.monotonic() by which working runs end

    def __enter__(self) -> SandboxEnvironment:
        """Start preparing the first clean re-check's sandbox while the model works."""
        self._checks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._checks.__exit__(*exc)

    def tool_specs(self) -> list[ToolSpec]:
        return self._registry.specs()

    def call_tool(self, call: ToolCall) -> Observation:
        args = call.arguments or {}
        touched = _edit_paths(call.name, args)
        before = apply_patch.remember(touched, self._context) if touched else {}
        context = replace(self._context, test_timeout_s=self._working_timeout())
        obs = self._registry.call(call.name, call.arguments, context, raw_error=call.error)
        self._edited.update(obs.changed_files)
        if obs.changed_files:
            self._before_edit = {p: o for p, o in before.items() if p in obs.changed_files}
            for path, original in self._before_edit.items():
                self._originals.setdefault(path, original)
        return obs

    def undo_last_edit(self) -> bool:
        """Put the files the last edit changed back as they were before it; False when there
        is nothing to undo."""
        before, self._before_edit = self._before_edit, {}
        return bool(before) and bool(apply_patch.restore(before))

    def undo_all_edits(self) -> bool:
        """Put every file the edits changed back as it was at the start; False when none had
        changed."""
        originals, self._originals, self._before_edit = self._originals, {}, {}
        return bool(originals) and bool(apply_patch.restore(originals))

    def end_by(self, at: float) -> None:
        """The working copy's test runs from now on end by `at` (a time.monotonic() value), so
        the run's time budget holds through a run that an edit made hang. The clean re-check
        of a fix is not cut: a fix found in time is checked whole."""
        self._ends_at = at

    def _working_timeout(self) -> float | None:
        """The timeout of a working-copy test run now: the edited-tree cap, shortened to the
        time left near the end (a constant until then, so the test-run cache still hits)."""
        timeout = self._edited_timeout_s or self._context.test_timeout_s
        if self._ends_at is not None:
            left = max(self._ends_at - time.monotonic(), MIN_TEST_TIMEOUT_S)
            timeout = left if timeout is None else min(timeout, left)
        return timeout

    def run_tests(self, test_ids: Sequence[str] = ()) -> TestRun:
        """The working copy's tests: the whole suite, or the tests `test_ids` name."""
        timeout, test_cmd = self._working_timeout(), self._context.test_cmd
        if self._context.tests is not None:
            return self._context.tests.run(test_cmd=test_cmd, test_ids=test_ids, timeout_s=timeout)
        return run_tests(self._session.box, test_cmd=test_cmd, test_ids=test_ids, timeout_s=timeout)

    def diff(self) -> str:
        """The model's edits only: files it changed through apply_patch that the policy lets it
        write. What code run in the sandbox changed besides (a test rewritten at import time,
        say) is a side effect, never part of the fix, so `verify` runs the original tests.
        Before any edit it is empty, without asking git (two processes per step)."""
        if not any(self._is_edit(rel) for rel in self._edited):
            return ""
        return self._session.workspace.diff(self._is_edit)

    def changes(self) -> tuple[list[str], list[str]]:
        """Changed paths: (in the patch, left out as side effects of running code)."""
        return self._session.workspace.split_changes(self._is_edit)

    def _is_edit(self, rel: str) -> bool:
        return rel in self._edited and self._context.paths.is_writable(rel)

    def verify_ahead(self, patch: str) -> None:
        """Start the clean re-check of `patch` now, beside the working copy's own run of the same
        tree (sandbox/testrun/verify.CleanChecks.start_ahead)."""
        if patch.strip():
            test_cmd, timeout_s = self._context.test_cmd, self._context.test_timeout_s
            self._checks.start_ahead(patch, test_cmd=test_cmd, timeout_s=timeout_s)

    def verify(self, patch: str) -> TestRun:
        """The clean re-check's run of `patch` (worker/loop/verify.py judges it)."""
        test_cmd, timeout_s = self._context.test_cmd, self._context.test_timeout_s
        return self._checks.run(patch, test_cmd=test_cmd, timeout_s=timeout_s)

    def _new_check(self) -> CleanCheck:
        return CleanCheck(
            spec=self._prepared.spec(limits=self._limits, protect=self._context.paths.protection),
            workspace=self._session.workspace,
            work_dir=self._run_dir / f"verify-{next(self._numbers)}",
        )


def _edit_paths(tool: str, args: dict[str, Any]) -> list[str]:
    """The files an edit call may change, before it runs."""
    if tool == "replace" and isinstance(args.get("path"), str):
        return [args["path"]]
    if tool == "apply_patch" and isinstance(args.get("patch"), str):
        return file_paths(args["patch"])
    return []
