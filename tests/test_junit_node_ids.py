"""Test ids are pytest's own node ids, also where they are not Python paths (a doctest of a text
file), and each can be run again by that id: real pytest in the sandbox (the image's pytest 7.2)
and on the host (the newest pytest), then the rebuild from classname and name for reports
written without our plugin (CI's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.limits import Limits
from sandbox.container.base import Sandbox
from sandbox.container.local_sandbox import LocalSandbox
from sandbox.testrun.junit import parse_junit
from sandbox.testrun.run import run_tests
from tools.test_ids import resolve_test_ids

RST_ID = "docs/introduction.rst::introduction.rst"
MODULE_ID = "pkg/mod.py::pkg.mod.double"
DOCTESTS = {
    "pytest.ini": "[pytest]\naddopts = --doctest-modules --doctest-glob=*.rst\n",
    "docs/introduction.rst": (
        "Introduction\n============\n\n>>> from pkg.mod import double\n>>> double(2)\n4\n"
    ),
    "pkg/__init__.py": "",
    "pkg/mod.py": 'def double(n):\n    """Twice n.\n\n    >>> double(3)\n    6\n    """\n'
    "    return n * 3\n",
    "tests/test_plain.py": "def test_plain():\n    pass\n",
}


def check_ids(box: Sandbox) -> None:
    """The failing doctests are named by their node ids, and each runs again by its id."""
    run = run_tests(box, test_cmd="python -m pytest")
    assert run.summary is not None and run.result.captured is not None
    assert f'nodeid="{RST_ID}"'.encode() in run.result.captured  # as our plugin wrote it
    assert sorted(run.summary.failing_ids()) == [RST_ID, MODULE_ID]
    assert set(run.summary.outcomes) == {RST_ID, MODULE_ID, "tests/test_plain.py::test_plain"}
    text = run.render()
    assert f"FAILURE {RST_ID}:" in text and f"FAILURE {MODULE_ID}:" in text
    known = list(run.summary.outcomes)
    for test_id in (RST_ID, MODULE_ID):
        assert resolve_test_ids([test_id], known).ids == (test_id,)
        again = run_tests(box, test_cmd="python -m pytest", test_ids=[test_id])
        assert again.summary is not None and dict(again.summary.outcomes) == {test_id: "failed"}


@pytest.mark.docker
def test_doctest_ids_from_a_sandbox_run_are_pytests_own(open_sandbox, make_repo):
    session = open_sandbox(make_repo(DOCTESTS))
    check_ids(session.box)


def test_doctest_ids_from_the_newest_pytest_are_its_own(tmp_path: Path):
    workspace = tmp_path / "ws"
    for rel, text in DOCTESTS.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    box = LocalSandbox(
        workspace=workspace,
        control_dir=tmp_path / "control",
        limits=Limits(command_timeout_s=60.0),
        log_dir=tmp_path / "logs",
    )
    with box:
        check_ids(box)


# -- in-process: ids from the report's attributes --------------------------------------------


def ids(*cases: str) -> list[str]:
    """The ids parse_junit gives the <testcase> elements `cases`."""
    xml = f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>"
    return list(parse_junit(xml.encode()).outcomes)


def test_the_recorded_node_id_comes_first():
    case = (
        '<testcase classname="docs.introduction.rst" name="introduction.rst" '
        f'file="docs/introduction.rst" nodeid="{RST_ID}"/>'
    )
    assert ids(case) == [RST_ID]
    # A method inherited from a mixin: the file is where it is written, the id where it runs.
    mixin = (
        '<testcase classname="tests.test_a.TestA" name="test_x" file="tests/mixin.py" '
        'nodeid="tests/test_a.py::TestA::test_x"/>'
    )
    assert ids(mixin) == ["tests/test_a.py::TestA::test_x"]


def test_without_a_node_id_doctests_are_rebuilt_as_pytest_names_them():
    assert ids(
        # xunit1, with the file attribute
        '<testcase classname="docs.introduction.rst" name="introduction.rst" '
        'file="docs/introduction.rst"/>',
        '<testcase classname="pkg.mod" name="pkg.mod.double" file="pkg/mod.py"/>',
        '<testcase classname="README.md" name="README.md" file="README.md"/>',
    ) == [RST_ID, MODULE_ID, "README.md::README.md"]
    assert ids(
        # xunit2 (pytest's default): no file attribute
        '<testcase classname="docs.introduction.rst" name="introduction.rst"/>',
        '<testcase classname="pkg.mod" name="pkg.mod.double"/>',
        '<testcase classname="pkg.mod" name="pkg.mod"/>',  # the module's own docstring
        '<testcase classname="tests.test_a.TestA" name="test_x[a.b]"/>',
    ) == [RST_ID, MODULE_ID, "pkg/mod.py::pkg.mod", "tests/test_a.py::TestA::test_x[a.b]"]
