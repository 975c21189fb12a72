"""The verdict's rules, in-process: each way a run can look green without being a fix is refused."""

from __future__ import annotations

import dataclasses

import pytest

from sandbox.container.results import CommandResult
from sandbox.testrun.junit import parse_junit
from sandbox.testrun.run import TestRun
from sandbox.testrun.verdict import judge, judge_run, tampering

TOKEN = "t0k3n"


def junit(cases: dict[str, str], *, token: str | None = TOKEN) -> bytes:
    """A pytest-style xunit1 report: {test id: outcome}; a file id alone is a collection error."""
    body = []
    for test_id, outcome in cases.items():
        file, _, rest = test_id.partition("::")
        if rest:
            *classes, name = rest.split("::")
            classname = ".".join([file[:-3].replace("/", "."), *classes])
        else:
            classname, name = "", file[:-3].replace("/", ".")
        inner = {
            "passed": "",
            "failed": '<failure message="assert 1 == 2">tb</failure>',
            "error": '<error message="boom">tb</error>',
            "skipped": '<skipped message="skip"/>',
        }[outcome]
        body.append(
            f'<testcase classname="{classname}" name="{name}" file="{file}">{inner}</testcase>'
        )
    props = (
        f'<properties><property name="worker_run_token" value="{token}"/></properties>'
        if token
        else ""
    )
    suite = f'<testsuite name="pytest">{props}{"".join(body)}</testsuite>'
    return f"<testsuites>{suite}</testsuites>".encode()


def run(
    cases: dict[str, str] | None,
    *,
    exit_code: int | None = None,
    token: str | None = TOKEN,
    expects_junit: bool = True,
    timed_out: bool = False,
) -> TestRun:
    summary = None if cases is None else parse_junit(junit(cases, token=token))
    if exit_code is None:
        exit_code = 1 if cases is None or set(cases.values()) & {"failed", "error"} else 0
    result = CommandResult(
        command="python -m pytest",
        exit_code=exit_code,
        duration_s=0.1,
        timed_out=timed_out,
        oom_killed=False,
        output="",
        output_bytes=0,
        truncated=False,
    )
    return TestRun(
        command="python -m pytest",
        result=result,
        summary=summary,
        expects_junit=expects_junit,
        token=TOKEN if expects_junit else None,
    )


BASE = {"tests/test_a.py::test_fixed": "failed", "tests/test_a.py::test_kept": "passed"}
FIXED = {"tests/test_a.py::test_fixed": "passed", "tests/test_a.py::test_kept": "passed"}


def test_a_real_fix_passes_by_the_junit_rule():
    verdict = judge(run(FIXED), baseline=run(BASE))
    assert verdict.passed and verdict.rule == "junit" and not verdict.reasons
    assert "JUnit" in verdict.describe()


def test_exit_zero_without_a_junit_report_is_not_a_pass():
    # os._exit(0) at import of the module under test: pytest never writes its report.
    verdict = judge(run(None, exit_code=0), baseline=run(BASE))
    assert not verdict.passed
    assert "no JUnit report" in verdict.describe()


def test_a_report_too_large_to_read_is_not_a_pass_and_says_so():
    too_large = "/tmp/worker-junit-1.xml is too large (over 512 MiB)"
    unread = dataclasses.replace(run(None, exit_code=0), junit_error=too_large)
    verdict = judge(unread, baseline=run(BASE))
    assert not verdict.passed
    assert verdict.describe() == f"not a pass: the JUnit report was not read: {too_large}"
    assert unread.headline().endswith(f"JUnit report not read: {too_large})")


def test_a_report_without_this_runs_token_is_forged():
    verdict = judge(run(FIXED, token="guessed"), baseline=run(BASE))
    assert not verdict.passed and "token" in verdict.describe()
    assert not judge_run(run(FIXED, token=None)).passed


def test_a_report_that_failed_with_exit_zero_is_not_a_pass():
    verdict = judge_run(run(BASE, exit_code=0))
    assert not verdict.passed and "exited 0" in verdict.describe()


def test_a_report_that_passed_with_a_nonzero_exit_is_not_a_pass():
    verdict = judge_run(run(FIXED, exit_code=3))
    assert not verdict.passed and "exited 3" in verdict.describe()


def test_a_baseline_failure_now_skipped_is_not_a_fix():
    skipped = {**FIXED, "tests/test_a.py::test_fixed": "skipped"}
    verdict = judge(run(skipped), baseline=run(BASE))
    assert not verdict.passed
    assert "tests/test_a.py::test_fixed failed at baseline and is skipped now" in verdict.reasons


