"""The tools the model may call: their specs for the model, and one safe way to call them."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from sandbox.errors import SandboxError
from tools import apply_patch, list_dir, read_file, replace, run_tests, search
from tools.base import Observation, Tool, ToolContext
from tools.spec import ToolSpec


def default_tools(edit: str = "both") -> list[Tool]:
    """The tools, in the order the model sees them; `edit` picks the edit tools (patch, replace
    or both)."""
    edits = {
        "patch": [apply_patch.TOOL],
        "replace": [replace.TOOL],
        "both": [replace.TOOL, apply_patch.TOOL],
    }[edit]
    return [read_file.TOOL, list_dir.TOOL, search.TOOL, *edits, run_tests.TOOL]


class ToolRegistry:
    """Tools by name. `call` validates, runs and truncates; it never raises for a tool's fault."""

    def __init__(self, *, tools: Sequence[Tool]) -> None:
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate tool names in {names}")
        for tool in tools:
            Draft202012Validator.check_schema(tool.parameters)
        self._tools = {t.name: t for t in tools}
        self._validators = {t.name: Draft202012Validator(t.parameters) for t in tools}

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """What the model is told about each tool (copies: callers may not change our schemas)."""
        return [
            ToolSpec(name=t.name, description=t.description, parameters=copy.deepcopy(t.parameters))
            for t in self._tools.values()
        ]

    def call(
        self,
        name: str,
        args: dict[str, Any] | None,
        ctx: ToolContext,
        *,
        raw_error: str | None = None,
    ) -> Observation:
        """Run one tool call and return its observation, truncated to ctx.truncation."""
        tool = self._tools.get(name)
        if tool is None:
            obs = Observation(
                ok=False,
                text=f"there is no tool named {name!r}. The tools are: {', '.join(self._tools)}.",
                data={"error": "unknown_tool"},
            )
        elif raw_error is not None:
            obs = Observation(
                ok=False,
                text=f"the arguments for {name} were not a JSON object ({raw_error}). "
                f"Send them as JSON: {_usage(tool)}",
                data={"error": "bad_arguments"},
            )
        else:
            obs = self._validated_call(tool, {} if args is None else args, ctx)
        return _truncate(_valid_utf8(obs), ctx)

    def _validated_call(self, tool: Tool, args: Any, ctx: ToolContext) -> Observation:
        error = best_match(self._validators[tool.name].iter_errors(args))
        if error is not None:
            return Observation(
                ok=False,
                text=f"invalid arguments for {tool.name}: {_explain(error, tool)}. "
                f"Usage: {_usage(tool)}",
                data={
                    "error": "invalid_arguments",
                    "field": _field(error),
                    "validator": str(error.validator),
                },
            )
        try:
            return tool.execute(args, ctx)
        except SandboxError:
            raise  # the sandbox itself failed (time spent, container gone): not the model's to fix
        except Exception as exc:  # noqa: BLE001 - a tool's bug must reach the model, not kill the run
            return Observation(
                ok=False,
                text=f"internal error in {tool.name}: {type(exc).__name__}: {exc}",
                data={"error": "internal", "exception": type(exc).__name__},
            )


def _field(error: ValidationError) -> str:
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required" and isinstance(error.validator_value, list):
        missing = [f for f in error.validator_value if f not in (error.instance or {})]
        return missing[0] if missing else path
    return path


def _explain(error: ValidationError, tool: Tool) -> str:
    allowed = ", ".join(tool.parameters.get("properties", {}))
    if error.validator == "required":
        return f"the argument {_field(error)!r} is required"
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(tool.parameters.get("properties", {})))
        return f"unknown argument {', '.join(map(repr, extra))} (allowed: {allowed})"
    where = _field(error)
    if error.validator == "type" and not where:
        return "the arguments must be a JSON object"
    expected = {k: v for k, v in error.schema.items() if k != "description"}
    return f"{where or 'arguments'}: {error.message} (expected {json.dumps(expected)})"


def _usage(tool: Tool) -> str:
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    parts = [f"{k}{'' if k in required else '?'}: {v.get('type', 'any')}" for k, v in props.items()]
    return f"{tool.name} {{{', '.join(parts)}}}"


def _valid_utf8(obs: Observation) -> Observation:
    """File names that are not UTF-8 reach us as surrogates, which no JSON request can carry:
    show their bytes as \\xNN escapes instead."""
    text = obs.text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return obs if text == obs.text else dataclasses.replace(obs, text=text)


def _truncate(obs: Observation, ctx: ToolContext) -> Observation:
    cut = ctx.truncation.apply(obs.text)
    if not cut.truncated:
        return obs
    data = {**obs.data, "truncated": True, "total_bytes": cut.total_bytes}
    return dataclasses.replace(obs, text=cut.text, data=data)
