"""The ecosystem seam: which ecosystem a repository or a test command is, and the one line a
project that names no test command gets (naming the user's repository, not our copy)."""

from __future__ import annotations

import json
import subprocess
import sys
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


def test_a_python_run_loads_neither_node_nor_go(tmp_path: Path) -> None:
    # Their packages load only for a repository or command that may be theirs: on a Python
    # run they were 40-60 ms of one core before the sandbox could start (docs/performance.md).
    py = write(tmp_path / "py", {"pyproject.toml": "", "tests/test_x.py": ""})
    go = write(tmp_path / "go", {"go.mod": "module example.com/x\n\ngo 1.22\n"})
    code = (
        "import sys; from pathlib import Path; import sandbox.ecosystems as e;"
        "found = [e.ecosystem_for(Path(sys.argv[1]), None).name,"
        " e.ecosystem_for(Path(sys.argv[1]), 'python -m pytest -q').name];"
        "late = sorted(m.split('.')[2] for m in sys.modules"
        " if m.startswith(('sandbox.ecosystems.go', 'sandbox.ecosystems.node')));"
        "found.append(e.ecosystem_for(Path(sys.argv[2]), None).name);"
        "found.append(e.ecosystem_running('GOFLAGS=\"-mod=mod -v\" go test ./...').name);"
        "print(found, sorted(set(late)))"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", code, str(py), str(go)],
        capture_output=True, text=True, check=True, cwd=root,
    )  # fmt: skip
    assert proc.stdout.strip() == "['python', 'python', 'go', 'go'] []"
