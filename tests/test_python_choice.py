"""The Python a project's sandbox gets, chosen from its files (in-process: no Docker)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sandbox.container.suites import DEFAULT_SUITE, SUITES, suite_for
from sandbox.ecosystems.python.choice import WrongPython, choose_python, python_for
from sandbox.ecosystems.python.pins import read_pins
from sandbox.worktree.workflows import MAX_WORKFLOWS

BOOKWORM, TRIXIE = SUITES


def write(repo: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


def pyproject(requires: str) -> dict[str, str]:
    return {"pyproject.toml": f'[project]\nname = "p"\nrequires-python = "{requires}"\n'}


def choose(repo: Path):
    return choose_python(read_pins(repo))


def test_nothing_said_is_the_default(tmp_path):
    choice = choose(tmp_path)
    assert choice.suite == DEFAULT_SUITE == BOOKWORM and choice.why == "the default"
    assert choice.describe(None) == (
        "Python 3.11 (the default): image worker-sandbox:latest, up to date"
    )


def test_requires_python_that_takes_the_default_keeps_it(tmp_path):
    choice = choose(write(tmp_path, pyproject(">=3.8")))
    assert choice.suite == BOOKWORM and choice.why == "requires-python >=3.8"


def test_requires_python_past_the_default_takes_the_newest_that_has_it(tmp_path):
    choice = choose(write(tmp_path, pyproject(">=3.12")))
    assert choice.suite == TRIXIE and choice.requires_python == ">=3.12"
    assert choice.describe(95.2) == (
        "Python 3.13 (requires-python >=3.12): image worker-sandbox:py3.13, built once in 95 s"
    )
    assert choice.to_dict()["version"] == "3.13" and choice.to_dict()["debian"] == "trixie"


def test_setup_cfg_python_requires_counts_too(tmp_path):
    files = {"setup.cfg": "[metadata]\nname = p\n[options]\npython_requires = >=3.13\n"}
    assert choose(write(tmp_path, files)).suite == TRIXIE


def test_python_version_file_wins_over_the_default(tmp_path):
    write(tmp_path, {**pyproject(">=3.9"), ".python-version": "# pyenv\n3.13.1\n"})
    choice = choose(tmp_path)
    assert choice.suite == TRIXIE and choice.why == ".python-version 3.13.1"


def test_a_pin_no_release_ships_falls_back_and_is_named(tmp_path):
    choice = choose(write(tmp_path, {".python-version": "3.12\n"}))
    assert choice.suite == BOOKWORM and choice.passed_over == (".python-version 3.12",)
    assert "(the default; no image for .python-version 3.12)" in choice.describe(None)


def test_a_pin_requires_python_refuses_is_passed_over(tmp_path):
    write(tmp_path, {**pyproject(">=3.12"), ".python-version": "3.11\n"})
    choice = choose(tmp_path)
    assert choice.suite == TRIXIE and choice.passed_over == (".python-version 3.11",)


WORKFLOW_MATRIX = """\
name: tests
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        python: ["3.9", 3.10, '3.12', "3.13"]  # unquoted 3.10 is 3.10, not 3.1
        os: [ubuntu-latest]
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: ${{ matrix.python }}
"""


def test_a_workflow_matrix_named_through_its_key(tmp_path):
    pins = read_pins(write(tmp_path, {".github/workflows/ci.yml": WORKFLOW_MATRIX}))
    assert [p.text for p in pins.pins] == ["3.9", "3.10", "3.12", "3.13"]
    choice = choose_python(pins)
    assert choice.suite == TRIXIE and choice.why == ".github/workflows/ci.yml 3.13"


def test_a_gitlab_job_s_python_image_is_a_pin_its_matrix_variable_too(tmp_path):
    gitlab = (
        "default:\n  image: python:3.13-slim\n"
        "test:\n  image: registry.example.com/python:$PY\n"
        "  parallel:\n    matrix:\n      - PY: ['3.9', '3.12']\n  script: [pytest]\n"
        "js:\n  image: {name: node:20}\n  script: [npm test]\n"
    )
    pins = read_pins(write(tmp_path, {".gitlab-ci.yml": gitlab}))
    assert [p.describe() for p in pins.pins] == [
        ".gitlab-ci.yml 3.13",
        ".gitlab-ci.yml 3.9",
        ".gitlab-ci.yml 3.12",
    ]
    assert choose_python(pins).why == ".gitlab-ci.yml 3.13"


def test_a_matrix_that_lists_the_default_gets_it_whatever_the_order(tmp_path):
    workflow = """\
