"""The clean re-check's sandbox: the original snapshot plus the patch, in a fresh container (the
loop's `verify`, worker/loop/verify.py, and the eval's `recheck` run their tests here), and the
bookkeeping of a run's re-checks (`CleanChecks`: prepared in advance, started ahead, spent)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.container.base import SandboxBase
from sandbox.errors import SandboxError
from sandbox.session import BoxSpec, guard_fixtures, make_box, workspace_owner
from sandbox.testrun.run import TestRun, run_tests
from sandbox.worktree.capped_dir import image_size, mount_capped
from sandbox.worktree.diff import apply_to_dir
from sandbox.worktree.scratch import make_scratch_dir
from sandbox.worktree.workspace import Workspace, chown_tree, remove_dir


class CleanCheck:
    """The sandbox of one clean re-check: a fresh sandbox (as `spec` describes) on a clean export
    of the original snapshot.

    `start()` exports the snapshot and starts the sandbox in a thread, so that a run can have it
    ready while the model works; the patch goes in only when `verify` is called. Nothing of the
    working sandbox can reach it: its own scratch folder (written from the snapshot, never from
    the working copy), its own container; its logs go to `work_dir/logs`. One use; `close()` (or
    the `with` block) removes the container and the scratch folder.
    """

    def __init__(self, *, spec: BoxSpec, workspace: Workspace, work_dir: Path) -> None:
        self._spec = spec
        self._workspace = workspace
        self._work_dir = work_dir
        self._scratch: Path | None = None
        self._fresh = Path()  # set in _prepare, inside the scratch folder
        self._box: SandboxBase | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._used = False
        self._cancelled = False
        self._removal: threading.Thread | None = None
        self._removal_error: BaseException | None = None

    def __enter__(self) -> CleanCheck:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Begin preparing in the background; `verify` waits for it."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._prepare, name="clean-check", daemon=True)
            self._thread.start()

    def _prepare(self) -> None:
        try:
            self._work_dir.mkdir(parents=True)
            self._scratch = make_scratch_dir()
            self._fresh = self._scratch / "workspace"
            self._fresh.mkdir()
            if self._workspace.capped:  # the clean copy is capped as the working one is
                ws = self._workspace
                size = image_size(
                    tree_bytes=ws.tree_bytes, files=ws.files, cap_mb=self._spec.limits.workspace_mb
                )
                mount_capped(self._fresh, size_bytes=size, files=ws.files)
            self._workspace.export_snapshot(self._fresh)
            box = make_box(
                self._spec,
                workspace=self._fresh,
                control_dir=self._scratch / "control",
                log_dir=self._work_dir / "logs",
                labels={"worker.phase": "verify"},
            )
            self._box = box  # before start: close() removes a half-started container too
            box.start()
        except BaseException as exc:  # noqa: BLE001 - raised again, in the caller's thread
            self._error = exc

    def _wait(self) -> None:
        self.start()
        assert self._thread is not None
        self._thread.join()

    def verify(self, patch: str, *, test_cmd: str, timeout_s: float | None = None) -> TestRun:
        """Apply `patch` to the clean copy, then run the whole test command there."""
        if self._used:
            raise SandboxError("a clean check is used once")
        self._used = True
        self._wait()
        if self._error is not None:
            raise self._error
        if self._cancelled:
            raise SandboxError("the clean check was cancelled")
        assert self._box is not None
        apply_to_dir(self._fresh, patch)
        spec = self._spec
        owner = workspace_owner(spec.backend)
        if owner is not None and os.geteuid() == 0:
            chown_tree(self._fresh, owner)
            if spec.protect is not None and not spec.isolation.run_as_root:
                guard_fixtures(self._box, self._workspace, self._fresh, spec.protect)
        try:
            return run_tests(self._box, test_cmd=test_cmd, timeout_s=timeout_s)
        finally:
            # Used once: its container goes now, then its copy (unmounted, removed), while the
            # run writes its report, not after.
            self._removal = threading.Thread(target=self._remove_all, name="clean-check-rm")
            self._removal.start()

    def cancel(self) -> None:
        """Stop a clean re-check under way on another thread, or one not begun: the container
        goes now (after its start, if it is starting), so a test run in it ends at once."""
        self._cancelled = True
        if self._thread is not None:
            self._wait()
        self._remove_box()

    def _remove_box(self) -> None:
        box, self._box = self._box, None
        try:
            if box is not None:
                box.close()
        except BaseException as exc:  # noqa: BLE001 - raised again by close(), in its thread
            self._removal_error = exc

    def _remove_all(self) -> None:
        self._remove_box()
        scratch = self._scratch
        if self._removal_error is None and scratch is not None:
            try:
                remove_dir(scratch)  # the container is gone: nothing holds the copy any more
                self._scratch = None
            except BaseException as exc:  # noqa: BLE001 - raised again by close()
                self._removal_error = exc

    def close(self) -> None:
        """Remove the sandbox and the copy (waits for a start or a removal under way)."""
        if self._thread is not None:
            self._wait()
        try:
            if self._removal is not None:
                self._removal.join()
            else:
                self._remove_box()
            error, self._removal_error = self._removal_error, None
            if error is not None:
                raise error
        finally:
            if self._scratch is not None:
                remove_dir(self._scratch)


class CleanChecks:
    """The clean re-checks of one run: the first one's sandbox prepared in advance (`with`), one
    started ahead beside the working copy's run of the same tree, the last one used.

    When the working copy's run says fixed, `run(patch)` has the re-check started ahead for
    that very patch after one wait, not two (the two runs share the cores). One not used is
    cancelled at the next start or at exit; only the first re-check's sandbox is prepared in
    advance, later ones start with their edit (a second clean re-check is rare, and a spare
    container at exit costs its removal). The last check used is closed (its removal waited
    for, its copy removed) at the next re-check or at exit, not on the answer's path.
    """

    def __init__(self, *, new: Callable[[], CleanCheck]) -> None:
        self._new = new
        self._ready: CleanCheck | None = None
        self._ahead: _Ahead | None = None
        self._spent: CleanCheck | None = None

    def __enter__(self) -> CleanChecks:
        self._ready = self._new()
        self._ready.start()
        return self

    def __exit__(self, *exc: object) -> None:
        ahead, self._ahead = self._ahead, None
        ready, self._ready = self._ready, None
        try:
            if ahead is not None:
                ahead.discard()
        finally:
            try:
                if ready is not None:
                    ready.close()
            finally:
                self._close_spent()

    def start_ahead(self, patch: str, *, test_cmd: str, timeout_s: float | None) -> None:
        """Start the clean re-check of `patch` now, on a thread."""
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.discard()
        check, self._ready = self._ready or self._new(), None
        check.start()  # here, not on the run's thread: cancel() may have to wait for it
        self._ahead = _Ahead(patch=patch, check=check)
        self._ahead.start(test_cmd=test_cmd, timeout_s=timeout_s)

    def run(self, patch: str, *, test_cmd: str, timeout_s: float | None) -> TestRun:
        """The clean re-check's run of `patch`: the one started ahead for this very patch, else
        one prepared in advance, else a cold one."""
        self._close_spent()
        ahead, self._ahead = self._ahead, None
        if ahead is not None:
            if ahead.patch == patch:
                self._spent = ahead.check
                return ahead.result()
            ahead.discard()
        check, self._ready = self._ready or self._new(), None
        self._spent = check
        return check.verify(patch, test_cmd=test_cmd, timeout_s=timeout_s)

    def _close_spent(self) -> None:
        spent, self._spent = self._spent, None
        if spent is not None:
            spent.close()


@dataclass(kw_only=True)
class _Ahead:
    """One clean re-check of `patch`, run on a thread; its check is closed when it is dropped,
    and by the caller after it is used."""

    patch: str
    check: CleanCheck
    _thread: threading.Thread | None = None
    _run: TestRun | None = None
    _error: BaseException | None = field(default=None, repr=False)

    def start(self, *, test_cmd: str, timeout_s: float | None) -> None:
        def verify() -> None:
            try:
                self._run = self.check.verify(self.patch, test_cmd=test_cmd, timeout_s=timeout_s)
            except BaseException as exc:  # noqa: BLE001 - raised again by result(), if used
                self._error = exc

        self._thread = threading.Thread(target=verify, name="verify-ahead", daemon=True)
        self._thread.start()

    def result(self) -> TestRun:
        """The re-run's outcome (its error raised here); closing its check is the caller's."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._run is not None
        return self._run

    def discard(self) -> None:
        """Not used: its container goes at once (a run still under way, as when Ctrl-C ends
        the working copy's, is not waited for), then its check is closed."""
        with self.check:
            self.check.cancel()
            if self._thread is not None:
                self._thread.join()


def verify_patch(
    *,
    spec: BoxSpec,
    workspace: Workspace,
    patch: str,
    test_cmd: str,
    work_dir: Path,
    timeout_s: float | None = None,
) -> TestRun:
    """Apply `patch` to a clean export of the snapshot and run the whole test command there, in
    a fresh sandbox as `spec` describes."""
    check = CleanCheck(spec=spec, workspace=workspace, work_dir=work_dir)
    with check:
        return check.verify(patch, test_cmd=test_cmd, timeout_s=timeout_s)
