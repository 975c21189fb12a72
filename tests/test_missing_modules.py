"""Which import failures are the environment's (stop before the model) and which the code's."""

from __future__ import annotations

from pathlib import Path

from sandbox.container.results import CommandResult
from sandbox.ecosystems.python.missing_modules import missing_modules
from sandbox.testrun.junit import TestFailure, TestSummary
from sandbox.testrun.run import TestRun


def baseline(*failures: tuple[str, str], output: str = "") -> TestRun:
    summary = TestSummary(
        passed=1,
        failed=0,
        errors=len(failures),
        skipped=0,
        failures=tuple(
            TestFailure(test_id=tid, kind="error", message="collection failed", traceback=tb)
            for tid, tb in failures
        ),
    )
    result = CommandResult(
        command="pytest", exit_code=1, duration_s=0.1, timed_out=False, oom_killed=False,
        output=output, output_bytes=len(output), truncated=False,
    )  # fmt: skip
    return TestRun(command="pytest", result=result, summary=summary if failures else None,
                   expects_junit=True)  # fmt: skip


def tree(tmp_path: Path, *files: str) -> Path:
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    return tmp_path


def test_a_third_party_module_is_missing(tmp_path: Path) -> None:
    run = baseline(("tests/test_a.py", "E   ModuleNotFoundError: No module named 'yaml'"))
    (found,) = missing_modules(run, tree(tmp_path, "app.py"))
    assert (found.module, found.where, found.ours) == ("yaml", "tests/test_a.py", None)
    assert "not installed" in found.describe()


def test_the_projects_own_src_package_not_installed(tmp_path: Path) -> None:
    run = baseline(("tests/test_a.py", "ModuleNotFoundError: No module named 'mypkg.core'"))
    (found,) = missing_modules(run, tree(tmp_path, "src/mypkg/__init__.py"))
    assert found.ours == "src/mypkg" and "not installed" in found.describe()


def test_a_submodule_missing_from_a_package_at_the_root_is_a_bug(tmp_path: Path) -> None:
    run = baseline(("tests/test_a.py", "ModuleNotFoundError: No module named 'pkg.helpers'"))
    assert missing_modules(run, tree(tmp_path, "pkg/__init__.py")) == []


def test_an_installed_version_without_a_name_and_one_entry_per_package(tmp_path: Path) -> None:
    run = baseline(
        ("tests/test_a.py", "ImportError: cannot import name 'thing' from 'dep' (/opt/x.py)"),
        ("tests/test_b.py", "ImportError: cannot import name 'other' from 'dep.sub' (/opt)"),
        ("tests/test_c.py", "ImportError: cannot import name 'x' from 'app' (/workspace)"),
    )
    (found,) = missing_modules(run, tree(tmp_path, "app.py"))
    assert found.module == "dep" and "lacks a name" in found.describe()


def test_a_conftest_that_cannot_import_leaves_no_report_but_its_output(tmp_path: Path) -> None:
    output = "ImportError while loading conftest '/workspace/conftest.py'.\n" + (
        "E   ModuleNotFoundError: No module named 'requests'\n"
    )
    (found,) = missing_modules(baseline(output=output), tree(tmp_path, "conftest.py"))
    assert (found.module, found.where) == ("requests", "the test command")


SIX_LONG = """\
    def _import_module(name):
        \"\"\"Import module, returning the module after the last dot.\"\"\"
>       __import__(name)
E       ModuleNotFoundError: No module named 'cStringIO'

six.py:87: ModuleNotFoundError"""

SIX_SHORT = """\
six.py:165: in _resolve
    module = _import_module(self.mod)
six.py:87: in _import_module
    __import__(name)
E   ModuleNotFoundError: No module named 'cStringIO'"""


def test_a_name_the_repositorys_code_computes_and_imports_is_a_bug(tmp_path: Path) -> None:
    # A bug (a version test flipped) makes the code import a name that exists nowhere: that is
    # the model's to fix, not the set-up's, in pytest's long and short tracebacks alike.
    root = tree(tmp_path, "six.py")
    for traceback in (SIX_LONG, SIX_SHORT):
        run = baseline(("test_six.py::test_move_items[cStringIO]", traceback))
        assert missing_modules(run, root) == []


def test_a_dynamic_import_outside_the_repository_is_still_the_environments(
    tmp_path: Path,
) -> None:
    # A framework importing a configured plugin that is not installed: no edit mends that.
    framework = SIX_LONG.replace("six.py:87:", "/usr/lib/python3/dist-packages/fw/apps.py:87:")
    run = baseline(("tests/test_a.py", framework.replace("cStringIO", "fancy_plugin")))
    (found,) = missing_modules(run, tree(tmp_path, "app.py"))
    assert found.module == "fancy_plugin"
