"""Run a repository's tests in a sandbox and summarise them from JUnit XML, not from text."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sandbox.container.base import Sandbox
from sandbox.container.results import CommandResult
from sandbox.ecosystems import ecosystem_running
from sandbox.ecosystems.base import Instrumented
from sandbox.testrun.ids import validate_test_ids
from sandbox.testrun.junit import TestSummary
from sandbox.testrun.steady import steady
from sandbox.testrun.verdict import Verdict, judge_run


@dataclass(frozen=True, kw_only=True)
class TestRun:
    """One run of the test command: how the command ended and, where JUnit XML came back, why."""

    __test__ = False  # not a pytest test class, whatever its name

    command: str  # what ran: the test command with our flags
    result: CommandResult
    summary: TestSummary | None
    expects_junit: bool = False  # pytest was asked for a JUnit report
    # What our plugin (sandbox/ecosystems/python/junit_stamp.py) stamps into that report.
    token: str | None = None
    junit_error: str = ""  # why a report that was written was not read (too large, not JUnit)
    test_ids: tuple[str, ...] = ()  # the tests asked for; () is the whole suite
    test_cmd: str = ""  # the test command as configured, before our flags
    report_kind: str = "JUnit"  # the per-test report's name in the user's words

    @property
    def verdict(self) -> Verdict:
        """This run judged on its own (sandbox/testrun/verdict.py); against a baseline:
        `verdict.judge`."""
        return judge_run(self)

    @property
    def passed(self) -> bool:
        return self.verdict.passed

    def failing(self, among: Sequence[str] = ()) -> float:
        """How many tests failed, by the report; of the tests `among` names (by default, in a
        run of some tests by id, those), how many did not pass: one whose file failed to
        collect is one. A run without a readable report counts as worst (infinity), so that
        any run with a report compares as better."""
        if self.summary is None:
            return float("inf")
        ids = among or self.test_ids
        if ids:
            outcome = self.summary.outcome_of
            return float(sum(outcome(t) != "passed" for t in dict.fromkeys(ids)))
        return float(len(self.summary.failures))

    def failure_texts(self) -> Iterator[tuple[str, str]]:
        """(where, text) for each failing test (its message, traceback and output), or the
        whole command's output when no report names one: what a reader of failures scans."""
        summary = self.summary
        if summary is not None and summary.failures:
            for failure in summary.failures:
                yield (
                    failure.test_id,
                    "\n".join((failure.message, failure.traceback or "", failure.output or "")),
                )
        elif not self.passed:
            yield "the test command", self.result.output

    def to_dict(self) -> dict[str, Any]:
        """This run as plain data: the same fields in report.json and `run-tests --json`."""
        s, result = self.summary, self.result
        return {
            "passed": self.passed,
            "headline": self.headline(),
            "verdict": self.verdict.describe(),
            "command": self.command,
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "oom_killed": result.oom_killed,
            "duration_s": round(result.duration_s, 3),
            "junit": s is not None,
            "counts": None
            if s is None
            else {"passed": s.passed, "failed": s.failed, "errors": s.errors, "skipped": s.skipped},
            "failing": [] if s is None else s.failing_ids(),
            "log": str(result.log_path) if result.log_path else None,
            "fixtures_put_back": list(result.fixtures_put_back),
        }

    def headline(self, *, clock: bool = True) -> str:
        """One line: counts, or how the command ended when there are none; `clock`: with the
        seconds it took (not for the model: sandbox/testrun/steady.py)."""
        ended = self.result.describe() if clock else self.result.describe_ending()
        if not self.result.finished:
            return f"tests did not finish: {ended}"
        if self.summary is None:
            verdict = "passed" if self.passed else "failed"
            kind = self.report_kind
            missing = f"no {kind} report: not a pass" if self.expects_junit else "no JUnit report"
            if self.junit_error:
                missing = f"{kind} report not read: {self.junit_error}"
            return f"test command {verdict} ({ended}; {missing})"
        s = self.summary
        took = f" in {self.result.duration_s:.1f}s" if clock else ""
        return f"{s.passed} passed, {s.failed} failed, {s.errors} errors, {s.skipped} skipped{took}"

    def render(
        self, *, max_failures: int = 10, output_chars: int = 3000, for_model: bool = True
    ) -> str:
        """A compact report: the headline, failing ids with trimmed tracebacks, output tail.
        `for_model`: the same text for the same outcome, run after run (steady.py): no clock,
        no addresses; False keeps them, for a person."""
        lines = [self.headline(clock=not for_model)]
        if self.summary is not None:
            for failure in self.summary.failures[:max_failures]:
                lines.append(f"\n{failure.kind.upper()} {failure.test_id}: {failure.message}")
                if failure.traceback:
                    lines.append(failure.traceback)
                if failure.output:
                    lines.append(failure.output)
            more = len(self.summary.failures) - max_failures
            if more > 0:
                lines.append(f"\n[... {more} more failing tests not shown ...]")
        if self.summary is None or self.summary.total == 0 or not self.summary.failures:
            if not self.passed and self.result.output:
                lines.append("\noutput (tail):\n" + self.result.output[-output_chars:])
        text = "\n".join(lines)
        return steady(text) if for_model else text


def run_tests(
    box: Sandbox,
    *,
    test_cmd: str,
    test_ids: Sequence[str] = (),
    timeout_s: float | None = None,
) -> TestRun:
    """Run the test command (or the given test ids) and read the per-test report its
    ecosystem's runner writes (sandbox/ecosystems/): JUnit for pytest, the runner's own for
    vitest, jest, mocha, node --test; none for a command no ecosystem knows (exit code only)."""
    ids = validate_test_ids(test_ids)
    ecosystem = ecosystem_running(test_cmd)
    how = (
        ecosystem.instrument(
            test_cmd, ids, workspace=box.workspace, stage=box.stage, root=_workspace_in(box)
        )
        if ecosystem is not None
        else None
    )
    if how is None:
        command = test_cmd
        if ids:
            command = f"{command} {' '.join(shlex.quote(t) for t in ids)}"
        how = Instrumented(command=command)
    result = box.run(
        how.command, timeout_s=timeout_s, capture_file=how.report_path, env=dict(how.env)
    )
    summary = None
    junit_error = result.capture_error
    if result.captured and how.read_report is not None:
        try:
            summary = how.read_report(result.captured)
        except ValueError as exc:
            junit_error = str(exc)
    return TestRun(
        command=how.command,
        result=result,
        summary=summary,
        expects_junit=how.report_path is not None,
        token=how.token,
        junit_error=junit_error,
        test_ids=tuple(ids),
        test_cmd=test_cmd,
        report_kind=how.report_kind,
    )


def _workspace_in(box: Sandbox) -> str:
    """Where the box's commands see the workspace (the root of the paths in a report)."""
    return "/workspace" if box.isolation_label == "docker" else str(box.workspace)
