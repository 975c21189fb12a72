"""Reports written by real Node test runners (tests/data/node_reports/, README.md there says how)
read into the summary the verdict reads: the same ids for the same tests, whatever the version."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.container.results import CommandResult
from sandbox.ecosystems.node import reports
from sandbox.ecosystems.node.reports import parse_report
from sandbox.testrun.junit import TestSummary
from sandbox.testrun.verdict import judge_run

DATA = Path(__file__).parent / "data" / "node_reports"


def read(name: str, fmt: str) -> TestSummary:
    return parse_report(fmt, (DATA / name).read_bytes())


MEAN = "stats > mean > of one number"
VITEST = {
    "test/broken.test.js": "error",
    f"test/mean.test.js::{MEAN}": "failed",
    "test/mean.test.js::stats > mean > of nothing": "skipped",
    "test/mean.test.js::stats > adds": "passed",
    'test/mean.test.js::top level <&> "quoted"': "passed",
    "test/other.test.js::throws": "failed",
}
JEST = {
    f"__tests__/mean.test.js::{MEAN}": "failed",
    "__tests__/mean.test.js::stats > mean > of nothing": "skipped",
    "__tests__/mean.test.js::stats > mean > of strings": "skipped",  # it.todo
    "__tests__/mean.test.js::stats > adds": "passed",
    '__tests__/mean.test.js::top level <&> "quoted"': "passed",
    "__tests__/broken.test.js": "error",
    "__tests__/other.test.js::throws": "failed",
}
MOCHA = {
    'test/mean.test.js::top level <&> "quoted"': "passed",
    "test/mean.test.js::stats adds": "passed",
    "test/mean.test.js::stats mean of nothing": "skipped",
    "test/mean.test.js::stats mean of strings": "skipped",
    "test/other.test.js::throws": "failed",
    "test/mean.test.js::stats mean of one number": "failed",
    # A `before all` hook that threw: the error of the test it ran for.
    "test/other.test.js::hooks never runs": "error",
}
NODE_TEST = {
    "test/broken.test.js": "error",
    f"test/mean.test.js::{MEAN}": "failed",
    "test/mean.test.js::stats > mean > of nothing": "skipped",
    "test/mean.test.js::stats > mean > of strings": "skipped",  # todo, failing: not a failure
    "test/mean.test.js::stats > adds": "passed",
    'test/mean.test.js::top level <&> "quoted"': "passed",
    "test/mean.test.js::with subtests > inner passes": "passed",
    "test/mean.test.js::with subtests > inner fails": "failed",
}


@pytest.mark.parametrize("version", ["1", "3", "4"])
def test_vitest_junit_names_tests_by_file_and_titles_in_every_version(version):
    summary = read(f"vitest-{version}.xml", "vitest-junit")
    assert dict(summary.outcomes) == VITEST
    assert (summary.passed, summary.failed, summary.errors, summary.skipped) == (2, 2, 1, 1)
    failure = next(f for f in summary.failures if f.test_id.endswith(MEAN))
    assert failure.message == "expected 2 to be 4 // Object.is equality"
    assert "test/mean.test.js:8:25" in failure.traceback
    assert "computing the mean of [4]" in failure.output  # what the test printed


@pytest.mark.parametrize("version", ["29", "30"])
def test_jest_json_names_tests_by_describe_titles_and_a_broken_file_by_its_path(version):
    summary = read(f"jest-{version}.json", "jest-json")
    assert dict(summary.outcomes) == JEST
    broken = next(f for f in summary.failures if f.test_id == "__tests__/broken.test.js")
    assert broken.kind == "error"
    assert broken.message.startswith("Cannot find module 'left-pad-not-installed'")
    failure = next(f for f in summary.failures if f.test_id.endswith(MEAN))
    assert "Expected: 4" in failure.traceback and "Received: 2" in failure.traceback
    # The test's own frame stays; jest's and node's own frames go.
    assert "/workspace/__tests__/mean.test.js:7:25" in failure.traceback
    assert "node_modules" not in failure.traceback and "node:internal" not in failure.traceback


@pytest.mark.parametrize("version", ["10", "11"])
def test_mocha_json_names_tests_by_full_title_and_a_failing_hook_by_its_test(version):
    summary = read(f"mocha-{version}.json", "mocha-json")
    assert dict(summary.outcomes) == MOCHA
    hook = next(f for f in summary.failures if f.test_id.endswith("hooks never runs"))
    assert hook.message == "Error: setup broke" and "test/other.test.js:2:30" in hook.traceback


def test_mocha_xunit_gives_the_same_ids_as_its_json():
    summary = read("mocha-11-xunit.xml", "mocha-xunit")
    assert set(summary.outcomes) == set(MOCHA)
    assert summary.outcome_of("test/mean.test.js::stats mean of one number") == "failed"


@pytest.mark.parametrize("major", ["18", "20", "22", "24"])
def test_our_node_test_reporter_names_each_test_by_file_on_every_node(major):
    summary = read(f"node-test-{major}.xml", "node-test-junit")
    assert dict(summary.outcomes) == NODE_TEST
    # The run's token, from its environment, is in the report: the verdict checks it.
    token = (DATA / f"node-test-{major}.token").read_text()
    assert summary.properties == {"worker_run_token": token}
    broken = next(f for f in summary.failures if f.test_id == "test/broken.test.js")
    assert broken.kind == "error"
    assert broken.message == "Error: Cannot find module 'left-pad-not-installed'"
    assert "MODULE_NOT_FOUND" in broken.output  # what the dead file printed
    failure = next(f for f in summary.failures if f.test_id.endswith(MEAN))
    assert failure.message == "Expected values to be strictly equal:\n\n2 !== 4"
    assert "/workspace/test/mean.test.js:9:14" in failure.traceback


def test_nodes_own_junit_names_the_file_from_node_24_only():
    with_file = read("node-junit-24.xml", "node-junit")
    assert dict(with_file.outcomes) == NODE_TEST
    for major in ("20", "22"):
        without = read(f"node-junit-{major}.xml", "node-junit")
        assert f"::{MEAN}" in without.outcomes and "test/broken.test.js" in without.outcomes
        assert not any(k.startswith("test/mean.test.js") for k in without.outcomes)


def test_node_tap_from_tap_names_files_subtests_and_skipped_subtests():
    summary = read("tap-21.tap", "tap")
    assert dict(summary.outcomes) == {
        f"test/mean.test.js::{MEAN}": "failed",
        "test/mean.test.js::stats > mean > of nothing": "skipped",
        "test/mean.test.js::stats > adds": "passed",
        'test/mean.test.js::top level <&> "quoted"': "passed",
        "test/other.test.js::throws": "failed",
    }
    failure = next(f for f in summary.failures if f.test_id.endswith(MEAN))
    assert failure.message == "should be equal" and "lineNumber: 7" in failure.traceback


def test_ava_tap_names_tests_by_their_titles():
    summary = read("ava-6.tap", "ava-tap")
    assert dict(summary.outcomes) == {
        "::mean › mean of nothing": "skipped",
        "::mean › mean of strings": "skipped",
        "::mean › mean of one number": "failed",
        "::mean › adds": "passed",
        '::mean › top level <&> "quoted"': "passed",
        "::other › throws": "failed",
    }
    thrown = next(f for f in summary.failures if f.test_id == "::other › throws")
    assert thrown.message == "Error thrown in test" and "boom" in thrown.traceback


def test_tape_names_tests_by_comment_and_a_test_the_process_died_in_is_an_error():
    summary = read("tape-5.tap", "tape")
    assert dict(summary.outcomes) == {
        "::mean of one number": "failed",
        "::adds": "passed",
        "::nested adds": "passed",
        '::top level <&> "quoted"': "passed",
        "::throws": "error",  # it threw, tape died, no plan followed
    }
    assert not judge_run(_Run(summary, exit_code=1)).passed


FORMATS = sorted(reports.PARSERS)
OTHER_FORMAT_FILE = {
    "vitest-junit": "jest-29.json",
    "node-junit": "tape-5.tap",
    "node-test-junit": "mocha-11.json",
    "uvu-junit": "jest-29.json",
    "tape-junit": "tape-5.tap",
    "mocha-xunit": "ava-6.tap",
    "jest-json": "mocha-11.json",
    "mocha-json": "jest-29.json",
    "tap": "jest-29.json",
    "ava-tap": "vitest-3.xml",
    "tape": "node-test-20.xml",
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_report_of_another_format_or_an_empty_one_is_refused(fmt):
    """What the runner did not write as asked (a crash left it empty, the tests wrote
    something else there) is no report: ValueError, and the verdict refuses the run."""
    with pytest.raises(ValueError):
        parse_report(fmt, b"")
    with pytest.raises(ValueError):
        parse_report(fmt, (DATA / OTHER_FORMAT_FILE[fmt]).read_bytes())


def test_a_json_report_over_the_cap_is_refused_as_too_large():
    with pytest.raises(ValueError, match="too large"):
        parse_report("jest-json", b" " * (reports.MAX_JSON_BYTES + 1))


class _Run:
    """A run as the verdict reads it, around a parsed report."""

    def __init__(self, summary: TestSummary, *, exit_code: int) -> None:
        self.summary = summary
        self.result = CommandResult(
            command="npm test",
            exit_code=exit_code,
            duration_s=1.0,
            timed_out=False,
            oom_killed=False,
            output="",
            output_bytes=0,
            truncated=False,
        )
        self.expects_junit = True
        self.token = None
        self.junit_error = ""
        self.report_kind = "tape TAP"
