"""A project that asks for another Python gets it with no flag: the image for a Debian release
that ships it is built once (debootstrap, as the default's base is) and reused.

The first run on a host builds `worker-base:trixie` and `worker-sandbox:py3.13` (239 s and 305 s
in two cold builds here; CI builds them once); the set-up behind the filtering proxy, whose proxy
stays the default image, then runs on it like any other.
"""

from __future__ import annotations

import json
import os

import pytest

from sandbox.container.suites import suite_for
from tests.pkg_index import make_package_index  # noqa: F401 (a fixture, used by name)
from tests.test_fix_cli import report, run_fix
from tests.test_inferred_setup import index_env  # noqa: F401 (a fixture, used by name)
from tests.test_sandbox_cli import worker
from tests.test_setup_network import BACKEND, built_images  # noqa: F401 (a fixture)
from worker.llm.scripted_server import ScriptedServer

pytestmark = pytest.mark.docker

PYPROJECT = """\
# {salt}
[build-system]
requires = []
build-backend = "backend"
backend-path = ["_build"]

[project]
name = "wkdemo_app"
version = "0.1"
requires-python = ">=3.12"
dependencies = ["wkdemo-dep"]

[project.optional-dependencies]
test = ["wkdemo-testdep"]
"""
TESTS = """\
import sys

from wkdemo_dep import VALUE


def test_the_python_asked_for():
    assert sys.version_info >= (3, 12), sys.version


def test_the_set_up_ran_there():
    assert VALUE == 41
"""


def test_a_project_on_python_3_12_up_passes_its_baseline_with_no_flag(
    make_repo,
    tmp_path,
    docker_client,
    index_env,  # noqa: F811
    built_images,  # noqa: F811
):
    repo = make_repo(
        {
            "pyproject.toml": PYPROJECT.format(salt=os.urandom(8).hex()),
            "_build/backend.py": BACKEND,
            "wkdemo_app/__init__.py": "",
            "tests/test_app.py": TESTS,
        }
    )
    args = ("sandbox", "run-tests", "--repo", str(repo), "--json")
    proc = worker(*args, env=index_env, timeout=1200)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["passed"] is True and summary["counts"]["passed"] == 2
    said = [line.strip() for line in proc.stderr.splitlines() if line.strip().startswith("Python")]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith(
        "Python 3.13 (requires-python >=3.12): image worker-sandbox:py3.13, "
    ) and said[0].endswith(("up to date", " s"))
    image = docker_client.images.get(suite_for("3.13").image)

    # `worker fix` makes the same choice, now warm, and records it and why.
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=index_env)
    assert server.requests == []
    assert proc.returncode == 0, proc.stderr  # the tests pass: nothing to fix
    assert "Python 3.13 (requires-python >=3.12): image worker-sandbox:py3.13, up to date" in (
        proc.stderr
    )
    setup = report(tmp_path / "out")["setup"]
    built_images.append(setup["image"])  # the set-up image run-tests made, warm here
    assert setup["python_choice"] == {
        "version": "3.13",
        "debian": "trixie",
        "image": "worker-sandbox:py3.13",
        "why": "requires-python >=3.12",
        "passed_over": [],
        "built_s": None,
    }
    assert setup["python"].startswith("3.13.") and setup["cached"] is True
    assert docker_client.images.get(suite_for("3.13").image).id == image.id


def test_a_named_image_wins_and_its_python_is_still_checked(make_repo, tmp_path, sandbox_image):
    repo = make_repo(
        {
            "pyproject.toml": '[project]\nname = "n"\nversion = "1"\nrequires-python = ">=3.12"\n',
            "tests/test_n.py": "def test_n():\n    pass\n",
        }
    )
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", "--image", sandbox_image, base_url=server.base_url)
    assert server.requests == []
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert f"the sandbox image {sandbox_image} has 3.11." in last
    assert report(tmp_path / "out")["setup"]["python_choice"] is None


def test_the_image_for_another_python_can_be_built_ahead(docker_client):
    proc = worker("sandbox", "build", "--python", "3.13", timeout=1200)
    assert proc.returncode == 0, proc.stderr
    image = docker_client.images.get("worker-sandbox:py3.13")
    assert f"image worker-sandbox:py3.13 is up to date ({image.short_id})" in proc.stderr or (
        "built worker-sandbox:py3.13" in proc.stderr
    )
    wrong = worker("sandbox", "build", "--python", "3.12")
    assert wrong.returncode == 2 and "known are 3.11 (Debian bookworm)" in wrong.stderr
