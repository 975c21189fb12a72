"""A real project with dependencies, out of the box: `worker fix` with no set-up flag infers the
set-up from pyproject.toml, installs it once from a real package index (a container of the
test's own, reached through the set-up's filtering proxy the way PyPI would be), starts warm the
second time, and sends the model only the bug; a dependency that cannot be installed ends the
run in one line before any model call."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pkg_index import make_package_index  # noqa: F401 (a fixture, used by name)
from tests.test_fix_cli import report, run_fix
from tests.test_setup_network import (
    BACKEND,
    built_images,  # noqa: F401 (a fixture, used by name)
)
from worker.llm.scripted_server import ScriptedServer, tool_call

pytestmark = pytest.mark.docker

DISTS = {
    "wkdemo-dep": {"version": "1.0", "files": {"wkdemo_dep/__init__.py": "VALUE = 41\n"}},
    "wkdemo-testdep": {
        "version": "2.0",
        "files": {"wkdemo_testdep/__init__.py": "def expected():\n    return 42\n"},
    },
}
# The project's own build backend (tests/test_setup_network.py) declares these dependencies in
# the wheel's metadata; pyproject.toml declares them for the inference to read.
PYPROJECT = """\
# {salt}
[build-system]
requires = []
build-backend = "backend"
backend-path = ["_build"]

[project]
name = "wkdemo_app"
version = "0.1"
dependencies = ["{dep}"]

[project.optional-dependencies]
test = ["wkdemo-testdep"]
docs = ["sphinx-not-in-the-index"]
"""
APP = (
    "from wkdemo_dep import VALUE\n\n\ndef answer():\n    return VALUE\n\n\n"
    "def value():\n    return VALUE\n"
)
TESTS = (
    "from wkdemo_testdep import expected\n\nimport wkdemo_app\n\n\n"
    "def test_answer():\n    assert wkdemo_app.answer() == expected()\n\n\n"
    "def test_value():\n    assert wkdemo_app.value() == 41\n"
)


def project(make_repo, *, dep: str = "wkdemo-dep") -> Path:
    backend = BACKEND.replace('"Requires-Dist: wkdemo-dep"', f'"Requires-Dist: {dep}"')
    return make_repo(
        {
            "pyproject.toml": PYPROJECT.format(salt=os.urandom(8).hex(), dep=dep),
            "_build/backend.py": backend,
            "wkdemo_app/__init__.py": APP,
            "tests/test_app.py": TESTS,
        }
    )


@pytest.fixture
def index_env(docker_client, make_package_index) -> Iterator[dict[str, str]]:  # noqa: F811
    """A real index on Docker's default bridge, the network set-up's proxy goes out by; pip is
    pointed at it as a user points pip at a private index."""
    index = make_package_index(network="bridge", dists=DISTS)
    ip = index.ip("bridge")
    yield {"PIP_INDEX_URL": f"http://{ip}:8000/simple/", "PIP_TRUSTED_HOST": ip}


def test_a_project_with_dependencies_is_set_up_once_and_only_its_bug_goes_to_the_model(
    make_repo,
    tmp_path,
    index_env,
    built_images,  # noqa: F811
):
    repo = project(make_repo)
    fix = tool_call(
        "replace",
        {"path": "wkdemo_app/__init__.py", "old": "def answer():\n    return VALUE\n",
         "new": "def answer():\n    return VALUE + 1\n"},
    )  # fmt: skip
    with ScriptedServer(script=[fix]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=index_env)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    setup = r["setup"]
    built_images.append(setup["image"])
    assert setup["source"] == "inferred" and setup["network"] == "index"
    assert setup["command"] == "python -m pip install -e '.[test]'"
    assert setup["from"] and "optional-dependencies" in setup["from"][0]
    assert setup["cached"] is False and setup["python"].startswith("3.")
    # The inferred command was said on one line before it ran.
    assert "inferred set-up: python -m pip install -e '.[test]'" in proc.stderr
    # Only the bug's test fails before the change: the environment is whole.
    assert r["tests_before"]["failing"] == ["tests/test_app.py::test_answer"]
    assert r["tests_before"]["counts"]["passed"] == 1
    assert r["status"] == "fixed" and r["verification"]["passed"] is True

    # The second run on the same repository starts warm.
    with ScriptedServer(script=[fix]) as server:
        proc = run_fix(repo, tmp_path / "out2", base_url=server.base_url, env=index_env)
    assert proc.returncode == 0, proc.stderr
    again = report(tmp_path / "out2")["setup"]
    assert again["cached"] is True and again["image"] == setup["image"]


def test_a_dependency_the_index_does_not_have_ends_the_run_before_any_model_call(
    make_repo, tmp_path, index_env
):
    repo = project(make_repo, dep="wkdemo-not-in-the-index")
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=index_env)
    assert server.requests == []
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "set-up command failed" in last and "wkdemo-not-in-the-index" in last
    r = report(tmp_path / "out")
    assert r["status"] == "project_environment" and r["steps"] == 0
    assert r["setup"]["source"] == "inferred" and "wkdemo-not-in-the-index" in r["setup"]["error"]
