"""run_tests on passing, failing, hanging, crashing and flooding suites in one real sandbox."""

from __future__ import annotations

import dataclasses
import time

import pytest

from policies.truncation import Truncation
from sandbox.ecosystems import language_paths
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools

pytestmark = pytest.mark.docker

CAP = Truncation(max_bytes=5000, max_lines=120)
SUITES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_pass.py": "def test_one():\n    assert 1 + 1 == 2\n\n\ndef test_two():\n    pass\n",
    "tests/test_fail.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_ok():\n    assert add(2, 0) == 2\n"
    ),
    "tests/test_prints.py": (
        "import logging\nimport sys\n\n\ndef test_debugged():\n"
        "    print('value was', 41)\n    print('to stderr', file=sys.stderr)\n"
        "    logging.getLogger('app').warning('cache miss')\n    assert 41 == 42\n\n\n"
        "def test_quiet():\n    print('passing noise')\n"
    ),
    # One test method inherited by two test classes from a mixin in the package's __init__.
    "tests/__init__.py": (
        "from calc import add\n\n\nclass AddMixin:\n    def test_add_mixed(self):\n"
        "        assert add(1, 1) == 2\n"
    ),
    "tests/test_mix_a.py": (
        "import unittest\n\nfrom tests import AddMixin\n\n\n"
        "class ATest(AddMixin, unittest.TestCase):\n    pass\n"
    ),
    "tests/test_mix_b.py": (
        "import unittest\n\nfrom tests import AddMixin\n\n\n"
        "class BTest(AddMixin, unittest.TestCase):\n    pass\n"
    ),
    "tests/test_hang.py": "import time\n\n\ndef test_forever():\n    time.sleep(10_000)\n",
    "tests/test_exit.py": "import os\n\n\ndef test_exit():\n    os._exit(3)\n",
    "tests/test_segv.py": "import ctypes\n\n\ndef test_segv():\n    ctypes.string_at(0)\n",
    "tests/test_flood.py": (
        "def test_flood():\n    for i in range(200_000):\n        print('flood line', i)\n"
        "    assert 'x' * 300_000 == 'y'\n"
    ),
}


@pytest.fixture
def run(make_repo, open_sandbox):
    session = open_sandbox(make_repo(SUITES))
    ctx = ToolContext(
        workspace=session.workspace.path,
        box=session.box,
        paths=language_paths(),
        truncation=CAP,
        test_cmd="python -m pytest",
        test_timeout_s=60,
    )
    registry = ToolRegistry(tools=default_tools())

    def call(
        *tests: str, timeout_s: float = 60, known: tuple[str, ...] = (), cmd: str | None = None
    ):
        here = dataclasses.replace(ctx, test_timeout_s=timeout_s, known_tests=known)
        if cmd is not None:
            here = dataclasses.replace(here, test_cmd=cmd)
        obs = registry.call("run_tests", {"tests": list(tests)}, here)
        assert len(obs.text.encode()) <= CAP.max_bytes
        assert len(obs.text.splitlines()) <= CAP.max_lines
        return obs

    return call


def test_passing_and_failing_suites(run) -> None:
    passing = run("tests/test_pass.py")
    assert passing.ok and passing.data["passed"]
    assert passing.text.startswith("2 passed, 0 failed, 0 errors, 0 skipped")
    assert passing.data["counts"] == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}

    failing = run("tests/test_fail.py")
    assert failing.ok and not failing.data["passed"]
    assert failing.text.startswith("1 passed, 1 failed")
    assert failing.data["failing"] == ["tests/test_fail.py::test_add"]
    assert "FAILURE tests/test_fail.py::test_add" in failing.text
    assert "assert -1 == 5" in failing.text

    one = run("tests/test_fail.py::test_ok")
    assert one.data["passed"] and one.data["counts"]["passed"] == 1

    bad = run("--collect-only")
    assert not bad.ok and "not a test id" in bad.text