def test_a_baseline_failure_that_vanished_is_not_a_fix():
    gone = {"tests/test_a.py::test_kept": "passed"}
    verdict = judge(run(gone), baseline=run(BASE))
    assert not verdict.passed
    assert "tests/test_a.py::test_fixed failed at baseline and did not run now" in verdict.reasons
    assert any("fewer tests were collected" in r for r in verdict.reasons)


def test_a_test_that_passed_at_baseline_must_still_pass():
    broke = {"tests/test_a.py::test_fixed": "passed", "tests/test_a.py::test_kept": "skipped"}
    verdict = judge(run(broke), baseline=run(BASE))
    assert "tests/test_a.py::test_kept passed at baseline and is skipped now" in verdict.reasons
    missing = {"tests/test_a.py::test_fixed": "passed", "tests/test_a.py::test_new": "passed"}
    verdict = judge(run(missing), baseline=run(BASE))
    assert "tests/test_a.py::test_kept passed at baseline and is missing now" in verdict.reasons


def test_a_collection_error_is_fixed_only_when_its_tests_run_and_pass():
    base = run({"tests/test_a.py": "error"})
    assert judge(run(FIXED), baseline=base).passed
    none_ran = judge(run({"tests/test_b.py::test_x": "passed"}), baseline=base)
    assert "tests/test_a.py failed to collect at baseline and none of its tests ran" in (
        none_ran.reasons
    )


def test_without_junit_the_exit_code_decides_and_says_so():
    custom = run(None, exit_code=0, expects_junit=False)
    verdict = judge(custom, baseline=run(None, exit_code=1, expects_junit=False))
    assert verdict.passed and verdict.rule == "exit_code_only"
    assert verdict.describe() == (
        "verified by exit code only (the test command wrote no JUnit report)"
    )
    assert not judge_run(run(None, exit_code=1, expects_junit=False)).passed


def test_a_run_cut_at_its_time_limit_is_not_a_pass():
    assert not judge_run(run(FIXED, timed_out=True)).passed


def test_a_patch_that_reaches_into_the_test_runner_is_not_a_fix():
    patch = (
        "--- a/calc.py\n+++ b/calc.py\n@@ -1 +1,2 @@\n"
        "+import _pytest.python; _pytest.python.Function.runtest = lambda self: None\n"
        " def mean(v):\n"
    )
    verdict = judge(run(FIXED), baseline=run(BASE), patch=patch)
    assert not verdict.passed and "reaches into the test runner in calc.py" in verdict.describe()


def test_a_patch_that_shadows_pytest_is_not_a_fix():
    patch = "--- /dev/null\n+++ b/pytest.py\n@@ -0,0 +1 @@\n+import sys\n"
    assert any("pytest.py" in reason for reason in tampering(patch))
    assert tampering("--- a/x.pth\n+++ b/x.pth\n@@ -0,0 +1 @@\n+import os\n")


def test_an_ordinary_fix_is_not_called_tampering():
    patch = (
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def mean(values):\n"
        "-    return sum(values) / (len(values) - 1)\n+    return sum(values) / len(values)\n"
    )
    assert tampering(patch) == []


@pytest.mark.parametrize(
    "added",
    [
        "if (values.length === 0) process.exit(0);",
        "process.exitCode = 0;",
        "process.on('exit', () => { process.exitCode = 0; });",
        "require.cache[require.resolve('node:assert')] = {};",
        "const { vi } = require('vitest'); vi.fn();",
        "Module._load = () => ({});",
    ],
)
def test_a_js_patch_that_reaches_into_the_process_or_the_runner_is_not_a_fix(added: str) -> None:
    patch = f"--- a/stats.js\n+++ b/stats.js\n@@ -1 +1,2 @@\n+{added}\n function mean(v) {{\n"
    assert any("reaches into the test runner in stats.js" in r for r in tampering(patch))


def test_a_patch_that_writes_into_node_modules_is_not_a_fix() -> None:
    path = "x/node_modules/chai/index.js"
    patch = f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n"
    assert tampering(patch)


def test_an_ordinary_js_fix_is_not_called_tampering() -> None:
    patch = (
        "--- a/stats.js\n+++ b/stats.js\n@@ -1,3 +1,3 @@\n function mean(values) {\n"
        "-  return total / (values.length - 1);\n+  return total / values.length;\n"
        "   // process the rest; exiting early is for the caller\n"
    )
    assert tampering(patch) == []
