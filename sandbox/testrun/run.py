"""Run a repository's tests in a sandbox and summarise them from JUnit XML, not from text."""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from sandbox.container.base import Sandbox
from sandbox.container.results import CommandResult
from sandbox.errors import SandboxUsageError
from sandbox.testrun.junit import TestSummary, parse_junit
from sandbox.testrun.verdict import Verdict, judge_run

DEFAULT_TEST_CMD = "python -m pytest"
# JUnit with what failing tests printed and logged (not passing ones: the report stays small).
PYTEST_FLAGS = (
    "-q -p no:cacheprovider -o junit_family=xunit1 -o junit_logging=all "
    "-o junit_log_passing_tests=false"
)
STAMP_MODULE = "worker_junit_stamp"


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

    def headline(self) -> str:
        """One line: counts, or how the command ended when there are none."""
        if self.result.timed_out or self.result.oom_killed or self.result.disk_exceeded:
            return f"tests did not finish: {self.result.describe()}"
        if self.summary is None:
            verdict = "passed" if self.passed else "failed"
            missing = "no JUnit report: not a pass" if self.expects_junit else "no JUnit report"
            if self.junit_error:
                missing = f"JUnit report not read: {self.junit_error}"
            return f"test command {verdict} ({self.result.describe()}; {missing})"
        s = self.summary
        return (
            f"{s.passed} passed, {s.failed} failed, {s.errors} errors, {s.skipped} skipped "
            f"in {self.result.duration_s:.1f}s"
        )

    def render(self, *, max_failures: int = 10, output_chars: int = 3000) -> str:
        """A compact report: the headline, failing ids with trimmed tracebacks, output tail."""
        lines = [self.headline()]
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
        return "\n".join(lines)


def is_pytest(test_cmd: str) -> bool:
    """True for commands that run pytest, so JUnit XML can be asked for."""
    words = shlex.split(test_cmd)
    return any(Path(w).name in ("pytest", "py.test") for w in words) or "pytest" in words


def detect_test_command(workspace: Path) -> str:
    """The test command to use when none is given: pytest for Python projects."""
    markers = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py")
    if any((workspace / m).exists() for m in markers) or any(workspace.glob("**/*.py")):
        return DEFAULT_TEST_CMD
    raise SandboxUsageError(f"cannot tell how to run the tests of {workspace}: pass --test-cmd")


def validate_test_ids(test_ids: Sequence[str]) -> list[str]:
    """Test ids as arguments: refuse anything that would be read as an option."""
    clean = []
    for test_id in test_ids:
        if not test_id or test_id.startswith("-") or "\0" in test_id or "\n" in test_id:
            raise ValueError(f"not a test id: {test_id!r} (expected e.g. tests/test_x.py::test_y)")
        clean.append(test_id)
    return clean


_SHELL = re.compile(r"[;&|$`()<>\n]")


def narrowed(command: str, test_ids: Sequence[str]) -> str:
    """`command` without the paths it names that hold every test asked for: with `pytest
    tests` and the id `tests/test_a.py::test_x`, only that test runs, not the folder besides.

    >>> narrowed("python -m pytest toolz/tests -q", ["toolz/tests/test_a.py::test_x"])
    'python -m pytest -q'
    >>> narrowed("python -m pytest tests", ["other/test_b.py::test_y"])
    'python -m pytest tests'
    >>> narrowed("python -m pytest pytest", ["pytest/test_c.py"])
    'python -m pytest'

    A command with shell syntax in it is left as it is."""
    if _SHELL.search(command):
        return command
    words = shlex.split(command)

    def holds(path: str) -> bool:
        folder = path.rstrip("/") + "/"
        return all(t == path or t.startswith((folder, path + "::")) for t in test_ids)

    runner = next((i for i, w in enumerate(words) if Path(w).name in ("pytest", "py.test")), None)
    if runner is None:
        return command
    rest = [w for w in words[runner + 1 :] if w.startswith("-") or not holds(w)]
    kept = words[: runner + 1] + rest
    return command if len(kept) == len(words) else shlex.join(kept)


def run_tests(
    box: Sandbox,
    *,
    test_cmd: str = DEFAULT_TEST_CMD,
    test_ids: Sequence[str] = (),
    timeout_s: float | None = None,
) -> TestRun:
    """Run the test command (or the given test ids) and parse its JUnit report."""
    ids = validate_test_ids(test_ids)
    junit = token = None
    command = test_cmd
    env: dict[str, str] = {}
    if is_pytest(test_cmd):
        junit = f"/tmp/worker-junit-{secrets.token_hex(4)}.xml"
        token = secrets.token_hex(16)
        plugin = box.stage(STAMP_MODULE + ".py", _stamp_plugin())
        env = {"WORKER_RUN_TOKEN": token, "PYTHONPATH": plugin.rsplit("/", 1)[0]}
        command = f"{test_cmd} {PYTEST_FLAGS} -p {STAMP_MODULE} --junitxml={junit}"
    if ids:
        command = f"{narrowed(command, ids)} {' '.join(shlex.quote(t) for t in ids)}"
    if junit:
        command = f"rm -f {junit}; {command}"
    result = box.run(command, timeout_s=timeout_s, capture_file=junit, env=env)
    summary = None
    junit_error = result.capture_error
    if result.captured:
        try:
            summary = parse_junit(result.captured)
        except ValueError as exc:
            junit_error = str(exc)
    return TestRun(
        command=command,
        result=result,
        summary=summary,
        expects_junit=junit is not None,
        token=token,
        junit_error=junit_error,
        test_ids=tuple(ids),
        test_cmd=test_cmd,
    )


def _stamp_plugin() -> bytes:
    return resources.files("sandbox.ecosystems.python").joinpath("junit_stamp.py").read_bytes()
