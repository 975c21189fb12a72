"""The test command a project's tox.ini gives (sandbox/ecosystems/python/tox_command.py): read,
never run; in-process over real files, and once through the real sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox.ecosystems.python.ecosystem import PYTHON
from sandbox.ecosystems.python.tox_command import tox_test_command
from sandbox.worktree.repo_files import RepoFiles


def command(tmp_path: Path, tox: str, *folders: str) -> str | None:
    (tmp_path / "tox.ini").write_text(tox)
    for folder in folders:
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    return tox_test_command(RepoFiles(tmp_path))


def test_doctests_and_paths_the_tox_command_names_are_kept_its_coverage_is_not(tmp_path):
    tox = (
        "[tox]\nenvlist = py3\n\n[testenv]\ndeps = pytest\n"
        "commands =\n    python -m pip list\n"
        "    pytest --cov=boltons --doctest-modules boltons tests missing {posargs}\n"
    )
    assert command(tmp_path, tox, "boltons", "tests") == (
        "python -m pytest --doctest-modules boltons tests"
    )


def test_set_env_s_plain_values_go_before_the_command(tmp_path):
    tox = (
        "[testenv]\nset_env =\n    THREADING_TESTS = 1\n    py311: ONLY = x\n"
        "    HOME = {envtmpdir}\n    NOTE = two words\ncommands = pytest {posargs}\n"
    )
    assert command(tmp_path, tox) == "THREADING_TESTS=1 NOTE='two words' python -m pytest"


@pytest.mark.parametrize(
    "tox",
    [
        "[testenv]\ncommands = pytest {posargs}\n",  # says nothing more than the default
        "[testenv]\ncommands = nosetests -v\n",  # not pytest
        "[tox]\nenvlist = py3\n",  # no [testenv]
        "[testenv\ncommands = pytest --doctest-modules\n",  # not INI: a note, never an error
    ],
)
def test_the_default_stays_when_tox_says_nothing_more(tmp_path, tox):
    assert command(tmp_path, tox) is None
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    assert PYTHON.test_command(tmp_path) == "python -m pytest"


TOX_PROJECT = {
    "tox.ini": (
        "[testenv]\nset_env =\n    SLOW_TESTS = 1\n"
        "commands = pytest --doctest-modules arith tests {posargs}\n"
    ),
    "arith/__init__.py": (
        'def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return 2 * x\n'
    ),
    "tests/test_arith.py": (
        "import os\n\nimport pytest\n\nfrom arith import double\n\n\n"
        "@pytest.mark.skipif(not os.environ.get('SLOW_TESTS'), reason='SLOW_TESTS unset')\n"
        "def test_double():\n    assert double(3) == 6\n"
    ),
}


@pytest.mark.docker
def test_the_sandbox_runs_tox_s_doctests_with_its_set_env(make_repo):
    # As tox runs it: the doctest in arith/ counts, and the test that skips without SLOW_TESTS
    # passes.
    repo = make_repo(TOX_PROJECT)
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--repo", str(repo), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads(proc.stdout)
    assert run["counts"] == {"passed": 2, "failed": 0, "errors": 0, "skipped": 0}, run
    assert "SLOW_TESTS=1 python -m pytest --doctest-modules arith tests" in run["command"]


def test_paths_through_tox_substitutions_are_the_trees(tmp_path):
    """`{tox_root}/tests` is the tree's tests/; the installed package's folder in site-packages
    is the tree's own (set-up installs it in place), so its doctests run as tox runs them."""
    tox = (
        "[testenv]\nchangedir = .tox\n"
        "commands = pytest --doctest-modules {env_site_packages_dir}/shelf {tox_root}/tests "
        "{posargs}\n"
    )
    assert command(tmp_path, tox, "shelf", "tests") == (
        "python -m pytest --doctest-modules shelf tests"
    )
    src = tmp_path / "src-layout"
    src.mkdir()
    assert command(src, tox.replace("shelf", "crate"), "src/crate", "tests") == (
        "python -m pytest --doctest-modules src/crate tests"
    )


def test_options_alone_are_not_taken_when_none_of_the_paths_is_the_trees(tmp_path):
    # Collecting the whole tree with --doctest-modules imports docs/conf.py and scripts.
    tox = "[testenv]\ncommands = pytest --doctest-modules {envtmpdir}/pkg {posargs}\n"
    assert command(tmp_path, tox) is None


def workflow(tmp_path: Path, run: str) -> None:
    wf = tmp_path / ".github" / "workflows"
    wf.mkdir(parents=True, exist_ok=True)
    (wf / "test.yml").write_text(
        "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: pip install -e . pytest\n"
        f"      - run: {run}\n"
    )


@pytest.mark.parametrize(
    ("run", "said"),
    [
        ("pytest --doctest-modules shelf/", "python -m pytest --doctest-modules shelf/"),
        ("coverage run -m pytest --doctest-modules shelf tests --cov-report=xml 2>&1",
         "python -m pytest --doctest-modules shelf tests"),
        ("python -m pytest -q", None),  # says nothing more than the default
        ("pytest --doctest-modules ${{ matrix.where }}", None),  # a matrix value
        ("pytest --doctest-modules elsewhere/", None),  # no such path: not its options alone
    ],
)  # fmt: skip
def test_cis_pytest_line_gives_the_command_where_tox_says_nothing(tmp_path, run, said):
    (tmp_path / "shelf").mkdir()
    (tmp_path / "shelf" / "__init__.py").write_text("")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'shelf'\n")
    workflow(tmp_path, run)
    assert PYTHON.test_command(tmp_path) == (said or "python -m pytest")
    # tox.ini's command, when it says more, is what tox runs: it comes first.
    (tmp_path / "tox.ini").write_text("[testenv]\ncommands = pytest tests {posargs}\n")
    assert PYTHON.test_command(tmp_path) == "python -m pytest tests"
