"""The ecosystem seam: which ecosystem a repository or a test command is, and the one line a
project that names no test command gets (naming the user's repository, not our copy)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox.ecosystems import detect_test_command, ecosystem_for, ecosystem_running, recognised
from sandbox.errors import SandboxUsageError


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def names(found: list) -> list[str]:
    return [e.name for e in found]


def test_a_repository_is_recognised_by_its_marker_files(tmp_path: Path) -> None:
    py = write(tmp_path / "py", {"pyproject.toml": "[project]\nname='x'\n"})
    node = write(tmp_path / "node", {"package.json": '{"scripts": {"test": "node --test"}}'})
    both = write(tmp_path / "both", {"setup.py": "", "package.json": "{}"})
    scripts = write(tmp_path / "scripts", {"tool.py": "", "test_tool.py": ""})
    nothing = write(tmp_path / "nothing", {"README.md": "hi"})
    assert names(recognised(py)) == ["python"]
    assert names(recognised(node)) == ["node"]
    assert names(recognised(both)) == ["python", "node"]
    assert names(recognised(scripts)) == ["python"]
    assert recognised(nothing) == []


def test_the_test_command_given_names_the_ecosystem_of_a_two_language_repository(
    tmp_path: Path,
) -> None:
    both = write(tmp_path, {"pyproject.toml": "", "package.json": '{"scripts": {"test": "x"}}'})
    assert ecosystem_for(both, None).name == "python"  # type: ignore[union-attr]
    assert ecosystem_for(both, "npm test").name == "node"  # type: ignore[union-attr]
    assert ecosystem_for(both, "CI=1 npx vitest run").name == "node"  # type: ignore[union-attr]
    assert ecosystem_for(both, "python -m pytest -x").name == "python"  # type: ignore[union-attr]
    assert ecosystem_running("make test") is None
    assert ecosystem_running("echo 'unbalanced") is None


def test_each_ecosystem_detects_its_own_test_command(tmp_path: Path) -> None:
    py = write(tmp_path / "py", {"setup.cfg": ""})
    node = write(tmp_path / "node", {"package.json": json.dumps({"scripts": {"test": "jest"}})})
    assert detect_test_command(py) == "python -m pytest"
    assert detect_test_command(node) == "npm test"


@pytest.mark.parametrize(
    "package",
    [
        {"name": "x"},
        {"scripts": {"build": "tsc"}},
        {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}},
        ["not", "an", "object"],
    ],
)
def test_a_node_project_with_no_test_script_says_so_naming_the_users_repository(
    tmp_path: Path, package: object
) -> None:
    copy = write(tmp_path / "copy" / "workspace", {"package.json": json.dumps(package)})
    with pytest.raises(SandboxUsageError) as err:
        detect_test_command(copy, shown=Path("/home/me/project"))
    line = str(err.value)
    assert line.startswith("cannot tell how to run the tests of /home/me/project: ")
    assert "pass --test-cmd" in line and str(copy) not in line and "\n" not in line
    if isinstance(package, dict):
        assert 'package.json has no "test" script' in line


def test_a_tree_no_ecosystem_knows_asks_for_a_test_command(tmp_path: Path) -> None:
    with pytest.raises(SandboxUsageError, match="pass --test-cmd"):
        detect_test_command(write(tmp_path, {"main.c": "int main(){}"}), shown=Path("/r"))
