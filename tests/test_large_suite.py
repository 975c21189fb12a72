"""A suite whose JUnit report is tens of megabytes: it comes back whole from either backend and is
judged test by test; a report too large to take is refused by name, never read cut short.

The 100,000-test suite runs real pytest (the image's) in the real sandbox, with one liberty: its
conftest runs each test's call alone and reports it through pytest's own hooks (junitxml writes
the report from them), and prints no progress character for a pass. pytest's full protocol
costs about 0.9 ms of one core a test in the image (17.7 s of user time for 20,000), and one
flushed character each down the sandbox's pipe; this way 100,000 take about 30 s of one core
(`bench/large_report.py` measures a run), and the report is the same.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from policies.limits import Limits
from sandbox.container.capture import CaptureRefused, from_trailer, inflate, read_capture_file
from sandbox.container.local_sandbox import LocalSandbox
from sandbox.container.runner import CAPTURE_MAX
from sandbox.testrun.junit import parse_junit
from sandbox.testrun.run import run_tests
from tests.test_fix_cli import report, run_fix
from worker.llm.scripted_server import ScriptedServer, tool_call

TESTS = 100_000
FAILING = 77_777
FAST_CONFTEST = """\
import pytest
from _pytest.reports import TestReport
from _pytest.runner import CallInfo


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    phases = (
        ("setup", lambda: None),
        ("call", lambda: item.obj(**item.callspec.params)),
        ("teardown", lambda: None),
    )
    for when, run in phases:
        call = CallInfo.from_call(run, when=when)
        ihook.pytest_runtest_logreport(report=TestReport.from_item_and_call(item, call))
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


def pytest_report_teststatus(report):
    if report.when == "call" and report.passed:
        return "passed", "", ""
"""
BIG_SUITE = {
    "calc.py": f"def double(n):\n    return 0 if n == {FAILING} else n + n\n",
    "tests/test_many.py": (
        "import pytest\n\nfrom calc import double\n\n\n"
        f"@pytest.mark.parametrize('n', range({TESTS}))\n"
        "def test_double(n):\n    assert double(n) == n + n\n"
    ),
    "conftest.py": FAST_CONFTEST,
}
FIX = f"""\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def double(n):
-    return 0 if n == {FAILING} else n + n
+    return n + n
"""
# Writes the report, then stretches it past the cap (a sparse file: no disk, no memory).
STRETCHING_CONFTEST = """\
import os


def pytest_unconfigure(config):
    path = config.option.xmlpath
    if path and os.path.exists(path):
        os.truncate(path, 600 * 1024 * 1024)
