"""A test run is skipped only when provably the same: same tree bytes, same command."""

from __future__ import annotations

import os

import pytest

from policies.truncation import Truncation
from sandbox.ecosystems import language_paths
from sandbox.testrun.cache import TestRunCache
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools

pytestmark = pytest.mark.docker

FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(2, 0) == 2\n"
    ),
    ".gitignore": "data/\n",
}


@pytest.fixture
def session(make_repo, open_sandbox):
    return open_sandbox(make_repo(FILES))


def test_same_tree_and_command_is_not_run_again_anything_else_is(session) -> None:
    cache = TestRunCache(box=session.box, workspace=session.workspace)
    first = cache.run(test_cmd="python -m pytest")
    assert not first.passed and not cache.reused
    again = cache.run(test_cmd="python -m pytest")
    assert again is first and cache.reused and (cache.runs, cache.skipped) == (1, 1)

    by_id = cache.run(test_cmd="python -m pytest", test_ids=["tests/test_calc.py::test_zero"])
    assert by_id is not first and by_id.passed and not cache.reused
    # A finished run is the answer under any time limit it finished within.
    within = cache.run(
        test_cmd="python -m pytest", test_ids=["tests/test_calc.py::test_zero"], timeout_s=30
    )
    assert within is by_id and cache.reused

    # The same size, the same mtime: only the bytes differ. Still a new run.
    calc = session.workspace.path / "calc.py"
    stat = calc.stat()
    calc.write_text("def add(a, b):\n    return a + b\n")
    os.utime(calc, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    fixed = cache.run(test_cmd="python -m pytest", timeout_s=30)
    assert fixed.passed and not cache.reused

    # A file the tree's .gitignore ignores is still part of the tree.
    cache.run(test_cmd="python -m pytest")
    (session.workspace.path / "data").mkdir()
    (session.workspace.path / "data" / "x.txt").write_text("x")
    cache.run(test_cmd="python -m pytest")
    assert not cache.reused
    assert (cache.runs, cache.skipped) == (4, 3)


def test_a_run_that_changes_the_tree_is_never_reused(make_repo, open_sandbox) -> None:
    counter = "import pathlib\n\n\ndef test_count():\n    p = pathlib.Path('n.txt')\n"
    counter += "    n = int(p.read_text()) if p.exists() else 0\n    p.write_text(str(n + 1))\n"
    counter += "    assert n < 1\n"
    session = open_sandbox(make_repo({"tests/test_count.py": counter}))
    cache = TestRunCache(box=session.box, workspace=session.workspace)
    assert cache.run(test_cmd="python -m pytest").passed
    second = cache.run(test_cmd="python -m pytest")
    assert not cache.reused and not second.passed  # the run really happened: the count went on


def test_the_model_is_told_when_it_gets_the_last_result_again(session) -> None:
    ctx = ToolContext(
        workspace=session.workspace.path,
        box=session.box,
        paths=language_paths(),
        truncation=Truncation(),
        test_cmd="python -m pytest",
        tests=TestRunCache(box=session.box, workspace=session.workspace),
    )
    registry = ToolRegistry(tools=default_tools())
    first = registry.call("run_tests", {}, ctx)
    second = registry.call("run_tests", {}, ctx)
    assert first.data["reused"] is False and "Not run again" not in first.text
    assert second.data["reused"] is True and "Not run again" in second.text
    assert second.text.startswith(first.text)
    assert second.tests is first.tests
