"""The verdict: the one place that decides whether a test run is a pass.

Two questions, two functions:
- `judge_run(run)`: did this run, on its own, pass? With a JUnit report expected (pytest), that
  needs the report this run's pytest wrote (stamped with the run's token), no failure or error
  in it, at least one test passed, and an exit code that agrees with it. Without one (a custom
  test command), the exit code alone decides, and the verdict says so.
- `judge(run, baseline=..., patch=...)`: is this run the fix of the baseline? On top of the
  above: every test that failed at baseline ran and passed (found by id: not skipped, not
  deselected, not missing), every test that passed at baseline still passes, no fewer tests were
  collected, the run changed no test fixture the baseline run left alone, and the patch does not
  reach into the test runner.

The loop's own "the tests pass now", the clean re-run and `worker sandbox run-tests` all ask here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from sandbox.container.results import CommandResult
from sandbox.testrun.junit import TestSummary
from sandbox.worktree.diff import diff_lines

#: Files that Python would import in place of the test runner, or at start-up.
SHADOWING_NAMES = frozenset(
    {"pytest.py", "py.py", "pluggy.py", "sitecustomize.py", "usercustomize.py", "unittest.py"}
)
SHADOWING_DIRS = frozenset({"pytest", "_pytest", "pluggy", "py", "unittest", "node_modules"})

#: The JUnit property our pytest plugin (sandbox/ecosystems/python/junit_stamp.py) writes the run's
#: token to.
TOKEN_PROPERTY = "worker_run_token"

Rule = Literal["junit", "exit_code_only"]
RULE_TEXT = {
    "junit": "verified by the {kind} report of the run, test by test against the baseline",
    "exit_code_only": "verified by exit code only (the test command wrote no JUnit report)",
}
MAX_REASONS_SHOWN = 6

# Added lines of a patch that reach into the test runner instead of fixing the code: stopping
# the process, rewriting pytest, writing the report, tracing the interpreter; in Node, ending
# or hooking the process, reaching into the runners or the module loader.
TAMPERING = re.compile(
    r"\bos\s*\.\s*_exit\b|\b_pytest\b|\bpytest\b|junit|\bsys\s*\.\s*(settrace|setprofile)\b"
    r"|\batexit\b|PYTEST_"
    r"|\bprocess\s*\.\s*(exit|reallyExit|exitCode|abort|kill|on|once)\b"
    r"|\b(vitest|jest|mocha|node:test)\b|\brequire\s*\.\s*cache\b|\bModule\s*\._",
    re.IGNORECASE,
)


class JudgedRun(Protocol):
    """What the verdict reads of a test run; `sandbox.testrun.run.TestRun` is one. The verdict names
    only these fields, so that it sits below the test run it judges instead of importing it."""

    @property
    def result(self) -> CommandResult: ...

    @property
    def summary(self) -> TestSummary | None: ...

    @property
    def expects_junit(self) -> bool: ...

    @property
    def token(self) -> str | None: ...

    @property
    def junit_error(self) -> str: ...

    @property
    def report_kind(self) -> str: ...  # the report's name in the user's words: "JUnit"


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Pass or not, the rule that decided, and (when not a pass) every reason, in words."""

    passed: bool
    rule: Rule
    reasons: tuple[str, ...] = ()
    report_kind: str = "JUnit"  # the per-test report the rule read ("jest JSON")

    def describe(self) -> str:
        """One line: which rule verified it, or why it is not a pass."""
        if self.passed:
            return RULE_TEXT[self.rule].format(kind=self.report_kind)
        shown = list(self.reasons[:MAX_REASONS_SHOWN])
        more = len(self.reasons) - len(shown)
        if more > 0:
            shown.append(f"and {more} more")
        return "not a pass: " + "; ".join(shown)

    def to_dict(self) -> dict[str, object]:
        return {"passed": self.passed, "rule": self.rule, "reasons": list(self.reasons)}


