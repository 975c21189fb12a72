"""What CI does, read from GitLab CI as from GitHub Actions (sandbox/worktree/ci_jobs.py), CI's
build steps before the tests (sandbox/ecosystems/python/ci_build.py), and a noxfile's test
session (nox_session.py): read, never run; in-process over real files. The set-up that runs
them is in test_setup_fidelity.py."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from policies.config import load_config
from sandbox.ecosystems import detect_test_command, language_paths
from sandbox.ecosystems.node.ci_install import ci_npm_flags
from sandbox.ecosystems.node.ecosystem import NODE
from sandbox.ecosystems.python.ci_build import ci_build_steps
from sandbox.ecosystems.python.ci_install import ci_requirements
from sandbox.ecosystems.python.ecosystem import PYTHON
from sandbox.ecosystems.python.setup_infer import infer_setup
from sandbox.ecosystems.python.tox_command import ci_test_command
from sandbox.setup.choice import choose_setup, ci_services
from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.ci_test_env import ci_test_env
from sandbox.worktree.repo_files import RepoFiles

GITLAB = """\
stages: [test]
variables:
  PIP_CACHE_DIR: "$CI_PROJECT_DIR/.cache"
default:
  image: python:3.12
  before_script:
    - python -m pip install -U pip
.db:
  services:
    - postgres:16
    - name: redis:7
      alias: cache
docs:
  script: sphinx-build docs html
unit:
  extends: .db
  before_script:
    - pip install 'numpy>=2' twine  # numpy for the tests
  script:
    - |
      make ext
      pytest --doctest-modules pkg/ \\
        -q
