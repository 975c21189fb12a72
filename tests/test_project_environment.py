"""A broken environment is told from a bug before any token is spent, and `--timeout` bounds the
whole run: the real CLI, real sandboxes, real git repositories, the scripted model server."""

from __future__ import annotations

import pytest

from tests.test_fix_cli import report, run_fix
from worker.llm.scripted_server import ScriptedServer, text, tool_call

pytestmark = pytest.mark.docker


def test_a_module_that_is_not_installed_stops_the_run_before_any_model_call(make_repo, tmp_path):
    repo = make_repo(
        {
            "calc.py": "def add(a, b):\n    return a - b\n",
            "tests/test_calc.py": (
                "import yaml_not_installed_anywhere\nfrom calc import add\n\n"
                "def test_add():\n    assert add(1, 2) == 3\n"
            ),
        }
    )
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert server.requests == []  # not one token spent
    assert proc.returncode == 6, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "project_environment"
    assert "'yaml_not_installed_anywhere'" in r["reason"] and "not installed" in r["reason"]
    assert "no set-up was found" in r["reason"] and "--setup" in r["reason"]
    assert r["setup"]["source"] == "none"
    assert r["steps"] == 0
    # One line on stderr, naming the module.
    assert "yaml_not_installed_anywhere" in proc.stderr.strip().splitlines()[-1]


def test_a_src_layout_left_uninstalled_is_named_as_such(make_repo, tmp_path):
    repo = make_repo(
        {
            "pyproject.toml": (
                '[build-system]\nrequires = ["setuptools"]\nbuild-backend = '
                '"setuptools.build_meta"\n[project]\nname = "mypkg"\nversion = "1.0"\n'
            ),
            "src/mypkg/__init__.py": "def double(x):\n    return x + x + 1\n",
            "tests/test_double.py": (
                "from mypkg import double\n\ndef test_double():\n    assert double(2) == 4\n"
            ),
        }
    )
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", "--no-setup", base_url=server.base_url)
    assert server.requests == []
    assert proc.returncode == 6, proc.stderr
    r = report(tmp_path / "out")
    assert "src/mypkg" in r["reason"] and "not installed" in r["reason"]
    assert "--no-setup" in r["reason"]
    assert r["setup"]["source"] == "off"


def test_a_missing_module_of_the_repositorys_own_package_is_the_models_to_fix(make_repo, tmp_path):
    repo = make_repo(
        {
            "pkg/__init__.py": "from pkg.helpers import double\n",
            "pkg/helper.py": "def double(x):\n    return 2 * x\n",
            "tests/test_pkg.py": (
                "import pkg\n\ndef test_double():\n    assert pkg.double(2) == 4\n"
            ),
        }
    )
    script = [text("I cannot fix this."), text("Really.")]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert len(server.requests) >= 1  # a bug in the code: the model is asked
    assert proc.returncode == 1, proc.stderr
    assert report(tmp_path / "out")["status"] == "not_fixed"


def test_timeout_bounds_the_whole_run_the_baseline_included(make_repo, tmp_path):
    repo = make_repo(
        {
            "slow.py": "def answer():\n    return 41\n",
            "tests/test_slow.py": (
                "import time\nfrom slow import answer\n\n"
                "def test_answer():\n    time.sleep(30)\n    assert answer() == 42\n"
            ),
        }
    )
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", "--timeout", "8", base_url=server.base_url)
    assert server.requests == []
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert "time budget exhausted" in r["reason"]
    assert r["tests_before"]["timed_out"] is True
    # The baseline was cut at the run's budget, not at the test timeout (300 s), and the run
    # ended soon after: the figure in the reason is the real elapsed time.
    assert r["durations"]["tests_before"] < 12
    assert r["durations"]["total"] < 25


def test_a_project_that_needs_another_python_is_told_so_before_anything_runs(make_repo, tmp_path):
    repo = make_repo(
        {
            "pyproject.toml": (
                '[project]\nname = "future"\nversion = "1"\nrequires-python = ">=3.99"\n'
            ),
            "future.py": "X = 1\n",
            "tests/test_future.py": "def test_x():\n    assert False\n",
        }
    )
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert server.requests == []
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "requires Python >=3.99" in last and "worker sandbox build --base" in last
    r = report(tmp_path / "out")
    assert r["tests_before"] is None  # nothing ran: no set-up, no baseline
    assert r["setup"]["requires_python"] == ">=3.99" and r["setup"]["python"].startswith("3.")


def test_a_fix_is_verified_where_the_tests_touch_their_own_fixtures(make_repo, tmp_path):
    """jinja2's loader test `os.utime`s its template: before, the locked test files failed it in
    the sandbox (a failure the model then chased) and in the clean re-check."""
    repo = make_repo(
        {
            "loader.py": (
                "import os\n\n\ndef stamp(path):\n    return os.stat(path).st_mtime\n\n\n"
                "def shout(text):\n    return text.lower()\n"
            ),
            "tests/res/page.html": "hello\n",
            "tests/test_loader.py": (
                "import os, pathlib, time\nimport loader\n\n"
                "PAGE = pathlib.Path(__file__).parent / 'res' / 'page.html'\n\n\n"
                "def test_mtime_moves():\n"
                "    before = loader.stamp(PAGE)\n"
                "    os.utime(PAGE, (time.time() + 90, time.time() + 90))\n"
                "    assert loader.stamp(PAGE) > before\n\n\n"
                "def test_shout():\n    assert loader.shout(PAGE.read_text()) == 'HELLO\\n'\n"
            ),
        }
    )
    fix = tool_call("replace", {"path": "loader.py", "old": "text.lower()", "new": "text.upper()"})
    with ScriptedServer(script=[fix]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["tests_before"]["failing"] == ["tests/test_loader.py::test_shout"]
    assert r["verification"]["passed"] is True and r["verdict"]["passed"] is True
