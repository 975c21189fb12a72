"""`python -m unittest` judged by test id: the command recognised (given, or tox's and CI's),
our staged runner (sandbox/ecosystems/python/unittest_report.py) run by the host's Python on a
real project, and once in a real sandbox where nothing may import pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.ecosystems import ecosystem_running
from sandbox.ecosystems.python.ecosystem import PYTHON
from sandbox.ecosystems.python.tox_command import ci_test_command, tox_test_command
from sandbox.ecosystems.python.unittest_command import is_unittest, with_runner
from sandbox.testrun.junit import parse_junit
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge
from sandbox.worktree.repo_files import RepoFiles

RUNNER = Path(__file__).parents[1] / "sandbox/ecosystems/python/unittest_report.py"
ADD_BUG = "def add(a, b):\n    return a - b\n"
ADD_FIX = "def add(a, b):\n    return a + b\n"
PROJECT = {
    "calc/__init__.py": ADD_BUG,
    "tests/__init__.py": "",
    "tests/test_calc.py": (
        "import sys\n"
        "import unittest\n"
        "from calc import add\n\n"
        "class TestAdd(unittest.TestCase):\n"
        "    def test_add(self):\n"
        "        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_zero(self):\n"
        "        self.assertEqual(add(0, 0), 0)\n\n"
        "    def test_runs_without_pytest(self):\n"
        "        self.assertNotIn('_pytest', sys.modules)\n\n"
        "    @unittest.skip('not today')\n"
        "    def test_later(self):\n"
        "        pass\n"
    ),
    "tests/test_ready.py": (
        "import unittest\n"
        "from calc import add\n\n"
        "class TestReady(unittest.TestCase):\n"
        "    @classmethod\n"
        "    def setUpClass(cls):\n"
        "        assert add(2, 2) == 4, 'add is broken'\n\n"
        "    def test_ready(self):\n"
        "        pass\n"
    ),
}
FAILING = ["tests/test_calc.py::TestAdd::test_add", "tests/test_ready.py::TestReady::test_ready"]


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("python -m unittest", "python R"),
        ("python3 -m unittest discover -s tests -v", "python3 R discover -s tests -v"),
        ("CI=1 python -W error -m unittest tests.test_m", "CI=1 python -W error R tests.test_m"),
        ("coverage run -m unittest discover", "coverage run R discover"),
        ("make && python3.12 -m unittest -v", "make && python3.12 R -v"),
        ("python -m unittest_ext", None),
        ("python -m pytest", None),
        ("python setup.py test", None),
    ],
)
def test_a_unittest_command_is_python_s_and_runs_our_runner_in_place_of_unittest(command, runner):
    assert is_unittest(command) is (runner is not None)
    assert (ecosystem_running(command) is PYTHON) is (runner is not None or "pytest" in command)
    if runner is not None:
        assert with_runner(command, "R") == runner
        # unittest has no --deselect: our runner leaves the ids out, set for its command alone.
        deselected = PYTHON.deselect(command, ["t.py::T::a", "t y.py::T"])
        assert deselected is not None and is_unittest(deselected)
        assignment = "WORKER_UNITTEST_DESELECT='t.py::T::a '\"'\"'t y.py::T'\"'\"'' "
        assert assignment in deselected
        assert with_runner(deselected, "R").replace(assignment, "") == runner


def test_tox_s_and_ci_s_unittest_lines_are_the_test_command(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tox.ini").write_text(
        "[testenv]\nset_env =\n    LANG = C.UTF-8\n"
        "commands =\n    {envpython} -m unittest discover -s {toxinidir}/tests -v {posargs}\n"
    )
    assert tox_test_command(RepoFiles(tmp_path)) == (
        "LANG=C.UTF-8 python -m unittest discover -s tests -v"
    )
    (tmp_path / "tox.ini").unlink()
    workflow = tmp_path / ".github/workflows/ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(
        "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - run: pip install -e .\n"
        "      - run: python -m unittest discover -s tests -p '*_test.py' > log.txt\n"
    )
    assert ci_test_command(RepoFiles(tmp_path)) == (
        "python -m unittest discover -s tests -p '*_test.py'"
    )


def run_runner(
    repo: Path, *args: str, ids: list[str] | None = None, deselect: str = ""
) -> tuple[int, bytes | None]:
    """Our runner as the sandbox runs it, by the host's Python in `repo`: exit code, report."""
    report = repo.parent / "report.xml"
    report.unlink(missing_ok=True)
    env = {**os.environ, "WORKER_RUN_TOKEN": "t0k3n", "WORKER_UNITTEST_REPORT": str(report)}
    if deselect:
        env["WORKER_UNITTEST_DESELECT"] = deselect
    env.pop("PYTHONPATH", None)
    if ids is not None:
        (repo.parent / "ids.txt").write_text("".join(f"{i}\n" for i in ids))
        env["WORKER_UNITTEST_IDS"] = str(repo.parent / "ids.txt")
    done = subprocess.run(
        [sys.executable, str(RUNNER), *args], cwd=repo, env=env, capture_output=True, timeout=60
    )
    return done.returncode, report.read_bytes() if report.exists() else None