publish:
  script:
    - python -m build && twine upload dist/*
"""


def write(root: Path, files: dict[str, str]) -> RepoFiles:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return RepoFiles(root)


def test_a_gitlab_job_runs_its_before_script_then_its_script_each_line_where_it_is(tmp_path):
    jobs = {job.name: job for job in ci_jobs(write(tmp_path, {".gitlab-ci.yml": GITLAB}))}
    assert set(jobs) == {"docs", "unit", "publish"}  # keywords and hidden jobs are not jobs
    assert jobs["docs"].lines == (
        (7, "python -m pip install -U pip"),
        (14, "sphinx-build docs html"),
    )
    assert jobs["unit"].lines == (
        (18, "pip install 'numpy>=2' twine"),
        (21, "make ext"),
        (22, "pytest --doctest-modules pkg/ -q"),
    )
    assert jobs["unit"].services == (("postgres:16", 10), ("redis:7", 11))  # from `extends`


def test_what_gitlab_s_test_job_installs_runs_and_starts_is_taken_with_its_line(tmp_path):
    makefile = "ext:\n\tcython x.pyx\n"
    files = write(tmp_path, {".gitlab-ci.yml": GITLAB, "Makefile": makefile, "pkg/a.py": ""})
    needs = ci_requirements(files)
    assert needs is not None and needs.requirements == ("numpy>=2",)
    assert needs.sources == (".gitlab-ci.yml:18",) and "twine" in needs.left_out
    build = ci_build_steps(files)
    assert build is not None and build.steps == ("make ext",)
    assert build.sources == (".gitlab-ci.yml:21",)
    assert ci_test_command(files) == "python -m pytest --doctest-modules pkg/"
    assert ci_services(tmp_path) == (
        "postgres:16 (.gitlab-ci.yml:10)",
        "redis:7 (.gitlab-ci.yml:11)",
    )


def test_npm_s_install_flags_come_from_a_gitlab_script_too(tmp_path):
    ci = "test:\n  script:\n    - npm ci --legacy-peer-deps\n    - npm test\n"
    flags = ci_npm_flags(write(tmp_path, {".gitlab-ci.yml": ci}))
    assert flags is not None
    assert (flags.flags, flags.source) == (("--legacy-peer-deps",), ".gitlab-ci.yml:3")


WORKFLOW = """\
jobs:
  test:
    steps:
      - run: python -m pip install -r requirements.txt pytest
      - run: make cython && make lint
      - run: |
          make cython
          make -j2 docs
          make -C sub build
      - run: pytest -v test
      - run: make after
"""


def test_only_build_targets_the_makefile_defines_before_the_tests_are_taken(tmp_path):
    makefile = "cython:\n\tcython x.pyx\ndocs lint after:\n\ttrue\n"
    files = {".github/workflows/ci.yml": WORKFLOW, "Makefile": makefile}
    build = ci_build_steps(write(tmp_path, files))
    # `make cython && make lint` is two commands; docs only builds docs; -C is another folder;
    # `make after` runs after the tests. The line that installs pytest does not run it.
    assert build is not None and build.steps == ("make cython",)
    assert build.sources == (".github/workflows/ci.yml:7",)
    assert ci_build_steps(write(tmp_path / "none", {".github/workflows/ci.yml": WORKFLOW})) is None


NOXFILE = """\
import os

import nox


@nox.session
def lint(session):
    session.install("ruff", "flake8-bugbear")
    session.run("ruff", "check", ".")


@nox.session(python=["3.11", "3.12"])
def tests(session):
    session.install("-e", ".[test]")
    session.install("hypothesis>=6", "pytest", "codecov")
    session.install("freezegun", os.environ.get("EXTRA", "x"))
    session.env["TZ"] = "UTC"
    session.run(
        "coverage", "run", "-m", "pytest", "--doctest-modules", "pkg", "--cov=pkg",
        *session.posargs, env={"MODE": "strict", "BAD NAME": "x"},
    )
"""


def test_a_noxfile_s_test_session_gives_installs_and_the_pytest_line_never_run(tmp_path):
    files = {
        "noxfile.py": NOXFILE + f"\nopen({str(tmp_path / 'ran')!r}, 'w')\n",
        "pkg/__init__.py": "",
        "pyproject.toml": '[project]\nname = "p"\nversion = "1"\n',
    }
    write(tmp_path, files)
    plan = infer_setup(tmp_path)
    # A call with a value nox would compute (os.environ) is not read; codecov is CI's tool.
    assert plan.command is not None and plan.command.endswith(
        "&& python -m pip install 'hypothesis>=6' pytest"
    ), plan.command
    assert "noxfile.py session tests (line 13)" in plan.sources
    assert "noxfile.py's installs: codecov (CI's own tools)" in plan.notes
    assert PYTHON.test_command(tmp_path) == (
        "TZ=UTC MODE=strict python -m pytest --doctest-modules pkg"
    )
    assert not (tmp_path / "ran").exists()  # read, never run


def test_a_noxfile_that_does_not_parse_or_runs_no_pytest_gives_nothing(tmp_path):
    write(tmp_path, {"noxfile.py": "def broken(:\n", "setup.py": ""})
    assert PYTHON.test_command(tmp_path) == "python -m pytest"
    write(tmp_path, {"noxfile.py": NOXFILE.replace('"pytest"', '"sphinx"').replace('"-m", ', "")})
    assert PYTHON.test_command(tmp_path) == "python -m pytest"


ENV_WORKFLOW = """\
on: push
env:
  TZ: UTC
  FEATURE: "off"
  PATH: /opt/ci/bin
jobs:
  lint:
    env:
      LINT_ONLY: 1
    steps:
      - run: ruff check .
  test:
    runs-on: ubuntu-latest
    env:
      FEATURE: "on"
      TOKEN: ${{ secrets.TOKEN }}
      PY: ${{ matrix.python }}
      HTTPS_PROXY: http://proxy.ci:3128
    services:
      db:
        image: postgres
        env:
          POSTGRES_PASSWORD: pw
    steps:
      - name: install
        run: python -m pip install pytest
        env:
          PIP_NO_CACHE: 1
      - name: tests
        run: python -m pytest -q
        env:
          PYTHONHASHSEED: '123'
          DATA: $HOME/data
          NOTE: |
            two
            lines
      - env: {AFTER: 1}
        run: python -m pytest --lf
"""


def test_ci_s_environment_for_its_test_step_is_taken_and_what_is_not_is_said(tmp_path):
    files = write(tmp_path, {".github/workflows/ci.yml": ENV_WORKFLOW})
    env = ci_test_env(files, PYTHON.runs)
    # The workflow's, the test job's (FEATURE's job value wins) and the test step's; not the
    # lint job's, the service's, the install step's or the later step's.
    assert [v.describe() for v in env.taken] == [
        "TZ=UTC (.github/workflows/ci.yml:3)",
        "FEATURE=on (.github/workflows/ci.yml:15)",
        "PYTHONHASHSEED=123 (.github/workflows/ci.yml:32)",
    ]
    assert env.left_out == (
        "PATH (the sandbox's own: where programs and home are, .github/workflows/ci.yml:5)",
        "TOKEN (a secret, .github/workflows/ci.yml:16)",
        "PY (an expression, .github/workflows/ci.yml:17)",
        "HTTPS_PROXY (the sandbox's network fence, .github/workflows/ci.yml:18)",
        "DATA (a variable's value, .github/workflows/ci.yml:33)",
        "NOTE (a multi-line value, .github/workflows/ci.yml:34)",
    )
    assert env.describe().startswith("CI's environment for the tests: TZ=UTC (")
    # The test command gets them before it, as tox's set_env; tox's own value wins.
    (tmp_path / "tox.ini").write_text(
        "[testenv]\nset_env =\n    TZ = Europe/Paris\ncommands = pytest --doctest-modules\n"
    )
    assert detect_test_command(tmp_path) == (
        "FEATURE=on PYTHONHASHSEED=123 TZ=Europe/Paris python -m pytest --doctest-modules"
    )


GITLAB_ENV = """\
variables:
  TZ: UTC
  CACHE: "$CI_PROJECT_DIR/.cache"
.base:
  variables:
    MODE: base
test:
  extends: .base
  variables:
    NODE_OPTIONS:
      value: "--max-old-space-size=4096"
      description: room for the big fixtures
    MODE: strict
  script:
    - npm ci
    - npm test
"""


def test_gitlab_s_variables_reach_its_test_job_a_job_s_own_winning(tmp_path):
    files = write(tmp_path, {".gitlab-ci.yml": GITLAB_ENV, "package.json": "{}"})
    env = ci_test_env(files, NODE.runs)
    assert [v.describe() for v in env.taken] == [
        "TZ=UTC (.gitlab-ci.yml:2)",
        "MODE=strict (.gitlab-ci.yml:13)",
        "NODE_OPTIONS=--max-old-space-size=4096 (.gitlab-ci.yml:10)",
    ]
    assert env.left_out == ("CACHE (a variable's value, .gitlab-ci.yml:3)",)


def test_node_s_test_script_runs_with_the_variables_before_it(tmp_path):
    pkg = '{"scripts": {"test": "node --test"}}'
    files = write(tmp_path, {"package.json": pkg})
    how = NODE.instrument(
        "TZ=UTC NOTE='two words' npm test",
        (),
        workspace=files.root,
        stage=lambda name, data: f"/tmp/stage/{name}",
        root="/workspace",
    )
    assert how.env["TZ"] == "UTC" and how.env["NOTE"] == "two words"
    assert "--test" in how.command and "TZ=" not in how.command
    assert how.report_path is not None  # still node --test's own report


def test_no_ci_environment_is_read_for_a_given_test_command(tmp_path):
    write(tmp_path, {".github/workflows/ci.yml": ENV_WORKFLOW, "tests/test_a.py": ""})
    chosen = choose_setup(tmp_path, load_config(tmp_path, paths=language_paths()))
    assert "TZ=UTC (.github/workflows/ci.yml:3)" in chosen.to_dict()["ci_env"]
    assert any(v.startswith("TOKEN (a secret") for v in chosen.to_dict()["ci_env_left_out"])
    given = load_config(tmp_path, overrides={"test_cmd": "pytest -x"}, paths=language_paths())
    assert choose_setup(tmp_path, given).to_dict()["ci_env"] == []


def test_gitlab_s_local_includes_are_followed_other_includes_are_said(tmp_path):
    main = (
        "include:\n"
        "  - local: ci/test.yml\n"
        "  - /ci/vars.yml\n"
        "  - remote: https://ci.example/shared.yml\n"
        "  - project: group/templates\n"
        "    file: /python.yml\n"
        "  - template: Security/SAST.gitlab-ci.yml\n"
        "  - local: ../outside.yml\n"
        "  - local: ci/*.yml\n"
        "lint:\n"
        "  script: ruff check .\n"
    )
    files = write(
        tmp_path,
        {
            ".gitlab-ci.yml": main,
            "ci/test.yml": (
                "include: 'ci/base.yml'\ntest:\n  extends: .base\n  script:\n    - pytest -q\n"
            ),
            # includes .gitlab-ci.yml again: each file is read once
            "ci/base.yml": "include:\n  - local: .gitlab-ci.yml\n"
            ".base:\n  before_script:\n    - pip install 'roundto==1.0'\n",
            "ci/vars.yml": "variables:\n  TZ: UTC\n",
        },
    )
    jobs = {job.name: job for job in ci_jobs(files)}
    assert set(jobs) == {"test", "lint"}
    test = jobs["test"]
    assert [(test.where(n), line) for n, line in test.lines] == [
        ("ci/base.yml:5", "pip install 'roundto==1.0'"),
        ("ci/test.yml:5", "pytest -q"),
    ]
    assert [v.describe() for v in ci_test_env(files, PYTHON.runs).taken] == [
        "TZ=UTC (ci/vars.yml:2)"
    ]
    needs = ci_requirements(files)
    assert needs is not None and needs.sources == ("ci/base.yml:5",)
    assert [n for n in files.notes if "include" in n] == [
        ".gitlab-ci.yml: include: remote https://ci.example/shared.yml: not read (only the "
        "repository's own files are)",
        ".gitlab-ci.yml: include: project group/templates: not read (only the repository's "
        "own files are)",
        ".gitlab-ci.yml: include: template Security/SAST.gitlab-ci.yml: not read (only the "
        "repository's own files are)",
        ".gitlab-ci.yml: include: local ci/*.yml (a wildcard or a variable): not read (only "
        "the repository's own files are)",
        ".gitlab-ci.yml: include: local ../outside.yml: outside the repository; not read",
    ]


BUILD_WORKFLOW = """\
jobs:
  test:
    steps:
      - run: npm ci
      - run: npm run lint
      - run: npm run build
      - run: npm test
"""


def test_ci_s_build_before_npm_test_runs_first_in_every_test_run(tmp_path):
    # The tests import dist/: CI builds before `npm test`, so each run (after each edit of the
    # sources) builds first, the tests only once the build passed; said in set-up's line.
    scripts = {"build": "tsc -p .", "lint": "eslint .", "test": "node --test"}
    files = write(
        tmp_path,
        {
            "package.json": json.dumps({"scripts": scripts, "devDependencies": {"x": "1"}}),
            ".github/workflows/ci.yml": BUILD_WORKFLOW,
        },
    )
    how = NODE.instrument(
        "npm test", (), workspace=files.root, stage=lambda n, d: f"/tmp/s/{n}", root="/w"
    )
    assert how.command.index("tsc -p .") < how.command.index("--test")
    assert "eslint" not in how.command and how.report_path is not None
    plan = NODE.infer_setup(tmp_path)
    build = "CI's build npm run build (.github/workflows/ci.yml:6)"
    assert f"{build}, run before each test run" in plan.sources
    assert plan.describe().endswith(f"; each test run starts with {build}"), plan.describe()
    # A test script that builds already is left as it is.
    scripts["pretest"] = "npm run build"
    (tmp_path / "package.json").write_text(json.dumps({"scripts": scripts}))
    how = NODE.instrument("npm test", (), workspace=files.root, stage=lambda n, d: n, root="/w")
    assert how.command.count("tsc -p .") == 1


def test_a_ci_value_with_spaces_stays_an_assignment_in_each_language_s_command():
    """CI's `JAVA_OPTS: -Xss4m -Xmx1g` before the test command: each language package splits
    the command into words and joins them again; quoted whole, the word was run as a command
    named `JAVA_OPTS=-Xss4m -Xmx1g` (exit 127: java-classmate, bench/corpus-java.toml)."""
    import subprocess

    from sandbox.ecosystems.go.ecosystem import GoTestCommand
    from sandbox.ecosystems.java.command import MavenCommand
    from sandbox.ecosystems.words import shell_join

    maven = MavenCommand.parse("JAVA_OPTS='-Xss4m -Xmx1g' mvn test")
    assert maven is not None
    run = maven.command([], folder="/tmp/worker-maven-x", report="/tmp/worker-report-x")
    assert "{ JAVA_OPTS='-Xss4m -Xmx1g' mvn -o " in run
    go = GoTestCommand.parse("GOFLAGS='-count=1 -v' go test ./...")
    assert go is not None
    assert go.command([], report="/tmp/r").startswith("GOFLAGS='-count=1 -v' go test -json")
    said = subprocess.run(
        ["sh", "-c", shell_join(["A=x y", "sh", "-c", 'printf %s "$A"'])],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert said.stdout == "x y"


MARKER_WORKFLOW = """\
jobs:
  tests:
    steps:
      - run: python -m pip install tox tox-gh
      - name: Install the type checker the tests run
        run: |
          python -m pip install "mypy==1.19.1; python_version == '3.9'"
          python -m pip install "mypy==1.20.1; python_version >= '3.10'"
      - run: python -m tox
"""


def test_a_ci_pin_with_an_environment_marker_reaches_set_up_whole(tmp_path):
    # Its `;` is inside quotes: it once cut the line there, and the pin was lost.
    tox = "[testenv]\ndeps = pytest\ncommands = pytest\n"
    files = {".github/workflows/ci.yml": MARKER_WORKFLOW, "setup.py": "", "tox.ini": tox}
    needs = ci_requirements(write(tmp_path, files))
    assert needs is not None and needs.requirements == (
        "mypy==1.19.1; python_version == '3.9'",
        "mypy==1.20.1; python_version >= '3.10'",
    )
    assert needs.sources == (".github/workflows/ci.yml:7", ".github/workflows/ci.yml:8")
    assert "tox-gh" in needs.left_out and "tox" in needs.left_out
    command = infer_setup(tmp_path).command or ""
    # pip evaluates each marker: the pin for the set-up's Python is the one installed.
    assert shlex.split(command.rpartition("&&")[2])[-2:] == list(needs.requirements)
