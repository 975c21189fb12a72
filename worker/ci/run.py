"""One `worker ci` run, as named steps: what failed, flaky triage, then (for real failures only)
the fix of `worker fix`. Knows no flags and no exit codes; the report's `ci` part is filled here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.ecosystems import detect_test_command, ecosystem_for, ecosystem_running
from sandbox.prepare import Prepared, run_pending_setup
from sandbox.session import SandboxSession, open_session
from sandbox.testrun.run import TestRun, run_tests
from sandbox.worktree.user_git import user_git
from worker.ci.errors import FlakyOnly, Unverified
from worker.ci.failures import exists_in, read_junit_files
from worker.ci.triage import Triage, triage
from worker.errors import UsageError
from worker.llm.process import ModelProcess
from worker.record.folder import RunFolder
from worker.record.report import tests_dict
from worker.run.fix import NOTHING_TO_FIX, FixRun, check_environment

if TYPE_CHECKING:  # the loop loads on a thread while the sandbox starts (worker/run/preload.py)
    from worker.loop.agent import Agent
    from worker.run.environment import SandboxEnvironment


@dataclass(kw_only=True)
class VerifiedFixRun(FixRun):
    """`worker fix`'s run, keeping the verification's own JUnit report for CI to show."""

    verification_junit: bytes | None = None

    def record(
        self, agent: Agent, env: SandboxEnvironment, model: ModelProcess, baseline: TestRun
    ) -> None:
        super().record(agent, env, model, baseline)
        last = agent.verification
        self.verification_junit = last.run.result.captured if last is not None else None


@dataclass(kw_only=True)
class CiRun:
    """What CI saw failing, triaged; then a fix of the real failures. `run()` returns the reason
    of a good ending and raises on every other; `fix.report.ci` is filled on every path."""

    fix: VerifiedFixRun
    junit: Sequence[Path] = ()
    reruns: int = 2
    allow_exit_code_only: bool = False
    base_branch: str | None = None
    ci: dict[str, Any] = field(default_factory=dict)
    _prepared: Prepared | None = field(default=None, init=False)
    _test_cmd: str | None = field(default=None, init=False)

    def run(self) -> str:
        req = self.fix.request
        self.ci.update(
            source="junit" if self.junit else "sandbox",
            junit_files=[str(p) for p in self.junit],
            reruns=self.reruns,
            head_sha=_head_sha(req.repo),
            branch=self.base_branch or _current_branch(req.repo),
            tests=[],
            verified=False,
            verification_junit=None,
        )
        self.fix.report.ci = self.ci
        failing = self.what_failed()
        if not failing:
            return NOTHING_TO_FIX
        found = self.triage(failing)
        real, flaky = found.ids("failing"), found.ids("flaky")
        if not real:
            if flaky:
                raise FlakyOnly(
                    f"every failing test is flaky (passed at least once in {found.reruns} "
                    f"re-runs): {', '.join(flaky)}; no model call made"
                )
            raise UsageError(
                "none of the failing tests named by the JUnit files is in the repository: "
                + ", ".join(found.ids("unknown"))
            )
        reason = self.fix_real(real, flaky)
        self.check_verified()
        return reason

    def what_failed(self) -> list[str]:
        """From the CI's JUnit files, else from a run of the test command in a fresh sandbox."""
        if self.junit:
            repo = self.fix.request.repo
            ecosystem = ecosystem_for(repo, self.fix.request.config.test_cmd)
            read = (lambda data: ecosystem.read_ci_report(data, repo)) if ecosystem else None
            return list(read_junit_files(self.junit, *([read] if read else [])).failing)
        with self.fresh("baseline") as session:
            test_cmd, timeout_s = self.test_cmd(session), self.fix.request.test_timeout_s
            baseline = run_tests(session.box, test_cmd=test_cmd, timeout_s=timeout_s)
        self.fix.progress.say(f"tests in CI's place: {baseline.headline()}")
        self.ci["baseline"] = tests_dict(baseline)
        if baseline.passed:
            return []
        check_environment(baseline, self.fix.request.repo, self.fix.setup_said, self.fix.ecosystem)
        if baseline.summary is None or not baseline.summary.failing_ids():
            return [baseline.test_cmd]  # no ids to name: the command as a whole failed
        return baseline.summary.failing_ids()

    def triage(self, failing: list[str]) -> Triage:
        """Re-run each failing test `reruns` times, a fresh sandbox each time."""
        started = time.monotonic()
        test_cmd = self._test_cmd or self.test_cmd(None)
        unknown = []
        if self.junit and (ecosystem := ecosystem_running(test_cmd)) is not None:
            unknown = [t for t in failing if not exists_in(self.fix.request.repo, t, ecosystem)]
        if unknown:
            self.fix.progress.say(f"not in the repository (not run): {', '.join(unknown)}")
        self.fix.progress.say(f"flaky triage: {len(failing)} failing, {self.reruns} re-runs each")
        found = triage(
            failing,
            unknown=unknown,
            reruns=self.reruns,
            test_cmd=test_cmd,
            open_fresh=self.fresh,
            timeout_s=self.fix.request.test_timeout_s,
            say=self.fix.progress.say,
        )
        self.ci["tests"] = [t.to_dict() for t in found.tests]
        self.fix.report.durations["triage"] = round(time.monotonic() - started, 3)
        for t in found.tests:
            if t.kind == "flaky":
                self.fix.progress.say(f"flaky: {t.test_id} ({t.passes} passed, {t.fails} failed)")
        return found

    def fix_real(self, real: list[str], flaky: list[str]) -> str:
        """`worker fix` on the real failures; flaky tests are deselected, left alone."""
        req = self.fix.request
        test_cmd = self._test_cmd or self.test_cmd(None)
        ecosystem = ecosystem_running(test_cmd) if flaky else None
        if ecosystem is not None and (deselected := ecosystem.deselect(test_cmd, flaky)):
            test_cmd = deselected
        goal = f"{req.goal}. The failing tests: {', '.join(real)}"
        config = dataclasses.replace(req.config, test_cmd=test_cmd)
        self.fix.request = dataclasses.replace(req, goal=goal, config=config)
        self.fix.report.goal = goal
        try:
            return self.fix.run()
        finally:
            if self.fix.verification_junit:
                path = RunFolder(req.out).junit_path
                path.write_bytes(self.fix.verification_junit)
                self.ci["verification_junit"] = str(path)

    def check_verified(self) -> None:
        """A fix judged by exit code alone is not verified unless the user accepts that."""
        verdict = self.fix.report.verdict or {}
        if self.fix.report.patch is None:
            return
        if verdict.get("rule") == "exit_code_only" and not self.allow_exit_code_only:
            raise Unverified(
                "the tests pass with the patch, verified by exit code only (the test command "
                "wrote no JUnit report); pass --allow-exit-code-only to accept that"
            )
        self.ci["verified"] = True

    # --- sandboxes ---------------------------------------------------------------------------

    def test_cmd(self, session: SandboxSession | None) -> str:
        """The configured test command, else detected on the copy (or the repository)."""
        if self._test_cmd is None:
            config = self.fix.request.config
            where = session.workspace.path if session else self.fix.request.repo
            self._test_cmd = config.test_cmd or detect_test_command(
                where, shown=self.fix.request.repo
            )
        return self._test_cmd

    @contextlib.contextmanager
    def fresh(self, label: str) -> Iterator[SandboxSession]:
        """A fresh sandbox on the unchanged tree (set-up run if the backend could not cache it)."""
        req, config = self.fix.request, self.fix.request.config
        if self._prepared is None:
            self._prepared = self.fix.prepare_sandbox()
        prepared = self._prepared
        with open_session(
            req.repo,
            spec=prepared.spec(limits=config.limits, protect=config.paths.protection),
            run_dir=req.out / "triage" / label,
            output_bytes=config.truncation.max_bytes,
            exclude=req.out,
        ) as session:
            run_pending_setup(prepared, session, timeout_s=config.limits.command_timeout_s)
            yield session


def _head_sha(repo: Path) -> str | None:
    proc = user_git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}")
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def _current_branch(repo: Path) -> str | None:
    proc = user_git(repo, "symbolic-ref", "-q", "--short", "HEAD")
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None
