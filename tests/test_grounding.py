"""The first message's source code: from the failing tests to the definitions they reach.

Pure logic over real files in a temporary repository (parsing only, no sandbox needed)."""

from __future__ import annotations

from pathlib import Path

from sandbox.container.results import CommandResult
from sandbox.ecosystems import language_paths
from sandbox.ecosystems.python.grounding import implicated_code
from sandbox.testrun.junit import TestFailure, TestSummary
from sandbox.testrun.run import TestRun

RECIPES = (
    '"""Recipes."""\n'
    "\n"
    "\n"
    "def take(n, iterable):\n"
    "    return list(iterable)[:n]\n"
    "\n"
    "\n"
    "def all_equal(iterable):\n"
    '    """True if all elements are equal."""\n'
    "    items = list(iterable)\n"
    "    return all(x != items[0] for x in items)\n"
)
MORE = (
    "def chunked(iterable, n):\n"
    "    it = list(iterable)\n"
    "    return [it[i:i + n] for i in range(0, len(it), n)]\n"
)
TESTS = (
    "from unittest import TestCase\n"
    "import mit as mi\n"
    "\n"
    "\n"
    "def check(values):\n"
    "    return mi.all_equal(values)\n"
    "\n"
    "\n"
    "class AllEqualTests(TestCase):\n"
    "    def test_true(self):\n"
    "        self.assertTrue(check('aaaa'))\n"
    "\n"
    "    def test_chunks(self):\n"
    "        self.assertEqual(mi.chunked([1, 2, 3], 2), [[1, 2], [3]])\n"
)


def repo(tmp_path: Path) -> Path:
    files = {
        "mit/__init__.py": "from .more import *\nfrom .recipes import *\n",
        "mit/recipes.py": RECIPES,
        "mit/more.py": MORE,
        "tests/test_mit.py": TESTS,
    }
    return write(tmp_path, files)


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def assertion_failed(test_id: str, traceback: str) -> TestRun:
    return failing(
        TestFailure(test_id=test_id, kind="failure", message="AssertionError", traceback=traceback)
    )


def failing(*failures: TestFailure) -> TestRun:
    summary = TestSummary(
        passed=0, failed=len(failures), errors=0, skipped=0, failures=failures, outcomes={}
    )
    result = CommandResult(
        command="pytest", exit_code=1, duration_s=0.1, timed_out=False,
        oom_killed=False, output="", output_bytes=0, truncated=False,
    )  # fmt: skip
    return TestRun(command="pytest", result=result, summary=summary, expects_junit=True)


def test_an_assertion_failure_leads_through_the_package_init_to_the_function(tmp_path):
    ws = repo(tmp_path)
    run = failing(
        TestFailure(
            test_id="tests/test_mit.py::AllEqualTests::test_true",
            kind="failure",
            message="AssertionError: False is not true",
            traceback="tests/test_mit.py:11: in test_true",
        )
    )
    code = implicated_code(run, workspace=ws, paths=language_paths()).text
    # all_equal is reached through the test file's helper `check`, and lives in recipes.py,
    # which neither the traceback nor the test's imports name.
    assert code.startswith("mit/recipes.py: all_equal, lines 8-11 of 11")
    assert "11|     return all(x != items[0] for x in items)" in code
    assert "def take" not in code and "def chunked" not in code  # only what the test reaches


def test_a_source_frame_in_the_traceback_shows_its_enclosing_function_first(tmp_path):
    ws = repo(tmp_path)
    run = failing(
        TestFailure(
            test_id="tests/test_mit.py::AllEqualTests::test_chunks",
            kind="failure",
            message="IndexError",
            traceback="tests/test_mit.py:14: in test_chunks\nmit/recipes.py:5: in take",
        )
    )
    code = implicated_code(run, workspace=ws, paths=language_paths()).text
    first, second = code.split("\n\n")
    assert first.startswith("mit/recipes.py: take, lines 4-5")
    assert second.startswith("mit/more.py: chunked, lines 1-3")


def test_nothing_found_gives_nothing_and_test_files_are_never_shown_as_source(tmp_path):
    ws = repo(tmp_path)
    run = failing(
        TestFailure(
            test_id="tests/test_mit.py::test_missing", kind="failure", message="", traceback=""
        )
    )
    assert implicated_code(run, workspace=ws, paths=language_paths()).text == ""


def test_tests_inherited_from_a_mixin_and_a_long_class_shown_as_an_outline(tmp_path):
    body = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(40))
    files = {
        "box/__init__.py": "class Box:\n    def __setitem__(self, key, value):\n        pass\n\n"
        + body,
        "tests/mixin.py": (
            "class BoxMixin:\n    def test_store(self):\n        b = self.Box()\n"
            "        b.put(1, 2)\n        assert b.peek(1) == 2\n"
        ),
        "tests/test_box.py": (
            "import unittest\nfrom box import Box\nfrom . import mixin\n\n\n"
            "class BoxTest(unittest.TestCase, mixin.BoxMixin):\n    Box = Box\n"
        ),
    }
    run = assertion_failed(
        "tests/test_box.py::BoxTest::test_store", "tests/mixin.py:5: in test_store"
    )
    shown = implicated_code(run, workspace=write(tmp_path, files), paths=language_paths())
    # The test is defined in the mixin, not in test_box.py: its names are still followed.
    assert shown.text.startswith("box/__init__.py: class Box, lines 1-")
    assert "(outline)" in shown.text and "  2|     def __setitem__(self, key, value):" in shown.text
    # Only an outline: no whole function is shown, so no edit is forced on the first reply.
    assert not shown.shows_code


def test_a_method_the_tests_syntax_calls_is_shown_from_the_class_and_its_bases(tmp_path):
    # `c[k] = v` names no function: it runs LimitedCache.__setitem__, which hands on to
    # Cache.__setitem__, where the bug is. Both are shown whole, so the first reply may edit.
    body = "".join(f"    def m{i}(self):\n        return {i}\n\n" for i in range(40))
    files = {
        "cache.py": (
            "import collections.abc\n\n\nclass Cache(collections.abc.MutableMapping):\n"
            "    def __setitem__(self, key, value):\n        self._data[key] = value - 1\n\n"
            "    def __contains__(self, key):\n        return key in self._data\n\n"
            + body
            + "\nclass LimitedCache(Cache):\n"
            "    def __setitem__(self, key, value, setitem=Cache.__setitem__):\n"
            "        setitem(self, key, value)\n"
        ),
        "tests/test_cache.py": (
            "from cache import LimitedCache\n\n\ndef test_store():\n    c = LimitedCache()\n"
            "    c[1] = 2\n    assert 1 in c\n"
        ),
    }
    run = assertion_failed(
        "tests/test_cache.py::test_store", "tests/test_cache.py:7: in test_store"
    )
    shown = implicated_code(run, workspace=write(tmp_path, files), paths=language_paths())
    heads = [line for line in shown.text.splitlines() if line.startswith("cache.py: ")]
    assert heads == [  # the subclass's own __setitem__ is in the class shown: not repeated
        "cache.py: LimitedCache, lines 132-134 of 134",
        "cache.py: __setitem__, lines 5-6 of 134",
        "cache.py: __contains__, lines 8-9 of 134",
    ], shown.text
    assert "6|         self._data[key] = value - 1" in shown.text and shown.shows_code
