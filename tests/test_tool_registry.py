"""The registry: specs the model sees, argument validation, unknown tools, failures, truncation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from policies.truncation import Truncation
from sandbox.ecosystems import language_paths
from tools.base import Observation, Tool, ToolContext
from tools.registry import ToolRegistry, default_tools

CAP = Truncation(max_bytes=1000, max_lines=40)
NAMES = ["read_file", "list_dir", "search", "replace", "apply_patch", "run_tests"]


def host_context(workspace: Path, box: Any = None) -> ToolContext:
    return ToolContext(
        workspace=workspace,
        box=box,
        paths=language_paths(),
        truncation=CAP,
        test_cmd="python -m pytest",
        test_timeout_s=30,
    )


def test_specs_are_stable_strict_schemas() -> None:
    specs = ToolRegistry(tools=default_tools()).specs()
    assert [s.name for s in specs] == NAMES
    for spec in specs:
        Draft202012Validator.check_schema(spec.parameters)
        assert spec.parameters["type"] == "object"
        assert spec.parameters["additionalProperties"] is False
        assert 40 < len(spec.description) < 400
    assert specs[0].parameters["required"] == ["path"]
    assert set(specs[0].parameters["properties"]) == {"path", "start_line", "end_line"}
    assert set(specs[2].parameters["properties"]) == {"pattern", "path"}
    assert set(specs[3].parameters["properties"]) == {"path", "old", "new", "line"}
    assert specs[3].parameters["required"] == ["path", "old", "new"]  # line is optional
    assert set(specs[4].parameters["properties"]) == {"patch"}
    assert set(specs[5].parameters["properties"]) == {"tests"}
    # One edit form only, when the user picks it (worker fix --edit-tools).
    assert "replace" not in ToolRegistry(tools=default_tools("patch")).names
    assert "apply_patch" not in ToolRegistry(tools=default_tools("replace")).names
    specs[0].parameters["properties"].clear()  # a caller's change does not reach the registry
    assert ToolRegistry(tools=default_tools()).specs()[0].parameters["properties"]


def test_unknown_tool_and_invalid_arguments_are_observations(tmp_path: Path) -> None:
    registry = ToolRegistry(tools=default_tools())
    ctx = host_context(tmp_path)
    unknown = registry.call("bash", {"cmd": "ls"}, ctx)
    assert not unknown.ok
    assert unknown.text == (
        "there is no tool named 'bash'. The tools are: read_file, list_dir, "
        "search, replace, apply_patch, run_tests."
    )

    missing = registry.call("read_file", {}, ctx)
    assert not missing.ok and missing.data["field"] == "path"
    assert "'path' is required" in missing.text
    assert "Usage: read_file {path: string, start_line?: integer, end_line?: integer}" in (
        missing.text
    )

    wrong = registry.call("read_file", {"path": "a.py", "start_line": "10"}, ctx)
    assert wrong.data["field"] == "start_line"
    assert "start_line: '10' is not of type 'integer'" in wrong.text

    low = registry.call("read_file", {"path": "a.py", "start_line": 0}, ctx)
    assert '"minimum": 1' in low.text

    extra = registry.call("read_file", {"file": "a.py", "path": "a.py"}, ctx)
    assert "unknown argument 'file' (allowed: path, start_line, end_line)" in extra.text

    items = registry.call("run_tests", {"tests": "tests/test_a.py"}, ctx)
    assert items.data["field"] == "tests" and "is not of type 'array'" in items.text

    raw = registry.call("search", None, ctx, raw_error="Expecting value: line 1 column 1")
    assert not raw.ok and "were not a JSON object" in raw.text and "search {pattern" in raw.text

    not_object = registry.call("list_dir", ["src"], ctx)  # type: ignore[arg-type]
    assert "the arguments must be a JSON object" in not_object.text
    assert registry.call("list_dir", None, ctx).ok  # no arguments at all is fine


def test_tool_crash_becomes_observation_and_output_is_truncated(tmp_path: Path) -> None:
    def boom(args: dict[str, Any], ctx: ToolContext) -> Observation:
        raise RuntimeError("disk on fire")

    def flood(args: dict[str, Any], ctx: ToolContext) -> Observation:
        return Observation(ok=True, text="line\n" * 10_000, data={"n": 1})

    schema = {"type": "object", "properties": {}, "additionalProperties": False}
    registry = ToolRegistry(
        tools=[
            Tool(name="boom", description="raises", parameters=schema, execute=boom),
            Tool(name="flood", description="floods", parameters=schema, execute=flood),
        ]
    )
    ctx = host_context(tmp_path)
    crashed = registry.call("boom", {}, ctx)
    assert not crashed.ok
    assert crashed.text == "internal error in boom: RuntimeError: disk on fire"
    flooded = registry.call("flood", {}, ctx)
    assert flooded.ok and flooded.data["truncated"] and flooded.data["n"] == 1
    assert len(flooded.text.encode()) <= CAP.max_bytes and "lines," in flooded.text
    with pytest.raises(ValueError, match="duplicate"):
        ToolRegistry(tools=[*default_tools(), default_tools()[0]])


@pytest.mark.docker
def test_registry_drives_every_tool_on_a_real_sandbox(make_repo, open_sandbox) -> None:
    session = open_sandbox(
        make_repo(
            {
                "calc.py": "def add(a, b):\n    return a - b\n",
                "tests/test_calc.py": (
                    "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
                ),
            }
        )
    )
    ctx = host_context(session.workspace.path, session.box)
    registry = ToolRegistry(tools=default_tools())
    assert "calc.py" in registry.call("list_dir", {}, ctx).text
    assert "return a - b" in registry.call("search", {"pattern": "return"}, ctx).text
    assert "1| def add" in registry.call("read_file", {"path": "calc.py"}, ctx).text
    assert registry.call("run_tests", {}, ctx).data["failing"] == ["tests/test_calc.py::test_add"]
    patched = registry.call(
        "apply_patch",
        {
            "patch": (
                "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
                "-    return a - b\n+    return a + b\n"
            )
        },
        ctx,
    )
    assert patched.changed_files == ("calc.py",)
    assert registry.call("run_tests", {"tests": ["tests/test_calc.py"]}, ctx).data["passed"]
    assert session.workspace.changed_files() == ["calc.py"]
