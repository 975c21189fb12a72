"""Projects set up as their maintainers set them up, with no flag: a version read from git by
setuptools-scm or hatch-vcs, a C extension compiled at install, the files a build writes into
the tree kept for the tests; and a set-up that fails says why in one line and keeps its log.

The build back-ends are the real ones (wheels from PyPI, tests/index-wheels.txt), served by a
package index of the test's own (tests/pkg_index.py), reached through the set-up's fence.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.pkg_index import make_package_index, real_wheels  # noqa: F401 (a fixture)
from tests.test_fix_cli import report, run_fix, tree_state
from tests.test_setup_network import built_images  # noqa: F401 (a fixture, used by name)
from tests.test_show_page import show
from worker.llm.scripted_server import ScriptedServer

pytestmark = pytest.mark.docker


@pytest.fixture
def build_index(docker_client, make_package_index) -> Iterator[dict[str, str]]:  # noqa: F811
    """An index with the real build back-ends on Docker's default bridge (set-up's way out)."""
    index = make_package_index(network="bridge", dists={}, wheels=tuple(real_wheels()))
    ip = index.ip("bridge")
    yield {"PIP_INDEX_URL": f"http://{ip}:8000/simple/", "PIP_TRUSTED_HOST": ip}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def run_tests_json(
    repo: Path, env: dict[str, str], *extra: str
) -> tuple[subprocess.CompletedProcess[str], dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--repo", str(repo)]
        + ["--json", *extra],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )
    data = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc, data


SCM_PYPROJECT = """\
# {salt}
[build-system]
requires = ["setuptools>=64", "setuptools-scm>=8"]
build-backend = "setuptools.build_meta"

[project]
name = "scmdemo"
dynamic = ["version"]

[tool.setuptools]
packages = ["scmdemo"]

[tool.setuptools_scm]
version_file = "scmdemo/_version.py"
"""
VERSION_TESTS = """\
from importlib.metadata import version

from {package}._version import __version__


def test_the_installed_version_is_the_checkouts():
    assert version("{dist}") == "{expected}"


def test_the_version_file_the_build_wrote_is_there():
    assert __version__ == "{expected}"
