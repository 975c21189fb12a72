"""Node test runners' own reports, read into the `TestSummary` the verdict reads for pytest.

Test ids: `path::title > nested title > test title`, `path` relative to the workspace (the
sandbox's working copy, /workspace in a container), the titles of the describe blocks (suites)
around the test, outermost first, then the test's own. A test file that failed before any of
its tests ran (an import that threw) is named by its path alone, with outcome "error", as
pytest names a file that failed to collect. The same test has the same id in every run of the
same tree. Two runners' reports give less:
- mocha's JSON names a test by its full title, the titles joined by spaces
  (`test/a.test.js::stats mean of one number`): mocha keeps no other record of the nesting. A
  failing `before`/`after` hook is an error of the test it ran for (mocha names it so).
- ava's TAP names no file: `::mean › adds` (its title, its file's name in front when there are
  several files). tape's TAP names none either (`::test name`, the `# name` comment its
  assertions follow, for a TAP file CI wrote); the sandbox's runs of tape use our reporter
  (worker_tape_reporter.cjs), whose ids have the file: `test/x.js::name`,
  `test/x.js::parent > subtest`.

Formats (keys of PARSERS): vitest's JUnit, Node's own JUnit (CI's, Node 20 and later), our
`node --test` reporter's JUnit (worker_node_test_reporter.mjs: ids written by it), jest's JSON
(`--json`), mocha's JSON and xunit, TAP (node-tap, ava) and tape's TAP. Each refuses (ValueError)
a document that is not of its format: the verdict then refuses the run. XML and TAP are read
as streams; a JSON report is read whole, so one over MAX_JSON_BYTES is refused as too large.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sandbox.ecosystems.node import tap
from sandbox.ecosystems.node.stacks import clean_stack, first_line, relative_to
from sandbox.testrun.junit import MAX_TESTCASES, TestFailure, TestSummary, parse_junit, trim

WORKSPACE = "/workspace"
MAX_JSON_BYTES = 64 * 1024 * 1024
SEPARATOR = " > "
#: jest's statuses as outcomes; "todo", "pending", "skipped", "disabled" are all skips.
_JEST_OUTCOME = {"passed": "passed", "failed": "failed", "focused": "passed"}
_HOOK = re.compile(r'^"(?:before|after) (?:all|each)" hook(?:: .+?)? (for|in) "(.*)"$', re.S)


def parse_report(fmt: str, data: bytes, *, root: str = WORKSPACE) -> TestSummary:
    """The report `data` in format `fmt` (a key of PARSERS); ValueError when it is not one."""
    parser = PARSERS.get(fmt)
    if parser is None:
        raise ValueError(f"no parser for report format {fmt!r}")
    return parser(data, root)


# -- JUnit ----------------------------------------------------------------------------------


def parse_vitest_junit(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """vitest's junit reporter (vitest 1 to 4): classname is the file (relative to vitest's
    root), name the titles joined by " > "; a file that failed to load is a case named by its
    path."""

    def test_id(case: ET.Element, suites: Sequence[ET.Element]) -> str:
        file = relative_to(case.get("classname") or "", root)
        name = case.get("name") or ""
        if name == (case.get("classname") or "") or not name:
            return file
        return f"{file}::{name}"

    return _junit(data, test_id)


def parse_node_junit(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """Node's own junit reporter: describe blocks are nested <testsuite>s; the file is the
    `file` attribute (Node 24 and later; before, there is none and ids start with `::`)."""

    def test_id(case: ET.Element, suites: Sequence[ET.Element]) -> str:
        file = relative_to(case.get("file") or "", root) if case.get("file") else ""
        name = case.get("name") or ""
        titles = [s.get("name") or "" for s in suites]
        if not titles and not file and (name.startswith("/") or name.endswith((".js", ".ts"))):
            return relative_to(name, root)  # a file that failed outside any test
        if not titles and file and relative_to(name, root) == file:
            return file
        return f"{file}::{SEPARATOR.join([*titles, name])}"

    return _junit(data, test_id)


def parse_node_test_junit(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """Our `node --test` reporter's JUnit: each case carries its id (`nodeid`)."""
    return _junit(data, lambda case, _: case.get("nodeid") or "")


