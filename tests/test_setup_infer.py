"""Inferring the set-up command from a repository's own files
(sandbox/ecosystems/python/setup_infer.py).

Pure logic over real files in tmp_path; nothing here reaches the network. The lock-file commands
were run for real by hand (see setup_locks's docstring for the tool versions); no test runs them,
as installing uv, poetry or pdm needs PyPI.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from sandbox.ecosystems.python.pins import python_satisfies
from sandbox.ecosystems.python.setup_infer import infer_setup

PIP = "python -m pip install"
BUILD = '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


# Rule 1: the project itself, editable


@pytest.mark.parametrize(
    ("files", "source"),
    [
        ({"pyproject.toml": BUILD}, "pyproject.toml [build-system]"),
        ({"pyproject.toml": '[project]\nname = "p"\n'}, "pyproject.toml [project]"),
        ({"setup.py": "from setuptools import setup\nsetup()\n"}, "setup.py"),
        ({"setup.cfg": "[metadata]\nname = p\n"}, "setup.cfg [metadata]"),
    ],
)
def test_an_installable_project_goes_in_editable(tmp_path: Path, files, source) -> None:
    plan = infer_setup(write(tmp_path, files))
    assert plan.command == f"{PIP} -e ."
    assert plan.sources == (source,)
    assert plan.describe() == f"inferred set-up: {PIP} -e . (from {source})"


def test_a_folder_of_test_files_has_nothing_to_install(tmp_path: Path) -> None:
    write(tmp_path, {"test_a.py": "def test(): pass\n", "setup.cfg": "[tool:pytest]\nx = 1\n"})
    plan = infer_setup(tmp_path)
    assert plan.command is None
    assert plan.describe().startswith("inferred set-up: nothing to install")


def test_a_project_that_declares_itself_no_package_is_not_installed(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "p"\n[tool.uv]\npackage = false\n'
    write(tmp_path, {"pyproject.toml": pyproject, "requirements.txt": "requests\n"})
    plan = infer_setup(tmp_path)
    assert plan.command == f"{PIP} -r requirements.txt"
    assert any("not a package" in n for n in plan.notes)


# Rule 2a: PEP 735 dependency groups


def test_a_dependency_group_is_spelled_out_with_its_includes(tmp_path: Path) -> None:
    pyproject = BUILD + (
        "[dependency-groups]\n"
        'Tests = ["pytest>=8", {include-group = "cov"}]\n'
        'cov = ["coverage[toml]", {include-group = "Tests"}]\n'
        'dev = ["ruff"]\n'
    )
    plan = infer_setup(write(tmp_path, {"pyproject.toml": pyproject}))
    # `tests` beats `dev`; names compare normalized; the cycle back to Tests is cut with a note
    assert plan.command == f"{PIP} -e . 'pytest>=8' 'coverage[toml]'"
    assert plan.sources == (
        "pyproject.toml [build-system]",
        "pyproject.toml [dependency-groups] Tests",
    )
    assert any("include cycle" in n and "Tests" in n for n in plan.notes)


def test_a_group_leaves_out_vcs_urls_and_paths_outside_the_tree(tmp_path: Path) -> None:
    pyproject = BUILD + (
        "[dependency-groups]\n"
        'test = ["pytest", "lib @ git+https://github.com/o/lib", "other @ file:///opt/other",'
        ' "../sibling"]\n'
    )
    plan = infer_setup(write(tmp_path, {"pyproject.toml": pyproject}))
    assert plan.command == f"{PIP} -e . pytest"
    assert [n.split(": not followed ")[1] for n in plan.notes] == [
        "(a VCS URL): lib @ git+https://github.com/o/lib",
        "(a path outside the tree): other @ file:///opt/other",
        "(a path outside the tree): ../sibling",
    ]


def test_a_requirement_with_shell_metacharacters_stays_one_argument(tmp_path: Path) -> None:
    hostile = "pytest; os_name == 'posix' $(touch /tmp/pwned)"
    pyproject = BUILD + f'[dependency-groups]\ntest = ["{hostile}"]\n'
    plan = infer_setup(write(tmp_path, {"pyproject.toml": pyproject}))
    assert plan.command is not None
    assert shlex.split(plan.command) == ["python", "-m", "pip", "install", "-e", ".", hostile]


# Rule 2b: optional dependencies


def test_a_test_extra_joins_the_editable_install(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "p"\n[project.optional-dependencies]\ndocs = ["x"]\ntest = ["y"]\n'
    )
    plan = infer_setup(write(tmp_path, {"pyproject.toml": pyproject}))
    assert plan.command == f"{PIP} -e '.[test]'"
    assert plan.describe() == (
        f"inferred set-up: {PIP} -e '.[test]' "
        "(from pyproject.toml [project.optional-dependencies] test)"
    )


# Rule 2c: test/dev requirement files


def test_a_clean_requirements_file_goes_to_pip_as_it_is(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.py": "",
            "requirements/tests-extra.txt": "never\n",
            "requirements/tests.txt": "-r ../requirements/base.txt  # shared\npytest\n",
            "requirements/base.txt": "six\n-c ../constraints.txt\n",
            "constraints.txt": "six<2\n",
            "requirements-dev.txt": "ruff\n",
        },
    )
    plan = infer_setup(tmp_path)
    assert plan.command == f"{PIP} -e . -r requirements/tests.txt"
    assert plan.sources == ("setup.py", "requirements/tests.txt")
    assert plan.notes == ()


def test_a_file_with_lines_not_followed_is_spelled_out(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.py": "",
            "requirements-test.txt": (
                "-r requirements-base.txt\n"
                "pytest==8.0 --hash=sha256:abc \\\n  --hash=sha256:def\n"
                "-e git+https://github.com/o/lib#egg=lib\n"
                "hg+https://hg.example/x\n"
                "-e ../lib\n"
                "/abs/wheel.whl\n"
                "-e ./vendored\n"
                "--extra-index-url https://mirror.example/simple\n"
                "--find-links /wheels\n"
                "--pre\n"
            ),
            "requirements-base.txt": "six\n",
        },
    )
    plan = infer_setup(tmp_path)
    assert plan.command == (f"{PIP} -e . -r requirements-base.txt pytest==8.0 -e ./vendored --pre")
    assert plan.notes == (
        "requirements-test.txt: not followed (a VCS URL): -e git+https://github.com/o/lib#egg=lib",
        "requirements-test.txt: not followed (a VCS URL): hg+https://hg.example/x",
        "requirements-test.txt: not followed (a path outside the tree): -e ../lib",
        "requirements-test.txt: not followed (a path outside the tree): /abs/wheel.whl",
        "requirements-test.txt: not followed (an index option): "
        "--extra-index-url https://mirror.example/simple",
        "requirements-test.txt: not followed (an index option): --find-links /wheels",
    )


def test_a_hashed_requirements_file_and_the_project_install_in_two_runs(tmp_path: Path) -> None:
    # pip: "The editable requirement ... cannot be installed when requiring hashes"
    write(tmp_path, {"setup.py": "", "requirements-dev.txt": "six==1.17.0 --hash=sha256:ab\n"})
    assert infer_setup(tmp_path).command == f"{PIP} -r requirements-dev.txt && {PIP} -e ."


def test_the_project_named_in_a_requirements_file_is_not_installed_twice(tmp_path: Path) -> None:
    write(tmp_path, {"setup.py": "", "test-requirements.txt": "-e .[test]\npytest\n"})
    assert infer_setup(tmp_path).command == f"{PIP} -r test-requirements.txt"


def test_a_plain_dot_in_a_requirements_file_becomes_editable(tmp_path: Path) -> None:
    write(tmp_path, {"setup.py": "", "dev-requirements.txt": ".\npytest\n"})
    plan = infer_setup(tmp_path)
    assert plan.command == f"{PIP} -e . pytest"
    assert plan.notes == ("dev-requirements.txt: . installed editable (-e), as tests import it",)


def test_includes_that_leave_the_tree_cycle_or_are_missing_are_noted(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("evil\n")
    repo = tmp_path / "repo"
    write(
        repo,
        {
            "requirements_test.txt": "-r ../outside.txt\n-r a.txt\n-r missing.txt\n-r link.txt\n",
            "a.txt": "alpha\n-r requirements_test.txt\n",
        },
    )
    (repo / "link.txt").symlink_to(outside)
    plan = infer_setup(repo)
    assert plan.command == f"{PIP} alpha"
    assert [n.split("(")[1].split(")")[0] for n in plan.notes] == [
        "an include outside the tree",
        "an include cycle, or nested too deep",
        "a missing or unreadable include",
        "an include outside the tree",
    ]


def test_a_symlinked_requirements_file_is_ignored(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("evil\n")
    repo = write(tmp_path / "repo", {"setup.py": ""})
    (repo / "requirements-test.txt").symlink_to(outside)
    (repo / "requirements").symlink_to(tmp_path)
    (tmp_path / "test.txt").write_text("evil\n")
    assert infer_setup(repo).command == f"{PIP} -e ."


# Rule 2d: tox.ini


def test_tox_deps_resolve_toxinidir_and_section_references(tmp_path: Path) -> None:
    tox = (
        "[base]\ndeps = mock\n"
        "[testenv]\n"
        "deps =\n"
        "    -r{toxinidir}/requirements.txt\n"
        "    {[base]deps}\n"
        "    py38: old-backport\n"
        "    py311: tomli-w\n"
        "    {env:EXTRA_DEP}\n"
        "    pytest>=7  # the runner\n"
        "extras = test, yaml\n"
    )
    write(tmp_path, {"setup.py": "", "tox.ini": tox, "requirements.txt": "six\n"})
    plan = infer_setup(tmp_path)
    assert plan.command == f"{PIP} -r requirements.txt mock tomli-w 'pytest>=7' -e '.[test,yaml]'"
    assert plan.sources == ("tox.ini [testenv] deps and extras",)
    assert plan.notes == (
        "tox.ini [testenv] deps: not followed (conditional on tox factor py38): py38: old-backport",
        "tox.ini [testenv] deps: not followed (a substitution worker does not resolve): "
        "{env:EXTRA_DEP}",
    )


# Rule 2e and 2f


def test_setup_cfg_test_extras(tmp_path: Path) -> None:
    cfg = "[metadata]\nname = p\n[options]\npython_requires = >=3.7\n"
    cfg += "[options.extras_require]\ntesting = pytest\n"
    plan = infer_setup(write(tmp_path, {"setup.cfg": cfg}))
    assert plan.command == f"{PIP} -e '.[testing]'"
    assert plan.requires_python == ">=3.7"


def test_requirements_txt_only_when_the_project_is_not_installable(tmp_path: Path) -> None:
    write(tmp_path, {"requirements.txt": "numpy\ngit+https://github.com/o/x\n", "run.py": ""})
    plan = infer_setup(tmp_path)
    assert plan.command == f"{PIP} numpy"
    assert plan.notes == ("requirements.txt: not followed (a VCS URL): git+https://github.com/o/x",)
    write(tmp_path, {"setup.py": ""})
    assert infer_setup(tmp_path).command == f"{PIP} -e ."


# Rule 2's order: each source, removed in turn, hands over to the next


def test_sources_are_taken_in_order(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "setup.py": "",
            "setup.cfg": "[metadata]\nname = p\n[options.extras_require]\ntest = b\n",
            "tox.ini": "[testenv]\ndeps = from-tox\n",
            "requirements-dev.txt": "from-file\n",
            "requirements.txt": "runtime-only\n",
        },
    )
    extras = '[project]\nname = "p"\n[project.optional-dependencies]\ndev = ["x"]\n'
    (tmp_path / "pyproject.toml").write_text(extras + '[dependency-groups]\ndev = ["from-group"]\n')
    assert infer_setup(tmp_path).command == f"{PIP} -e . from-group"
    (tmp_path / "pyproject.toml").write_text(extras)
    assert infer_setup(tmp_path).command == f"{PIP} -e '.[dev]'"
    (tmp_path / "pyproject.toml").unlink()
    assert infer_setup(tmp_path).command == f"{PIP} -e . -r requirements-dev.txt"
    (tmp_path / "requirements-dev.txt").unlink()
    assert infer_setup(tmp_path).command == f"{PIP} -e . from-tox"
    (tmp_path / "tox.ini").unlink()
    assert infer_setup(tmp_path).command == f"{PIP} -e '.[test]'"
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = p\n")
    assert infer_setup(tmp_path).command == f"{PIP} -e ."


# Rule 3: lock files


def test_uv_lock_exports_the_groups_and_extras_that_exist(tmp_path: Path) -> None:
    pyproject = BUILD + (
        '[project]\nname = "p"\n[project.optional-dependencies]\ntest = ["x"]\nyaml = ["y"]\n'
        '[dependency-groups]\ndev = ["z"]\nlint = ["ruff"]\n'
    )
    plan = infer_setup(write(tmp_path, {"pyproject.toml": pyproject, "uv.lock": "version = 1\n"}))
    # The tool comes from its layer: the project's command only runs it.
    tool = "/opt/worker-deps/tools/uv-0.13.9"
    locked = (
        f"{tool}/bin/uv export --frozen --no-hashes --no-emit-project --format requirements.txt "
        "--group dev --extra test -o /tmp/worker-lock-requirements.txt && "
        "python -m pip install -r /tmp/worker-lock-requirements.txt && "
        "python -m pip install --no-deps -e ."
    )
    assert plan.command == f"( {locked} ) || ( {PIP} -e . z )"
    assert plan.sources[0] == "uv.lock dev, [test]"
    assert plan.notes == ()
    assert plan.describe() == (
        "inferred set-up: installs the uv.lock dev, [test] locked groups (exported by uv 0.13.9, "
        "the pinned default, from its cached layer; then pip; should that fail, "
        "pyproject.toml [build-system] and pyproject.toml [dependency-groups] dev with pip)"
    )
    assert plan.tool is not None and plan.tool.home == tool
    assert plan.tool.install == (
        f"python -m venv {tool} && "
        f"{tool}/bin/python -m pip install --no-cache-dir uv==0.13.9 && {tool}/bin/uv --version"
    )


def test_poetry_lock_asks_only_for_groups_the_project_has(tmp_path: Path) -> None:
    pyproject = (
        '[tool.poetry]\nname = "p"\n[tool.poetry.group.docs.dependencies]\nsphinx = "*"\n'
        '[tool.poetry.group.test.dependencies]\npytest = "*"\n'
        '[tool.poetry.dev-dependencies]\nblack = "*"\n' + BUILD
    )
    write(tmp_path, {"pyproject.toml": pyproject, "poetry.lock": ""})
    plan = infer_setup(tmp_path)
    assert plan.tool is not None
    assert "poetry==2.5.1 poetry-plugin-export==1.10.1" in plan.tool.install
    assert "poetry export --without-hashes -f requirements.txt --with test --with dev -o " in str(
        plan.command
    )


def test_pdm_lock_without_test_groups_exports_production_only(tmp_path: Path) -> None:
    pyproject = '[project]\nname = "p"\n[dependency-groups]\nlint = ["ruff"]\n'
    plan = infer_setup(write(tmp_path, {"pyproject.toml": pyproject, "pdm.lock": ""}))
    assert plan.tool is not None and "'pdm[locked]==2.29.3'" in plan.tool.install
    assert "pdm export --without-hashes -f requirements --prod -o " in str(plan.command)


@pytest.mark.parametrize(
    ("files", "said"),
    [
        # What the project pins wins where the default does not meet it...
        (
            {"pyproject.toml": '[tool.poetry]\nrequires-poetry = "2.4.1"\n'},
            "poetry 2.4.1 (pyproject.toml's requires-poetry 2.4.1)",
        ),
        (
            {"pyproject.toml": '[tool.poetry]\nrequires-poetry = "^1.8"\n'},
            "poetry >=1.8,<2 (the newest within pyproject.toml's requires-poetry ^1.8)",
        ),
        # ...the pinned default where it meets it, or where nothing is said.
        (
            {"pyproject.toml": '[tool.poetry]\nrequires-poetry = ">=2.0"\n'},
            "poetry 2.5.1 (the pinned default, within pyproject.toml's requires-poetry >=2.0)",
        ),
        ({"pyproject.toml": "[tool.poetry]\n"}, "poetry 2.5.1 (the pinned default)"),
        # uv.toml's setting before pyproject.toml's, as uv reads them.
        (
            {
                "pyproject.toml": '[tool.uv]\nrequired-version = ">=0.14"\n',
                "uv.toml": 'required-version = "==0.9.2"\n',
            },
            "uv 0.9.2 (uv.toml's required-version ==0.9.2)",
        ),
        (
            {"pyproject.toml": '[tool.uv]\nrequired-version = ">=1 || <0.5"\n'},
            "uv 0.13.9 (the pinned default; pyproject.toml's [tool.uv] required-version "
            ">=1 || <0.5 not understood)",
        ),
    ],
)
def test_the_lock_tools_version_is_what_the_project_asks_for(
    tmp_path: Path, files: dict[str, str], said: str
) -> None:
    lock = "poetry.lock" if "poetry" in files["pyproject.toml"] else "uv.lock"
    plan = infer_setup(write(tmp_path, {**files, lock: ""}))
    assert plan.tool is not None and plan.tool.describe() == said
    assert f"/opt/worker-deps/tools/{plan.tool.name}-{plan.tool.slug}/bin/" in str(plan.command)
    if plan.tool.version == "2.4.1":
        assert "poetry==2.4.1 poetry-plugin-export &&" in plan.tool.install


def test_a_lock_whose_pyproject_is_unreadable_is_not_used(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[project\n", "uv.lock": "", "setup.py": ""})
    plan = infer_setup(tmp_path)
    assert plan.command == f"{PIP} -e ."
    assert plan.notes[0].startswith("pyproject.toml: not valid TOML")
    assert plan.notes[1] == "uv.lock: not used (no readable pyproject.toml beside it)"


# Rule 6: hostile input


def test_malformed_and_oversized_files_are_notes_not_crashes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": "project = 3\n[dependency-groups]\ntest = 5\n",
            "setup.cfg": "[metadata\nname = p\n",
            "tox.ini": "[testenv]\ndeps = a\ndeps = b\n",
            "requirements-test.txt": "x" * 1_000_001,
        },
    )
    (tmp_path / "requirements-dev.txt").write_bytes(b"\xff\xfe\x00")  # not UTF-8
    plan = infer_setup(tmp_path)
    assert plan.command is None
    assert [n.split(":")[0] for n in plan.notes] == [
        "setup.cfg",
        "pyproject.toml [dependency-groups] test",
        "requirements-test.txt",
        "requirements-dev.txt",
        "tox.ini",
    ]


def test_a_symlinked_pyproject_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.toml").write_text(BUILD)
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(tmp_path / "elsewhere.toml", repo / "pyproject.toml")
    plan = infer_setup(repo)
    assert plan.command is None
    assert plan.notes == ("pyproject.toml: a symlink, or not a plain file in the tree; not read",)


# requires-python


def test_requires_python_is_read_verbatim(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[project]\nname = "p"\nrequires-python = ">= 3.9, <4"\n'})
    assert infer_setup(tmp_path).requires_python == ">= 3.9, <4"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (">=3.8", True),
        (">=3.12", False),
        ("~=3.10", True),
        ("~=3.10.2", False),
        ("!=3.11.*", False),
        ("==3.11.*", True),
        (">=3.8, !=3.11.3, <4", False),
        (">=3.8, !=3.11.0, <4", True),
        (">= 3.8, < 3.11.4", True),
        ("==3.11", False),
        ("==3.11.3", True),
        ("<=3.11", False),
        (">3.11", True),
        ("", True),
        ("garbage", None),
        (">=3.8.*", None),
        ("~=3", None),
        (">=3.8rc1", None),
    ],
)
def test_python_satisfies(spec: str, expected: bool | None) -> None:
    assert python_satisfies(spec, (3, 11, 3)) is expected


def test_python_satisfies_agrees_with_packaging() -> None:
    specifiers = pytest.importorskip("packaging.specifiers")
    specs = [">=3.8", "<3.11", "<=3.11.0", ">3.11.0", "~=3.9", "~=3.11.1", "~=3.11.4", "==3.*"]
    specs += ["!=3.10.*", "==3.11.*", ">=3.7,<3.12", ">=3, !=3.11.*", "==3.11.0", "!=3.12"]
    for spec in specs:
        for version in [(3, 8, 0), (3, 10, 9), (3, 11, 0), (3, 11, 4), (3, 12, 1), (4, 0, 0)]:
            dotted = ".".join(map(str, version))
            expected = specifiers.SpecifierSet(spec).contains(dotted)
            assert python_satisfies(spec, version) is expected, (spec, version)


# What the CI's test job installs beyond the files (sandbox/ecosystems/python/ci_install.py)

CI = """\
on: push
jobs:
  docs:
    runs-on: ubuntu-latest
    steps:
      - run: pip install sphinx
      - run: make html
  tests:
    strategy:
      matrix:
        deps: ["numpy<2", "numpy>=2"]
    steps:
      - run: pip install "${{ matrix.deps }}" -r requirements-ci.txt
      - run: python -m pip install --upgrade pip wheel pandas 'mypy==1.20.1' ./vendor/lib
      - run: |
          pip install tox \\
            coverage[toml]
          tox -e py
"""


def test_the_ci_test_job_s_requirements_join_the_install_with_their_lines(tmp_path):
    repo = write(tmp_path, {"pyproject.toml": BUILD, ".github/workflows/ci.yml": CI})
    plan = infer_setup(repo)
    # Not the docs job's sphinx; not a matrix value, a requirements file or a path.
    assert plan.command == f"{PIP} -e . && {PIP} pandas mypy==1.20.1 'coverage[toml]'"
    assert plan.sources == (
        "pyproject.toml [build-system]",
        "CI's pip install (.github/workflows/ci.yml:14, .github/workflows/ci.yml:16)",
    )
    assert "CI's pip install: pip, wheel, tox (CI's own tools)" in plan.notes


def test_a_workflow_with_no_test_job_adds_nothing(tmp_path):
    lint = "jobs:\n  lint:\n    steps:\n      - run: pip install flake8 mypy\n      - run: mypy .\n"
    repo = write(tmp_path, {"pyproject.toml": BUILD, ".github/workflows/lint.yml": lint})
    assert infer_setup(repo).command == f"{PIP} -e ."