"""


def tagged(make_repo, files: dict[str, str], *, tag: str, after: int) -> Path:
    """A repository with `files`, tagged `tag`, then `after` more commits."""
    repo = make_repo({**files, ".gitignore": "_version.py\n"})
    git(repo, "tag", tag)
    for n in range(after):
        (repo / f"NOTES{n}.txt").write_text(f"change {n}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"change {n}")
    return repo


def test_a_version_from_git_by_setuptools_scm_and_the_file_it_writes(
    make_repo,
    build_index,
    built_images,  # noqa: F811
):
    repo = tagged(
        make_repo,
        {
            "pyproject.toml": SCM_PYPROJECT.format(salt=os.urandom(8).hex()),
            "scmdemo/__init__.py": "",
            "tests/test_version.py": VERSION_TESTS.format(
                package="scmdemo", dist="scmdemo", expected="1.4.1.dev2"
            ),
        },
        tag="v1.4.0",
        after=2,
    )
    before = tree_state(repo)
    proc, run = run_tests_json(repo, build_index)
    assert proc.returncode == 0, proc.stderr
    assert run["counts"] == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}
    assert "given 1.4.1.dev2" in proc.stderr
    assert "scmdemo/_version.py" in proc.stderr  # said: set-up wrote it, and it is kept
    # The user's checkout is as it was: no _version.py, no commit, no tag.
    assert tree_state(repo) == before
    built_images.extend(_setup_images(proc.stderr))


def test_a_version_from_git_by_hatch_vcs_in_a_src_layout(
    make_repo,
    build_index,
    built_images,  # noqa: F811
):
    pyproject = (
        f"# {os.urandom(8).hex()}\n"
        '[build-system]\nrequires = ["hatchling", "hatch-vcs"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "hatchdemo"\ndynamic = ["version"]\n'
        '[tool.hatch.version]\nsource = "vcs"\n'
        '[tool.hatch.build.hooks.vcs]\nversion-file = "src/hatchdemo/_version.py"\n'
    )
    repo = tagged(
        make_repo,
        {
            "pyproject.toml": pyproject,
            "src/hatchdemo/__init__.py": "",
            "tests/test_version.py": VERSION_TESTS.format(
                package="hatchdemo", dist="hatchdemo", expected="2.0.0"
            ),
        },
        tag="2.0.0",
        after=0,
    )
    proc, run = run_tests_json(repo, build_index)
    assert proc.returncode == 0, proc.stderr
    assert run["counts"]["passed"] == 2 and run["failing"] == []
    built_images.extend(_setup_images(proc.stderr))


def test_a_version_setuptools_git_versioning_reads_from_pkg_info_alone(
    make_repo,
    build_index,
    built_images,  # noqa: F811
):
    """setuptools-git-versioning has no variable for a build without git: without one it says
    0.0.1. It reads an sdist's PKG-INFO first, so set-up's copy gets one with the checkout's
    version; the user's tree and the test runs' tree never do."""
    pyproject = (
        f"# {os.urandom(8).hex()}\n"
        '[build-system]\nrequires = ["setuptools>=64", "setuptools-git-versioning>=2"]\n'
        'build-backend = "setuptools.build_meta"\n'
        '[project]\nname = "sgvdemo"\ndynamic = ["version"]\n'
        "[tool.setuptools-git-versioning]\nenabled = true\n"
        '[tool.setuptools]\npackages = ["sgvdemo"]\n'
    )
    repo = tagged(
        make_repo,
        {
            "pyproject.toml": pyproject,
            "sgvdemo/__init__.py": "",
            "tests/test_version.py": (
                "import os\nfrom importlib.metadata import version\n\n\n"
                "def test_the_installed_version_is_the_checkouts():\n"
                '    assert version("sgvdemo") == "2.3.0"\n\n\n'
                "def test_the_tree_has_no_pkg_info():\n"
                '    assert not os.path.exists("PKG-INFO")\n'
            ),
        },
        tag="v2.3.0",
        after=0,
    )
    before = tree_state(repo)
    proc, run = run_tests_json(repo, build_index)
    assert proc.returncode == 0, proc.stderr
    assert run["counts"] == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}
    assert "given 2.3.0 in PKG-INFO" in proc.stderr
    assert tree_state(repo) == before
    built_images.extend(_setup_images(proc.stderr))


C_SOURCE = """\
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *twice(PyObject *self, PyObject *args) {
    long n;
    if (!PyArg_ParseTuple(args, "l", &n)) return NULL;
    return PyLong_FromLong(2 * n);
}