jobs:
  t:
    strategy:
      matrix:
        python-version:
          - "3.13"
          - "3.11"   # the oldest we support
    steps:
      - uses: actions/setup-python@v5
        with: {python-version: "${{ matrix.python-version }}"}
"""
    choice = choose(write(tmp_path, {".github/workflows/tests.yaml": workflow}))
    assert choice.suite == BOOKWORM and choice.why == ".github/workflows/tests.yaml 3.11"


def test_include_entries_and_single_versions_are_read(tmp_path):
    workflow = """\
jobs:
  lint:
    steps:
      - uses: actions/setup-python@v5
        with:
          python-version: '3.x'
  t:
    strategy:
      matrix:
        include:
          - python-version: "pypy3.10"
          - python-version: "3.13"
"""
    pins = read_pins(write(tmp_path, {".github/workflows/ci.yml": workflow}))
    assert [p.text for p in pins.pins] == ["3.13"]  # 3.x and pypy name no release's Python


def test_python_version_file_comes_before_the_workflows(tmp_path):
    write(tmp_path, {".python-version": "3.11\n", ".github/workflows/ci.yml": WORKFLOW_MATRIX})
    assert choose(tmp_path).why == ".python-version 3.11"


def test_nothing_available_is_wrong_python_naming_both_sides(tmp_path):
    write(tmp_path, {**pyproject(">=3.14"), ".python-version": "3.14\n"})
    with pytest.raises(WrongPython) as caught:
        choose(tmp_path)
    message = str(caught.value)
    assert "requires Python >=3.14" in message
    assert "3.11 (Debian bookworm), 3.13 (Debian trixie)" in message
    assert "worker sandbox build --base" in message


def test_an_unreadable_requires_python_refuses_nothing(tmp_path):
    assert choose(write(tmp_path, pyproject("python3 please"))).suite == BOOKWORM


def test_a_named_image_or_the_host_backend_has_no_choice(tmp_path):
    write(tmp_path, pyproject(">=3.99"))  # would be WrongPython if a choice were made
    assert python_for(tmp_path, image="mine:1", backend="docker") is None
    assert python_for(tmp_path, image=None, backend="local") is None
    assert python_for(write(tmp_path, pyproject(">=3.12")), image=None, backend="docker")


def test_hostile_files_are_not_followed(tmp_path):
    outside = write(tmp_path / "outside", {"pin": "3.13\n", "ci.yml": WORKFLOW_MATRIX})
    repo = tmp_path / "repo"
    (repo / ".github").mkdir(parents=True)
    os.symlink(outside / "pin", repo / ".python-version")
    os.symlink(outside, repo / ".github" / "workflows")
    pins = read_pins(repo)
    assert pins.pins == () and any(".python-version: a symlink" in n for n in pins.notes)
    (repo / ".github" / "workflows").unlink()
    (repo / ".github" / "workflows").mkdir()
    os.symlink(outside / "ci.yml", repo / ".github" / "workflows" / "ci.yml")
    (repo / ".github" / "workflows" / "big.yml").write_text("python-version: 3.13\n" * 60_000)
    pins = read_pins(repo)
    assert pins.pins == () and any("big.yml: over" in n for n in pins.notes)


def test_at_most_so_many_workflows_are_read(tmp_path):
    for n in range(MAX_WORKFLOWS + 5):
        write(tmp_path, {f".github/workflows/w{n:03}.yml": "python-version: '3.12'\n"})
    write(tmp_path, {".github/workflows/zz.yml": "python-version: '3.13'\n"})
    pins = read_pins(tmp_path)
    assert len(pins.pins) == MAX_WORKFLOWS and {p.text for p in pins.pins} == {"3.12"}
    assert any("over 50 workflows" in n for n in pins.notes)


def test_a_yaml_bomb_is_only_text(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(20)
    )
    write(tmp_path, {".github/workflows/bomb.yml": bomb + "python-version: [*a]\n"})
    assert read_pins(tmp_path).pins == ()


def test_suite_for_names_those_there_are():
    assert suite_for("3.13") == TRIXIE
    with pytest.raises(ValueError, match=r"known are 3\.11 \(Debian bookworm\)"):
        suite_for("3.12")