"""

STRETCHED = {
    "tests/test_ok.py": "def test_ok():\n    pass\n",
    "conftest.py": STRETCHING_CONFTEST,
}


@pytest.mark.docker
def test_a_suite_of_100000_tests_is_fixed_by_its_whole_report(make_repo, tmp_path):
    repo = make_repo(BIG_SUITE)
    out = tmp_path / "out"
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": FIX})]) as server:
        proc = run_fix(repo, out, "--test-timeout", "600", base_url=server.base_url, timeout=1500)
        server.assert_all_used()
    r = report(out)
    before = r["tests_before"]
    assert before["junit"] and before["failing"] == [f"tests/test_many.py::test_double[{FAILING}]"]
    assert before["counts"] == {"passed": TESTS - 1, "failed": 1, "errors": 0, "skipped": 0}
    assert proc.returncode == 0, proc.stderr
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert "JUnit report" in r["verification"]["verdict"]
    assert r["verification"]["counts"] == {"passed": TESTS, "failed": 0, "errors": 0, "skipped": 0}


MakeLocal = Callable[[], LocalSandbox]


@pytest.fixture
def make_local(tmp_path: Path) -> Iterator[MakeLocal]:
    boxes: list[LocalSandbox] = []

    def make() -> LocalSandbox:
        workspace = tmp_path / f"ws{len(boxes)}"
        workspace.mkdir()
        box = LocalSandbox(
            workspace=workspace,
            control_dir=tmp_path / f"control{len(boxes)}",
            limits=Limits(command_timeout_s=60.0),
            log_dir=tmp_path / f"logs{len(boxes)}",
        )
        box.start()
        boxes.append(box)
        return box

    yield make
    for box in boxes:
        box.close()


# 24 MB of a report-like text that does not compress to nothing: every line differs.
WRITE_24MB = (
    "python3 -c \"import sys; sys.stdout.write(''.join("
    'f\'<testcase name=\\"t{i}\\" nodeid=\\"tests/t.py::t{i}\\"/>\\n\' for i in range(500000)))"'
    " > /tmp/report.xml"
)


def expected_24mb() -> bytes:
    lines = (f'<testcase name="t{i}" nodeid="tests/t.py::t{i}"/>\n' for i in range(500000))
    return "".join(lines).encode()


@pytest.mark.docker
def test_a_24_mb_capture_comes_back_whole_from_a_container(open_sandbox, make_repo):
    session = open_sandbox(make_repo({"README": "x\n"}))
    result = session.box.run(WRITE_24MB, capture_file="/tmp/report.xml")
    assert result.exit_code == 0 and not result.capture_error
    want = expected_24mb()
    assert result.captured is not None and len(result.captured) == len(want) > 20_000_000
    assert hashlib.sha256(result.captured).digest() == hashlib.sha256(want).digest()


def test_a_24_mb_capture_comes_back_whole_from_the_local_backend(make_local):
    result = make_local().run(WRITE_24MB, capture_file="/tmp/report.xml")
    assert result.exit_code == 0 and not result.capture_error
    assert result.captured == expected_24mb()


@pytest.mark.docker
def test_a_report_past_the_cap_is_refused_as_too_large_in_a_container(open_sandbox, make_repo):
    session = open_sandbox(make_repo(STRETCHED))
    run = run_tests(session.box, test_cmd="python -m pytest")
    assert run.summary is None and "too large (over 512 MiB)" in run.junit_error
    assert not run.passed
    assert "the JUnit report was not read" in run.verdict.describe()
    assert "too large" in run.headline()


def test_a_report_past_the_cap_is_refused_as_too_large_by_the_local_backend(make_local):
    box = make_local()
    result = box.run("truncate -s 600M /tmp/report.xml", capture_file="/tmp/report.xml")
    assert result.captured is None
    assert result.capture_error == "/tmp/report.xml is too large (over 512 MiB)"


# -- in-process: the caps themselves ------------------------------------------------------------


def test_a_zip_bomb_is_inflated_no_further_than_the_cap():
    bomb = zlib.compress(bytes(64 * 1024 * 1024), 9)  # 64 KiB that inflate to 64 MiB
    assert len(bomb) < 100_000
    with pytest.raises(CaptureRefused, match=r"report\.xml is too large \(over 1 MiB\)"):
        inflate(bomb, name="report.xml", limit=1024 * 1024)
    assert inflate(zlib.compress(b"<testsuites/>"), name="r") == b"<testsuites/>"


def test_a_damaged_or_cut_capture_is_refused_by_name():
    packed = zlib.compress(b"<testsuites>" + bytes(10_000) + b"</testsuites>")
    with pytest.raises(CaptureRefused, match="cut short"):
        inflate(packed[: len(packed) // 2], name="r")
    with pytest.raises(CaptureRefused, match="damaged"):
        inflate(b"not zlib at all", name="r")
    assert from_trailer("@@not base64", None, name="r.xml")[1].startswith("r.xml came back damaged")
    assert from_trailer(None, "size", name="r.xml") == (None, "r.xml is too large (over 512 MiB)")
    assert from_trailer(None, "compressed", name="r.xml")[1] == (
        "r.xml is too large (over 64 MiB compressed)"
    )
    assert from_trailer(None, None, name="r.xml") == (None, "")  # no file: nothing to say


def test_a_file_past_the_cap_is_not_read_from_disk(tmp_path):
    path = tmp_path / "report.xml"
    with open(path, "wb") as f:
        f.truncate(CAPTURE_MAX + 1)  # sparse: nothing is written
    assert read_capture_file(path, name="report.xml") == (
        None,
        "report.xml is too large (over 512 MiB)",
    )
    assert read_capture_file(tmp_path / "none.xml", name="none.xml") == (None, "")


def test_parsing_refuses_what_would_not_fit_in_memory():
    deep = b"<testsuites>" + b"<a>" * 100 + b"</a>" * 100 + b"</testsuites>"
    with pytest.raises(ValueError, match="nested more than 32 deep"):
        parse_junit(deep)
    cases = b"".join(b'<testcase name="t%d"/>' % i for i in range(11))
    many = b"<testsuite>" + cases + b"</testsuite>"
    assert parse_junit(many, max_testcases=11).passed == 11
    with pytest.raises(ValueError, match="too large: more than 10 test cases"):
        parse_junit(many, max_testcases=10)
