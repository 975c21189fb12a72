"""A pytest plugin loaded into every test run: it stamps the JUnit report with the run's token,
writes each test's own node id into its <testcase>, and keeps what a test printed small.

Runs inside the sandbox's pytest (stdlib and pytest only; nothing of the worker). The harness
passes a fresh random token in WORKER_RUN_TOKEN; the plugin takes it out of the environment as
soon as pytest loads it, before any of the repository's code is imported, and writes it as a
global <property> of the JUnit report. A report forged by the code under test (written to the
--junitxml path it can read from sys.argv, say) does not carry the token, so the verdict refuses
it. Code that deliberately digs the token out of the interpreter or /proc can still forge one:
this closes the cheap ways to a green verdict, not every way (see docs: the verdict).

The node id is pytest's own (`docs/intro.rst::intro.rst` for a text file's doctest), which the
report's classname and name do not always give back; it is written as the attribute `nodeid`
(as `record_xml_attribute` would) at each of the test's reports, after anything the test
recorded under that name. Works with pytest 7.2 to 9.
"""

import os

import pytest

PROPERTY = "worker_run_token"
NODEID = "nodeid"  # the <testcase> attribute (sandbox/testrun/junit.py reads it)
SECTION_CHARS = 20_000  # of each captured section (stdout, stderr, log) kept in the report
_TOKEN = os.environ.pop("WORKER_RUN_TOKEN", "")


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    from _pytest.junitxml import xml_key

    xml = config.stash.get(xml_key, None)
    if xml is None:
        return
    if _TOKEN:
        xml.add_global_property(PROPERTY, _TOKEN)
    config.pluginmanager.register(_NodeIds(xml), "worker_junit_nodeids")


class _NodeIds:
    """Each test case's node id, as an attribute of its <testcase>."""

    def __init__(self, xml):
        self._xml = xml

    # First, so junitxml's own hook finds it there (and writes it) for this very report.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        self._xml.node_reporter(report).add_attribute(NODEID, report.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report):
        if not report.passed:  # junitxml writes only these; a passed collection has no case
            self._xml.node_reporter(report).add_attribute(NODEID, report.nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    # Before junitxml writes the captured output: head and tail of each section, so a test that
    # prints megabytes does not make a report of gigabytes (sandbox/container/capture.py refuses
    # those).
    half = SECTION_CHARS // 2
    report.sections = [
        (
            title,
            text
            if len(text) <= SECTION_CHARS
            else text[:half] + "\n[... cut ...]\n" + text[-half:],
        )
        for title, text in report.sections
    ]
