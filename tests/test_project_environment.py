"""A broken environment is told from a bug before any token is spent, and `--timeout` bounds the
whole run: the real CLI, real sandboxes, real git repositories, the scripted model server."""

from __future__ import annotations

import json
import os

import pytest

from tests.test_ci_cli import ci
from tests.test_fix_cli import report, run_fix
from tests.test_sandbox_cli import worker
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


FROBNICATES = {
    "frob.py": "def double(x):\n    return x * 2\n",
    "tests/test_frob.py": (
        "import subprocess\nfrom frob import double\n\n\n"
        "def test_the_tool_agrees():\n"
        "    out = subprocess.run(['frobnicate-tool', '--double', '2'], capture_output=True,\n"
        "                         text=True, check=True).stdout\n"
        "    assert int(out) == double(2)\n\n\n"
        "def test_double():\n    assert double(3) == 6\n"
    ),
}


def test_a_program_the_sandbox_lacks_stops_the_run_before_any_model_call(make_repo, tmp_path):
    repo = make_repo(FROBNICATES)
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert server.requests == []  # not one token spent
    assert proc.returncode == 6, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "project_environment" and r["steps"] == 0
    assert r["tests_before"]["failing"] == ["tests/test_frob.py::test_the_tool_agrees"]
    # One line on stderr: the program, the first test that needs it, how to provide it.
    last = proc.stderr.strip().splitlines()[-1]
    assert "'frobnicate-tool'" in last and "tests/test_frob.py::test_the_tool_agrees" in last
    assert "--image" in last and "docs/configuration.md" in last
    assert "no model call made" in r["reason"]


def test_a_custom_image_with_the_program_is_the_remedy_the_line_names(
    make_repo, tmp_path, docker_client, sandbox_image
):
    # As docs/configuration.md says: an image FROM the default one, with the program added.
    context = tmp_path / "image"
    context.mkdir()
    (context / "frobnicate-tool").write_text("#!/bin/sh\necho $(($2 * 2))\n")
    (context / "Dockerfile").write_text(
        f"FROM {sandbox_image}\nUSER root\nCOPY frobnicate-tool /usr/local/bin/\n"
        "RUN chmod 755 /usr/local/bin/frobnicate-tool\nUSER 1000:1000\n"
    )
    tag = f"worker-test-tools:{os.getpid()}"
    docker_client.images.build(path=str(context), tag=tag, rm=True, network_mode="none")
    repo = make_repo(FROBNICATES)
    try:
        with ScriptedServer(script=[]) as server:
            proc = run_fix(repo, tmp_path / "out", "--image", tag, base_url=server.base_url)
        assert server.requests == []
        assert proc.returncode == 0, proc.stderr  # nothing to fix: the tests pass there
        assert report(tmp_path / "out")["tests_before"]["passed"] is True
    finally:
        docker_client.images.remove(tag, force=True)


def test_a_wrong_program_name_built_by_the_code_is_the_models_to_fix(make_repo, tmp_path):
    # A flipped test gives the pager Windows' suffix on Linux: the tests cannot start
    # 'less.exe', a name the repository never writes out, so the model is asked, and its fix
    # is verified with the image's real less.
    repo = make_repo(
        {
            "pager.py": (
                "import os\nimport subprocess\n\n\ndef pager():\n"
                "    return 'less' + ('.exe' if os.name != 'nt' else '')\n\n\n"
                "def page(text):\n"
                "    return subprocess.run([pager()], input=text, capture_output=True, text=True,\n"
                "                          check=True).stdout\n"
            ),
            "tests/test_pager.py": (
                "from pager import page\n\n\n"
                "def test_page_passes_text_through():\n    assert page('hi\\n') == 'hi\\n'\n"
            ),
        }
    )
    fix = tool_call(
        "replace", {"path": "pager.py", "old": "os.name != 'nt'", "new": "os.name == 'nt'"}
    )
    with ScriptedServer(script=[fix]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert len(server.requests) >= 1  # a bug in the code: the model is asked
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["tests_before"]["failing"] == ["tests/test_pager.py::test_page_passes_text_through"]
    assert "'less.exe'" in json.dumps(server.requests[0])  # what the model was shown
    assert r["verification"]["passed"] is True and r["verdict"]["passed"] is True


def test_ci_and_run_tests_name_a_program_the_sandbox_lacks(make_repo, tmp_path):
    repo = make_repo({**FROBNICATES, "conftest.py": ""})
    with ScriptedServer(script=[]) as server:
        proc = ci(repo, tmp_path / "out", base_url=server.base_url)
    assert server.requests == []
    assert proc.returncode == 6, proc.stderr
    assert "'frobnicate-tool'" in proc.stderr.strip().splitlines()[-1]
    proc = worker("sandbox", "run-tests", "--repo", str(repo))
    assert proc.returncode == 1, proc.stderr
    assert "environment: the tests run 'frobnicate-tool'" in proc.stderr


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
    assert "3.11 (Debian bookworm), 3.13 (Debian trixie)" in last  # what there is
    r = report(tmp_path / "out")
    assert r["tests_before"] is None  # nothing ran: no set-up, no baseline
    assert r["setup"]["requires_python"] == ">=3.99" and r["setup"]["python_choice"] is None


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