static PyMethodDef methods[] = {{"twice", twice, METH_VARARGS, "2n"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speed", NULL, -1, methods};
PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&module); }
"""


def test_a_c_extension_is_compiled_in_set_up_and_imported_by_the_tests(
    make_repo,
    build_index,
    built_images,  # noqa: F811
):
    repo = make_repo(
        {
            "pyproject.toml": (
                f'# {os.urandom(8).hex()}\n[build-system]\nrequires = ["setuptools>=64"]\n'
                'build-backend = "setuptools.build_meta"\n'
                '[project]\nname = "cdemo"\nversion = "0.1"\n'
            ),
            "setup.py": (
                "from setuptools import Extension, setup\n\n"
                'setup(packages=["cdemo"], '
                'ext_modules=[Extension("cdemo._speed", ["cdemo/_speed.c"])])\n'
            ),
            "cdemo/__init__.py": "from cdemo._speed import twice\n",
            "cdemo/_speed.c": C_SOURCE,
            "tests/test_speed.py": (
                "import cdemo\n\n\ndef test_twice():\n    assert cdemo.twice(21) == 42\n"
            ),
        }
    )
    proc, run = run_tests_json(repo, build_index)
    assert proc.returncode == 0, proc.stderr
    assert run["counts"]["passed"] == 1, proc.stderr
    built_images.extend(_setup_images(proc.stderr))


def test_a_failed_set_up_names_its_cause_and_keeps_its_whole_log(make_repo, tmp_path, build_index):
    # setuptools-scm with no checkout to read a version from (a plain folder), asking git of a
    # folder that is no repository's top: the sandbox's copy is one, but not there.
    repo = make_repo(
        {
            "pyproject.toml": SCM_PYPROJECT.format(salt=os.urandom(8).hex()) + 'root = "scmdemo"\n',
            "scmdemo/__init__.py": "",
            "tests/test_x.py": "def test_x():\n    pass\n",
        },
        commit=False,
    )
    subprocess.run(["rm", "-rf", str(repo / ".git")], check=True)
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=build_index)
    assert server.requests == []
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    # The cause, not pip's closing lines ("See above for details").
    assert "LookupError" in last and "unable to detect version" in last, last
    assert "See above" not in last
    r = report(tmp_path / "out")
    assert r["setup"]["log"] == "setup.log"
    log = (tmp_path / "out" / "setup.log").read_text()
    assert "LookupError" in log and "Traceback" in log
    # ...and in the run's page, where the reader looks first.
    page = show(tmp_path / "out").read_text()
    assert 'id="setup-log"' in page and "unable to detect version" in page


def _setup_images(stderr: str) -> list[str]:
    return [w.rstrip(".,:)") for w in stderr.split() if w.startswith("worker-setup:")][:1]


def test_set_up_installs_what_a_fresh_environment_would_not_what_the_image_has(
    make_repo,
    build_index,
    built_images,  # noqa: F811
):
    # The image's Python has Debian's pluggy 1.0 (pytest's); a fresh venv, as the project's CI
    # makes, gets the newest the index has (1.7.0) for the same range.
    repo = make_repo(
        {
            "pyproject.toml": (
                f'# {os.urandom(8).hex()}\n[build-system]\nrequires = ["setuptools>=64"]\n'
                'build-backend = "setuptools.build_meta"\n'
                '[project]\nname = "freshdemo"\nversion = "0.1"\n'
                '[project.optional-dependencies]\ntest = ["pluggy>=1.0"]\n'
                "[tool.setuptools]\npackages = []\n"
            ),
            "tests/test_env.py": (
                'import pluggy\n\n\ndef test_newest():\n    assert pluggy.__version__ == "1.7.0"\n'
            ),
        }
    )
    proc, run = run_tests_json(repo, build_index)
    assert proc.returncode == 0, proc.stderr
    assert run["counts"]["passed"] == 1
    built_images.extend(_setup_images(proc.stderr))


CI_TEST_JOB = """\
name: tests
on: [push, pull_request]
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - run: python -m pip install build twine
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: |
          python -m pip install -U pip
          python -m pip install 'roundto==1.0' codecov
      - run: pytest -q
"""


def test_what_only_the_ci_s_test_job_installs_is_installed_and_said_with_its_line(
    make_repo,
    tmp_path,
    docker_client,
    make_package_index,  # noqa: F811
    built_images,  # noqa: F811
):
    # The tests import `roundto`, which no project file names: only the workflow's test job
    # installs it (its build job's twine and the upload tool codecov are not the tests').
    dist = {
        "version": "1.0",
        "files": {"roundto/__init__.py": "def up(x):\n    return -(-x // 1)\n"},
    }
    index = make_package_index(network="bridge", dists={"roundto": dist}, wheels=real_wheels())
    ip = index.ip("bridge")
    env = {"PIP_INDEX_URL": f"http://{ip}:8000/simple/", "PIP_TRUSTED_HOST": ip}
    files = {
        "pyproject.toml": f'# {os.urandom(8).hex()}\n[project]\nname = "ceil"\nversion = "1"\n',
        "tests/test_up.py": "from roundto import up\n\n\ndef test_up():\n    assert up(1.2) == 2\n",
    }
    plain = make_repo(files)
    proc, _run = run_tests_json(plain, env)
    assert proc.returncode != 0 and "cannot import 'roundto'" in proc.stderr, proc.stderr[-2000:]
    repo = make_repo({**files, ".github/workflows/tests.yml": CI_TEST_JOB})
    proc, run = run_tests_json(repo, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert run["counts"]["passed"] == 1, run
    assert "CI's pip install (.github/workflows/tests.yml:14)" in proc.stderr
    assert "&& python -m pip install roundto==1.0 (from" in proc.stderr
    assert "twine" not in proc.stderr
    assert "not followed: CI's pip install: pip, codecov (CI's own tools)" in proc.stderr


GITLAB_CI = """\
default:
  before_script:
    - python -m pip install 'roundto==1.0'
lint:
  script: ruff check .
test:
  script:
    - make table
    - pip install -e .
    - pytest -q