def judge_run(run: JudgedRun) -> Verdict:
    """Did this run, on its own, pass? (See the module docstring for the rules.)"""
    result, summary, kind = run.result, run.summary, run.report_kind
    reasons: list[str] = []
    if not result.finished:
        reasons.append(f"the tests did not finish: {result.describe()}")
    if not run.expects_junit:
        if result.exit_code != 0 and not reasons:
            reasons.append(f"the test command failed (exit {result.exit_code})")
        return Verdict(passed=not reasons, rule="exit_code_only", reasons=tuple(reasons))
    if summary is None:
        reasons.append(
            f"the {run.report_kind} report was not read: {run.junit_error}"
            if run.junit_error
            else f"the test run wrote no {run.report_kind} report (exit {result.exit_code}): "
            "the test process stopped before its runner finished"
        )
        return Verdict(passed=False, rule="junit", reasons=tuple(reasons), report_kind=kind)
    if run.token is not None and summary.properties.get(TOKEN_PROPERTY) != run.token:
        reasons.append(
            f"the {run.report_kind} report was not written by this run's test runner "
            "(its token is wrong)"
        )
    failing = summary.failed + summary.errors
    if failing:
        reasons.append(f"{summary.failed} failed and {summary.errors} errors in the report")
    elif summary.passed == 0:
        reasons.append("no test passed")
    if failing and result.exit_code == 0:
        reasons.append("the report says tests failed, yet the command exited 0")
    if not failing and result.exit_code != 0 and not result.timed_out:
        reasons.append(f"the report says passed, yet the command exited {result.exit_code}")
    return Verdict(passed=not reasons, rule="junit", reasons=tuple(reasons), report_kind=kind)


def judge(run: JudgedRun, *, baseline: JudgedRun | None, patch: str = "") -> Verdict:
    """Is `run` (the whole suite, after `patch`) the fix of `baseline`? See the module docstring."""
    alone = judge_run(run)
    reasons = list(alone.reasons)
    if baseline is not None and baseline.summary is not None:
        if run.summary is None:
            if not run.expects_junit:
                reasons.append("the baseline had a JUnit report and this run has none")
        else:
            reasons += _against_baseline(run.summary.outcomes, baseline)
            if run.summary.total < baseline.summary.total:
                reasons.append(
                    f"fewer tests were collected than at baseline "
                    f"({run.summary.total} < {baseline.summary.total})"
                )
    if baseline is not None:
        reasons += _fixtures_changed(run, baseline)
    reasons += tampering(patch)
    return Verdict(
        passed=not reasons, rule=alone.rule, reasons=tuple(reasons), report_kind=alone.report_kind
    )


def _fixtures_changed(run: JudgedRun, baseline: JudgedRun) -> list[str]:
    """Test fixtures this run rewrote (put back since) that the baseline run left as they were:
    a pass that may rest on changed test data (sandbox/worktree/fixture_guard.py)."""
    changed = [
        f for f in run.result.fixtures_put_back if f not in baseline.result.fixtures_put_back
    ]
    if not changed:
        return []
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return [f"the run changed test fixtures that the tests alone leave as they are: {shown}"]


def _against_baseline(outcomes: Mapping[str, str], baseline: JudgedRun) -> list[str]:
    assert baseline.summary is not None
    reasons: list[str] = []
    for test_id in baseline.summary.failing_ids():
        if "::" not in test_id:  # a file that failed to collect: its tests must run and pass
            under = {k: v for k, v in outcomes.items() if k.startswith(test_id + "::")}
            if outcomes.get(test_id) in ("failed", "error"):
                reasons.append(f"{test_id} still fails to collect")
            elif not under:
                reasons.append(f"{test_id} failed to collect at baseline and none of its tests ran")
            elif any(v != "passed" for v in under.values()):
                reasons.append(f"not every test of {test_id} passes")
            continue
        outcome = outcomes.get(test_id)
        if outcome != "passed":
            now_text = "did not run" if outcome is None else f"is {outcome}"
            reasons.append(f"{test_id} failed at baseline and {now_text} now")
    for test_id, outcome in baseline.summary.outcomes.items():
        if outcome == "passed" and outcomes.get(test_id) != "passed":
            now_text = "is missing" if test_id not in outcomes else f"is {outcomes[test_id]}"
            reasons.append(f"{test_id} passed at baseline and {now_text} now")
    return reasons


def tampering(patch: str) -> list[str]:
    """Added lines of `patch` that reach into the test runner, and files that would shadow it
    (a `pytest.py` that `python -m pytest` would import instead of pytest), as reasons."""
    found = []
    path = "?"
    for line in diff_lines(patch):
        if line.kind == "new":
            path = line.text
            if _shadows_runner(path):
                found.append(
                    f"the patch adds {path}, which would be imported instead of the "
                    "test runner or at interpreter start"
                )
        elif line.kind == "added" and TAMPERING.search(line.text):
            found.append(
                f"the patch reaches into the test runner in {path}: {line.text.strip()[:80]!r}"
            )
    return found


def _shadows_runner(path: str) -> bool:
    parts = path.split("/")
    return (
        parts[-1] in SHADOWING_NAMES
        or parts[-1].endswith(".pth")
        or (len(parts) > 1 and parts[0] in SHADOWING_DIRS)
        or "node_modules" in parts[:-1]  # a runner or a dependency, at any depth
    )
