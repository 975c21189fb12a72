"""Fault localisation in a real sandbox: the traced run of the failing tests' files counts the
lines each test ran, and the ranking puts the buggy line first."""

from __future__ import annotations

import json

import pytest

from sandbox.ecosystems.python.ecosystem import PYTHON
from sandbox.ecosystems.python.lines_run import count_lines, parse_counts
from sandbox.testrun.run import run_tests
from worker.search.suspects import rank

pytestmark = pytest.mark.docker

# The bug (`>` for `>=`) is on a branch only the failing test reaches; the other lines of the
# function run for every test, so they rank below it.
FILES = {
    "shop/__init__.py": "",
    "shop/price.py": (
        "def discount(total, threshold):\n"
        "    rate = 0.0\n"
        "    if total >= 2 * threshold:\n"
        "        rate = 0.2\n"
        "    elif total > threshold:\n"
        "        rate = 0.1\n"
        "    return round(total * (1 - rate), 2)\n"
    ),
    "tests/test_price.py": (
        "from shop.price import discount\n\n\n"
        "def test_no_discount():\n    assert discount(50, 100) == 50\n\n\n"
        "def test_big_discount():\n    assert discount(300, 100) == 240\n\n\n"
        "def test_small_discount():\n    assert discount(150, 100) == 135\n\n\n"
        "def test_discount_at_threshold():\n    assert discount(100, 100) == 90\n"
    ),
    "tests/test_other.py": "def test_unrelated():\n    assert True\n",
}


def test_the_buggy_line_ranks_first_and_test_files_are_left_out(make_repo, open_sandbox):
    session = open_sandbox(make_repo(FILES))
    baseline = run_tests(session.box, test_cmd="python -m pytest")
    assert baseline.summary is not None and baseline.summary.failing_ids() == [
        "tests/test_price.py::test_discount_at_threshold"
    ]
    counts = count_lines(
        session.box, test_cmd="python -m pytest", test_files=["tests/test_price.py"],
        timeout_s=60,
    )  # fmt: skip
    # Only the failing test's file ran: 1 failing and 3 passing tests, not test_other.py.
    assert (counts.failed, counts.passed) == (1, 3), counts.why_empty
    assert counts.lines["shop/price.py"][5] == (1, 2)  # the elif: run by 1 failing, 2 passing
    suspects = rank(counts, workspace=session.workspace.path, allowed=lambda rel: True)
    assert (suspects[0].where(), suspects[0].text) == ("shop/price.py:5", "elif total > threshold:")
    assert suspects[0].ef == 1 and suspects[0].ep == 2
    assert all(s.path == "shop/price.py" for s in suspects)  # no line of a test file
    # Lines only passing tests ran are not suspects at all.
    assert "rate = 0.2" not in [s.text for s in suspects]


#: The same project, its tests unittest's, and nothing that imports pytest.
UNITTEST_FILES = {
    "shop/__init__.py": "",
    "shop/price.py": FILES["shop/price.py"],
    "tests/__init__.py": "",
    "tests/test_price.py": (
        "import sys\nimport unittest\n\nfrom shop.price import discount\n\n\n"
        "class TestDiscount(unittest.TestCase):\n"
        "    def test_no_discount(self):\n        self.assertEqual(discount(50, 100), 50)\n\n"
        "    def test_big_discount(self):\n        self.assertEqual(discount(300, 100), 240)\n\n"
        "    def test_small_discount(self):\n        self.assertEqual(discount(150, 100), 135)\n\n"
        "    def test_at_threshold(self):\n        self.assertEqual(discount(100, 100), 90)\n\n"
        "    def test_without_pytest(self):\n        self.assertNotIn('_pytest', sys.modules)\n\n"
        "    @unittest.skip('later')\n"
        "    def test_later(self):\n        discount(0, 1)\n"
    ),
    "tests/test_other.py": (
        "import unittest\n\n\nclass TestOther(unittest.TestCase):\n"
        "    def test_unrelated(self):\n        pass\n"
    ),
}


def test_a_unittest_project_s_buggy_line_ranks_first(make_repo, open_sandbox):
    session = open_sandbox(make_repo(UNITTEST_FILES))
    test_cmd = "python -m unittest discover -s tests -t ."
    baseline = run_tests(session.box, test_cmd=test_cmd)
    assert baseline.summary is not None and baseline.summary.failing_ids() == [
        "tests/test_price.py::TestDiscount::test_at_threshold"
    ], baseline.render()
    # The traced run goes through our unittest runner, the failing test's file alone: 1 failing
    # and 4 passing tests (the skipped one not counted, test_other.py not run), no pytest.
    counts = PYTHON.line_counts(session.box, baseline, timeout_s=60)
    assert (counts.failed, counts.passed) == (1, 4), counts.why_empty
    assert counts.lines["shop/price.py"][5] == (1, 2)
    suspects = rank(counts, workspace=session.workspace.path, allowed=lambda rel: True)
    assert (suspects[0].where(), suspects[0].text) == ("shop/price.py:5", "elif total > threshold:")
    assert all(s.path == "shop/price.py" for s in suspects)


def test_a_repository_that_forges_the_counts_gets_no_suspects(make_repo, open_sandbox):
    # The repository's conftest overwrites the plugin's output after it: what comes back is
    # the repository's, so counts out of range are refused as a whole.
    files = dict(FILES)
    files["conftest.py"] = (
        "import json, os, glob\n\n\n"
        "def pytest_unconfigure(config):\n"
        "    for path in glob.glob('/tmp/worker-lines-*.json'):\n"
        "        with open(path, 'w') as f:\n"
        "            json.dump({'failed': 1, 'passed': 0,\n"
        "                       'lines': {'shop/price.py': {'2': [99, 0]}}}, f)\n"
    )
    session = open_sandbox(make_repo(files))
    counts = count_lines(
        session.box, test_cmd="python -m pytest", test_files=["tests/test_price.py"],
        timeout_s=60,
    )  # fmt: skip
    assert not counts and counts.why_empty == "the traced run wrote no readable counts"
    assert rank(counts, workspace=session.workspace.path, allowed=lambda rel: True) == []


def test_a_test_command_that_is_not_pytest_is_not_traced(make_repo, open_sandbox):
    session = open_sandbox(make_repo(FILES))
    counts = count_lines(session.box, test_cmd="make test", test_files=["x"], timeout_s=10)
    assert not counts and "neither pytest nor python -m unittest" in counts.why_empty


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        json.dumps({"failed": 1, "passed": 0, "lines": {"a.py": {"x": [1, 0]}}}).encode(),
        json.dumps({"failed": 1, "passed": 0, "lines": {"a.py": {"3": [1, 5]}}}).encode(),
        json.dumps({"failed": 1, "passed": 0, "lines": {"a.py": {"-3": [1, 0]}}}).encode(),
        json.dumps({"failed": 1, "passed": 0, "lines": {"a.py": [1]}}).encode(),
    ],
)
def test_malformed_counts_give_none(data):
    counts = parse_counts(data)
    assert not counts and counts.why_empty == "the traced run wrote no readable counts"