def parse_mocha_xunit(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """mocha's xunit reporter: classname is the suite's full title, name the test's; `file` is
    there from mocha 10.1."""

    def test_id(case: ET.Element, suites: Sequence[ET.Element]) -> str:
        file = relative_to(case.get("file") or "", root) if case.get("file") else ""
        parent, name = case.get("classname") or "", case.get("name") or ""
        return f"{file}::{_mocha_title(f'{parent} {name}'.strip(), name)}"

    return _junit(data, test_id)


def _junit(data: bytes, test_id: Callable[..., str]) -> TestSummary:
    """JUnit read with `test_id`; a file's own failure (an id without `::`) is an error, as
    pytest's collection errors are, and a failure without a message gets its first line."""
    summary = parse_junit(data, test_id=test_id)
    outcomes = dict(summary.outcomes)
    failures = []
    for f in summary.failures:
        kind = "error" if "::" not in f.test_id else f.kind
        outcomes[f.test_id] = "error" if kind == "error" else outcomes[f.test_id]
        traceback = clean_stack(f.traceback)
        failures.append(
            TestFailure(
                test_id=f.test_id,
                kind=kind,
                message=f.message or first_line(traceback)[:500],
                traceback=traceback,
                output=f.output,
            )
        )
    errors = sum(v == "error" for v in outcomes.values())
    return TestSummary(
        passed=summary.passed,
        failed=summary.failed + summary.errors - errors,
        errors=errors,
        skipped=summary.skipped,
        failures=tuple(failures),
        outcomes=outcomes,
        properties=summary.properties,
    )


# -- JSON -----------------------------------------------------------------------------------


def parse_jest_json(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """jest's `--json` report: one entry per test file, its tests with their describe titles."""
    doc = _json(data, "jest")
    results = doc.get("testResults")
    if not isinstance(results, list) or "numTotalTests" not in doc:
        raise ValueError("not jest's JSON report: no testResults")
    summary = _Summary()
    for suite in results:
        if not isinstance(suite, dict):
            raise ValueError("not jest's JSON report: a test file that is not an object")
        file = relative_to(str(suite.get("name") or ""), root)
        cases = [c for c in suite.get("assertionResults") or [] if isinstance(c, dict)]
        for case in cases:
            titles = [str(t) for t in case.get("ancestorTitles") or []]
            test_id = f"{file}::{SEPARATOR.join([*titles, str(case.get('title') or '')])}"
            outcome = _JEST_OUTCOME.get(str(case.get("status")), "skipped")
            text = "\n".join(str(m) for m in case.get("failureMessages") or [])
            summary.add(test_id, outcome, text)
        message = str(suite.get("message") or "")
        if suite.get("status") == "failed" and not any(c.get("status") == "failed" for c in cases):
            # The file failed outside its tests: it did not load, or an afterAll threw.
            summary.add(file, "error", message or str(suite.get("failureMessage") or ""))
    return summary.done()


def parse_mocha_json(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """mocha's json reporter (`--reporter json`): passes, pending and failures by full title."""
    doc = _json(data, "mocha")
    if not isinstance(doc.get("stats"), dict) or not isinstance(doc.get("tests"), list):
        raise ValueError("not mocha's JSON report: no stats and tests")
    summary = _Summary()
    for key, outcome in (("passes", "passed"), ("pending", "skipped"), ("failures", "failed")):
        for test in doc.get(key) or []:
            if not isinstance(test, dict):
                raise ValueError("not mocha's JSON report: a test that is not an object")
            file = relative_to(str(test.get("file") or ""), root) if test.get("file") else ""
            title = str(test.get("title") or "")
            full = _mocha_title(str(test.get("fullTitle") or title), title)
            err = test.get("err")
            err = err if isinstance(err, dict) else {}
            hook = full != (str(test.get("fullTitle") or title))
            text = str(err.get("stack") or err.get("message") or "")
            summary.add(f"{file}::{full}", "error" if hook else outcome, text)
    return summary.done()


def _mocha_title(full: str, title: str) -> str:
    """A test's full title; a failing hook's, the test (or suite) it ran for."""
    match = _HOOK.match(title)
    if not match:
        return full
    parent = full[: len(full) - len(title)].strip()
    return parent if match.group(1) == "in" else f"{parent} {match.group(2)}".strip()


def _json(data: bytes, runner: str) -> dict[str, Any]:
    if len(data) > MAX_JSON_BYTES:
        raise ValueError(f"too large: {runner}'s JSON report is over {MAX_JSON_BYTES:,} bytes")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not {runner}'s JSON report: {exc}") from exc
    if not isinstance(doc, dict):
        raise ValueError(f"not {runner}'s JSON report: not an object")
    return doc


# -- TAP ------------------------------------------------------------------------------------


def parse_node_tap(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """node-tap's raw TAP (`--output-file`): each file a top-level subtest."""
    summary = _Summary()
    for test in tap.tests(data, files_at_top=True):
        file = relative_to(test.path[0], root) if test.path else ""
        names = test.path[1:]
        summary.add(f"{file}::{SEPARATOR.join(names)}" if names else file, *test.result())
    return summary.done()


def parse_ava_tap(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """ava's `--tap`: one test point per test, no subtests, no file."""
    summary = _Summary()
    for test in tap.tests(data, files_at_top=False):
        summary.add(f"::{SEPARATOR.join(test.path)}", *test.result())
    return summary.done()


def parse_tape(data: bytes, root: str = WORKSPACE) -> TestSummary:
    """tape's TAP: each `# name` comment a test, the assertions after it its outcome."""
    summary = _Summary()
    for test in tap.tape_tests(data):
        summary.add(f"::{test.path[0]}", *test.result())
    return summary.done()


# -- shared ---------------------------------------------------------------------------------


class _Summary:
    """Outcomes and failures gathered by id: a test reported twice (a hook after it, a tape
    name used twice) keeps its worst outcome."""

    RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}
        self.texts: dict[str, tuple[str, str]] = {}

    def add(self, test_id: str, outcome: str, text: str = "", message: str = "") -> None:
        if len(self.outcomes) >= MAX_TESTCASES and test_id not in self.outcomes:
            raise ValueError(f"too large: more than {MAX_TESTCASES:,} test cases")
        before = self.outcomes.get(test_id)
        if before is None or self.RANK[outcome] > self.RANK[before]:
            self.outcomes[test_id] = outcome
            if outcome in ("failed", "error"):
                self.texts[test_id] = (text, message)

    def done(self) -> TestSummary:
        counts = dict.fromkeys(self.RANK, 0)
        for outcome in self.outcomes.values():
            counts[outcome] += 1
        failures = tuple(
            _failure(test_id, outcome, *self.texts.get(test_id, ("", "")))
            for test_id, outcome in self.outcomes.items()
            if outcome in ("failed", "error")
        )
        return TestSummary(
            passed=counts["passed"],
            failed=counts["failed"],
            errors=counts["error"],
            skipped=counts["skipped"],
            failures=failures,
            outcomes=self.outcomes,
        )


def _failure(test_id: str, outcome: str, text: str, message: str) -> TestFailure:
    return TestFailure(
        test_id=test_id,
        kind="error" if outcome == "error" else "failure",
        message=(message or first_line(text))[:500],
        traceback=trim(clean_stack(text)),
    )


PARSERS: Mapping[str, Callable[[bytes, str], TestSummary]] = {
    "vitest-junit": parse_vitest_junit,
    "node-junit": parse_node_junit,
    "node-test-junit": parse_node_test_junit,
    "uvu-junit": parse_node_test_junit,  # our uvu reporter writes the same shape
    "tape-junit": parse_node_test_junit,  # and so does our tape reporter
    "jest-json": parse_jest_json,
    "mocha-json": parse_mocha_json,
    "mocha-xunit": parse_mocha_xunit,
    "tap": parse_node_tap,
    "ava-tap": parse_ava_tap,
    "tape": parse_tape,
}