def test_a_test_inherited_from_a_mixin_is_named_by_the_class_that_runs_it(run) -> None:
    # pytest's JUnit `file` is where the method is written (tests/__init__.py); the id the model
    # is shown must be one pytest can run again, once per class.
    both = run("tests/test_mix_a.py", "tests/test_mix_b.py")
    assert both.data["failing"] == [
        "tests/test_mix_a.py::ATest::test_add_mixed",
        "tests/test_mix_b.py::BTest::test_add_mixed",
    ]
    again = run(*both.data["failing"])
    assert again.text.startswith("0 passed, 2 failed"), again.text


def test_an_id_written_with_the_wrong_folder_or_without_its_class_runs_the_test_meant(run) -> None:
    # The baseline's ids, as the run hands them to the tool: the failing ones first.
    known = ("tests/test_fail.py::test_add", "tests/test_fail.py::test_ok")
    known += ("tests/test_mix_a.py::ATest::test_add_mixed",)
    obs = run("test_fail.py::test_add", "tests/test_mix_a.py::test_add_mixed", known=known)
    assert obs.data["failing"] == [
        "tests/test_fail.py::test_add",
        "tests/test_mix_a.py::ATest::test_add_mixed",
    ]
    assert "test_fail.py::test_add is not a test id here; ran tests/test_fail.py::test_add" in (
        obs.text
    )
    nothing = run("tests/test_fail.py::test_subtract", known=known)
    assert nothing.text.startswith("0 passed, 0 failed"), nothing.text
    assert "No test ran: no test here has the id tests/test_fail.py::test_subtract" in nothing.text
    assert "e.g. tests/test_fail.py::test_add" in nothing.text


def test_ids_asked_of_a_command_that_names_their_folder_run_alone(run) -> None:
    # The task's command runs the folder (which holds a test that hangs); the id asked is in it,
    # so the folder is left out and only that test runs.
    obs = run("tests/test_fail.py::test_ok", cmd="python -m pytest tests", timeout_s=20)
    assert obs.data["counts"] == {"passed": 1, "failed": 0, "errors": 0, "skipped": 0}, obs.text
    assert " tests " not in obs.data["command"] + " "


def test_hanging_crashing_and_flooding_suites(run) -> None:
    started = time.monotonic()
    hang = run("tests/test_hang.py", timeout_s=3)
    assert time.monotonic() - started < 20
    assert not hang.ok and hang.data["timed_out"] and not hang.data["passed"]
    assert hang.text.startswith("tests did not finish: killed at the time limit")

    for suite in ("tests/test_exit.py", "tests/test_segv.py"):
        crash = run(suite)
        assert crash.ok and not crash.data["passed"], suite
        assert crash.data["exit_code"] != 0 and not crash.data["junit"], suite
        assert crash.text.startswith("test command failed"), suite

    flood = run("tests/test_flood.py")
    assert not flood.data["passed"] and flood.data["failing"] == ["tests/test_flood.py::test_flood"]
    assert "FAILURE tests/test_flood.py::test_flood" in flood.text
    assert flood.data.get("truncated") or len(flood.text) < CAP.max_bytes


def test_a_failing_tests_prints_and_logs_reach_the_model(run) -> None:
    obs = run("tests/test_prints.py")
    assert "FAILURE tests/test_prints.py::test_debugged" in obs.text
    assert "captured out:\nvalue was 41" in obs.text
    assert "captured err:\nto stderr" in obs.text and "cache miss" in obs.text
    assert "passing noise" not in obs.text  # what passing tests print stays out


def test_a_flood_of_output_from_a_failing_test_is_trimmed(run) -> None:
    obs = run("tests/test_flood.py")  # 3.6 MB printed: the report still comes back whole
    assert obs.data["junit"] and obs.data["failing"] == ["tests/test_flood.py::test_flood"]
    assert "captured out:\nflood line 0" in obs.text and "flood line 199999" in obs.text