def test_the_runner_names_tests_as_pytest_does_and_gives_fixture_errors_to_their_tests(
    make_repo,
):
    repo = make_repo(
        {
            **PROJECT,
            "tests/test_broken.py": "import calc.missing\n",
            "tests/test_late.py": (
                "import unittest\n\nclass TestLate(unittest.TestCase):\n"
                "    @classmethod\n    def tearDownClass(cls):\n        raise OSError('gone')\n\n"
                "    def test_first(self):\n        pass\n\n"
                "    def test_second(self):\n        pass\n"
            ),
        }
    )
    code, report = run_runner(repo, "discover", "-s", "tests")
    assert code == 1 and report is not None
    summary = parse_junit(report)
    assert summary.properties["worker_run_token"] == "t0k3n"
    assert dict(summary.outcomes) == {
        "tests/test_broken.py": "error",  # a module that fails to import: its file
        "tests/test_calc.py::TestAdd::test_add": "failed",
        "tests/test_calc.py::TestAdd::test_later": "skipped",
        "tests/test_calc.py::TestAdd::test_runs_without_pytest": "passed",
        "tests/test_calc.py::TestAdd::test_zero": "passed",
        "tests/test_late.py::TestLate::test_first": "passed",
        "tests/test_late.py::TestLate::test_second": "error",  # the last test before it
        "tests/test_ready.py::TestReady::test_ready": "error",  # its setUpClass failed
    }
    messages = {f.test_id: f.message for f in summary.failures}
    assert messages[FAILING[1]] == "setUpClass failed: AssertionError: add is broken"

    # By id: those tests alone, a class's id and a file's id naming all of theirs.
    code, report = run_runner(
        repo, "discover", "-s", "tests", ids=[FAILING[0], "tests/test_ready.py::TestReady"]
    )
    assert report is not None
    assert dict(parse_junit(report).outcomes) == {FAILING[0]: "failed", FAILING[1]: "error"}
    code, report = run_runner(repo, "discover", "-s", "tests", ids=["tests/", "other"])
    assert report is not None and len(parse_junit(report).outcomes) == 8  # a folder's id: all

    # Deselected (`worker ci`'s flaky tests): not run, each reported skipped, saying why; a
    # class's id leaves out its tests and its setUpClass.
    code, report = run_runner(
        repo, "discover", "-s", "tests", deselect=f"{FAILING[0]} tests/test_ready.py::TestReady"
    )
    assert report is not None
    summary = parse_junit(report)
    assert summary.outcome_of(FAILING[0]) == summary.outcome_of(FAILING[1]) == "skipped"
    assert summary.outcome_of("tests/test_calc.py::TestAdd::test_zero") == "passed"
    assert summary.failing_ids() == [
        "tests/test_broken.py",
        "tests/test_late.py::TestLate::test_second",
    ]
    assert b"deselected: left out of the run" in report

    # A test that ends the process before the run's end leaves no report at all.
    (repo / "tests/test_calc.py").write_text(
        "import os, unittest\n\nclass TestAdd(unittest.TestCase):\n"
        "    def test_add(self):\n        os._exit(0)\n"
    )
    assert run_runner(repo, "discover", "-s", "tests") == (0, None)


@pytest.mark.docker
def test_a_unittest_project_s_baseline_names_its_failing_tests_and_a_fix_passes(
    make_repo, open_sandbox
):
    repo = make_repo(PROJECT)
    session = open_sandbox(repo)
    test_cmd = "python -m unittest discover -s tests"
    baseline = run_tests(session.box, test_cmd=test_cmd)
    assert baseline.summary is not None, baseline.render()
    assert baseline.summary.failing_ids() == FAILING
    assert baseline.summary.outcome_of("tests/test_calc.py::TestAdd::test_zero") == "passed"
    # The sandbox image has pytest; this project does not, and nothing of the run imported it.
    passed = baseline.summary.outcome_of("tests/test_calc.py::TestAdd::test_runs_without_pytest")
    assert passed == "passed"
    assert "FAILED (failures=1, errors=1, skipped=1)" in baseline.result.output  # unittest's own

    # `worker ci`'s deselection of a flaky test: left out of the run, the report says skipped.
    flaky = PYTHON.deselect(test_cmd, [FAILING[1]])
    assert flaky is not None
    left_out = run_tests(session.box, test_cmd=flaky)
    assert left_out.summary is not None, left_out.render()
    assert left_out.summary.outcome_of(FAILING[1]) == "skipped"
    assert left_out.summary.failing_ids() == FAILING[:1]
    assert "skipped=2" in left_out.result.output  # unittest's own count says it too

    (session.workspace.path / "calc/__init__.py").write_text(ADD_FIX)
    failing_first = run_tests(session.box, test_cmd=test_cmd, test_ids=FAILING)
    assert failing_first.summary is not None and failing_first.summary.total == 2
    fixed = run_tests(session.box, test_cmd=test_cmd)
    verdict = judge(fixed, baseline=baseline)
    assert verdict.passed and verdict.rule == "junit", verdict.describe()