"""
MAKEFILE = "table:\n\tpython -c \"open('ceil/_table.py', 'w').write('STEP = 1')\"\n"


def test_a_gitlab_job_s_installs_and_make_step_run_in_set_up_before_the_project(
    make_repo,
    docker_client,
    make_package_index,  # noqa: F811
    built_images,  # noqa: F811
):
    # Only .gitlab-ci.yml says what the tests need: its default before_script installs
    # `roundto` and its test job runs `make table`, which writes the module the tests import.
    dist = {
        "version": "1.0",
        "files": {"roundto/__init__.py": "def up(x):\n    return -(-x // 1)\n"},
    }
    index = make_package_index(network="bridge", dists={"roundto": dist}, wheels=real_wheels())
    ip = index.ip("bridge")
    env = {"PIP_INDEX_URL": f"http://{ip}:8000/simple/", "PIP_TRUSTED_HOST": ip}
    repo = make_repo(
        {
            "pyproject.toml": f'# {os.urandom(8).hex()}\n[project]\nname = "ceil"\nversion = "1"\n',
            "ceil/__init__.py": "",
            "Makefile": MAKEFILE,
            ".gitlab-ci.yml": GITLAB_CI,
            "tests/test_up.py": (
                "from roundto import up\n\nfrom ceil._table import STEP\n\n\n"
                "def test_up():\n    assert up(1.2) == 2 * STEP\n"
            ),
        }
    )
    proc, run = run_tests_json(repo, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert run["counts"]["passed"] == 1, run
    assert "CI's pip install (.gitlab-ci.yml:3)" in proc.stderr
    assert "CI's build steps make table (.gitlab-ci.yml:8)" in proc.stderr
    assert "&& make table && python -m pip install -e ." in proc.stderr
    assert "ruff" not in proc.stderr
    assert not (repo / "ceil" / "_table.py").exists()  # the user's tree is left as it was


def test_a_ci_build_step_that_downloads_from_another_host_is_refused_in_one_line(make_repo):
    # CI's `make data` fetches from a host the set-up fence does not reach: it runs in the
    # fence, never on the host, and set-up stops before any test, naming the host refused.
    fetch = "import urllib.request; urllib.request.urlopen('http://downloads.example.invalid/x')"
    repo = make_repo(
        {
            "pyproject.toml": f'# {os.urandom(8).hex()}\n[project]\nname = "c"\nversion = "1"\n',
            "Makefile": f'data:\n\tpython -c "{fetch}"\n',
            ".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - run: make data\n"
            "      - run: pytest\n",
            "tests/test_a.py": "def test_a():\n    assert True\n",
        }
    )
    proc, run = run_tests_json(repo, {})
    assert proc.returncode == 6, proc.stderr[-2000:]
    assert run == {}
    assert "CI's build steps make data (.github/workflows/ci.yml:4)" in proc.stderr
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("worker: error:")]
    assert "the set-up proxy refused downloads.example.invalid" in line


SERVICES_WORKFLOW = """\
on: push
env:
  MY_FEATURE: 1
jobs:
  test:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
        env:
          POSTGRES_PASSWORD: postgres
      redis:
        image: redis
    steps:
      - run: pytest
        env:
          GREETING: hello world
          TOKEN: ${{ secrets.TOKEN }}
"""
ENV_TEST = """\
import os


def test_one():
    assert os.environ.get("MY_FEATURE") == "1"
    assert os.environ.get("GREETING") == "hello world"
    assert "POSTGRES_PASSWORD" not in os.environ and "TOKEN" not in os.environ
"""


def test_the_services_ci_starts_are_said_and_its_environment_reaches_the_tests(make_repo):
    # The test passes only with the workflow's env (the workflow's and the test step's); the
    # service's and the secret are not the tests'.
    repo = make_repo({"tests/test_one.py": ENV_TEST, ".github/workflows/ci.yml": SERVICES_WORKFLOW})
    proc, run = run_tests_json(repo, {})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert run["counts"]["passed"] == 1
    assert (
        "CI starts services the sandbox does not provide: postgres (.github/workflows/ci.yml:8), "
        "redis (.github/workflows/ci.yml:12); tests that need them fail here"
    ) in proc.stderr
    assert (
        "CI's environment for the tests: MY_FEATURE=1 (.github/workflows/ci.yml:3), "
        "GREETING=hello world (.github/workflows/ci.yml:17); "
        "left out: TOKEN (a secret, .github/workflows/ci.yml:18)"
    ) in proc.stderr
