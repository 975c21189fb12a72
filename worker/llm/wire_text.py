"""Tool calls for models without native `tool_calls`: a JSON Schema `response_format`
(json_schema mode) or calls written in the message text (text mode), and the plain-turn history
both modes need.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from worker.llm.types import (
    Pins,
    SecondChoice,
    TokenChoices,
    ToolCall,
    ToolSpec,
    parse_arguments,
)

FINAL_ANSWER = "final_answer"
_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.DOTALL)


def action_schema(
    tools: Sequence[ToolSpec], *, final: bool = True, pins: Pins | None = None
) -> dict[str, Any]:
    """JSON Schema of one action: a `oneOf` branch per tool plus (with `final`) the final
    answer. `pins` fixes arguments of a tool to given values (required, `const`): the model
    writes only the others."""

    def branch(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        properties = {"tool": {"const": name}, "arguments": arguments}
        return {"type": "object", "properties": properties, "required": ["tool", "arguments"]}

    answer = {"type": "object", "properties": {"summary": {"type": "string"}}}
    branches = [branch(t.name, pinned(t.parameters, (pins or {}).get(t.name))) for t in tools]
    return {"oneOf": branches + ([branch(FINAL_ANSWER, answer)] if final else [])}


def pinned(parameters: dict[str, Any], pins: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool's parameter schema with the pinned arguments fixed: `const`, and required."""
    if not pins:
        return parameters
    properties = {**parameters.get("properties", {})}
    for name, value in pins.items():
        properties[name] = {"const": value}
    required = list(parameters.get("required", []))
    required += [name for name in properties if name in pins and name not in required]
    return {**parameters, "properties": properties, "required": required}


def action_response_format(
    tools: Sequence[ToolSpec], *, final: bool = True, pins: Pins | None = None
) -> dict[str, Any]:
    """The `response_format` request parameter of json_schema mode."""
    action = action_schema(tools, final=final, pins=pins)
    schema = {"name": "action", "strict": False, "schema": action}
    return {"type": "json_schema", "json_schema": schema}


def tool_prompt(tools: Sequence[ToolSpec], *, mode: Literal["json_schema", "text"]) -> str:
    """The system prompt addition that describes the tools when they are not sent natively."""
    if mode == "text":
        how = (
            "To call a tool, reply with one block of this form:\n"
            '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>\n'
            "When you are finished, call the tool final_answer with "
            '{"summary": "what you did"}.'
        )
    else:
        how = (
            'Reply with exactly one JSON object {"tool": "TOOL", "arguments": {...}}. '
            'When you are finished, use the tool "final_answer" with {"summary": "what you did"}.'
        )
    lines = [how, "", "Tools:"]
    for tool in tools:
        lines.append(f"- {tool.name}: {tool.description}")
        lines.append(f"  arguments (JSON Schema): {json.dumps(tool.parameters, sort_keys=True)}")
    return "\n".join(lines)


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _render_action(name: str, raw_arguments: str, mode: str) -> str:
    arguments, error = parse_arguments(raw_arguments)
    args: Any = raw_arguments if error else arguments
    if mode == "text":
        return f"<tool_call>{json.dumps({'name': name, 'arguments': args})}</tool_call>"
    return json.dumps({"tool": name, "arguments": args})


def to_text_history(
    messages: Sequence[dict[str, Any]], *, mode: Literal["json_schema", "text"] = "json_schema"
) -> list[dict[str, Any]]:
    """Convert a native-format history into plain turns with no `tool` role or `tool_calls`.

    An assistant tool call becomes its JSON action; a tool result becomes a user turn
    "Result of <tool> (call <id>):". Adjacent turns of one role are merged, since many chat
    templates insist that user and assistant alternate.
    """
    names: dict[str, str] = {}
    turns: list[dict[str, Any]] = []

    def add(role: str, text: str) -> None:
        if turns and turns[-1]["role"] == role and role in ("user", "assistant"):
            turns[-1] = {"role": role, "content": f"{turns[-1]['content']}\n\n{text}"}
        else:
            turns.append({"role": role, "content": text})

    for message in messages:
        role = str(message.get("role", "user"))
        if role == "assistant":
            parts = [_text_of(message.get("content"))] if message.get("content") else []
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                names[str(call.get("id", ""))] = str(function.get("name", ""))
                parts.append(
                    _render_action(function.get("name", ""), function.get("arguments") or "", mode)
                )
            add("assistant", "\n".join(parts))
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            name = names.get(call_id, "tool")
            add("user", f"Result of {name} (call {call_id}):\n{_text_of(message.get('content'))}")
        else:
            add("system" if role == "developer" else role, _text_of(message.get("content")))
    return turns


def with_system_addition(turns: list[dict[str, Any]], addition: str) -> list[dict[str, Any]]:
    if turns and turns[0]["role"] == "system":
        first = {"role": "system", "content": f"{turns[0]['content']}\n\n{addition}"}
        return [first, *turns[1:]]
    return [{"role": "system", "content": addition}, *turns]


def _call_from_object(
    obj: Any, new_id: Callable[[], str], *, need_arguments: bool
) -> ToolCall | None:
    if not isinstance(obj, dict):
        return None
    name = obj.get("name", obj.get("tool"))
    key = "arguments" if "arguments" in obj else "parameters"
    if not isinstance(name, str) or (need_arguments and key not in obj):
        return None
    value = obj.get(key, {})
    if isinstance(value, str):
        arguments, error = parse_arguments(value)
        return ToolCall(
            id=new_id(), name=name, arguments=arguments, raw_arguments=value, error=error
        )
    raw = json.dumps(value)
    if not isinstance(value, dict):
        error = f"arguments must be a JSON object, got {type(value).__name__}"
        return ToolCall(id=new_id(), name=name, arguments=None, raw_arguments=raw, error=error)
    return ToolCall(id=new_id(), name=name, arguments=value, raw_arguments=raw)


def _finish(text: str, calls: list[ToolCall]) -> tuple[str | None, tuple[ToolCall, ...]]:
    """Split off a final answer: it becomes the content when it is the only call."""
    real = [c for c in calls if c.name != FINAL_ANSWER]
    rest = text.strip() or None
    if real or not calls:
        return rest, tuple(real)
    summary = (calls[0].arguments or {}).get("summary")
    return (summary if isinstance(summary, str) else rest), ()


def parse_text_tool_calls(
    text: str, new_id: Callable[[], str]
) -> tuple[str | None, tuple[ToolCall, ...]]:
    """Tool calls written in a message's text, and the text left around them.

    Looks for `<tool_call>{...}</tool_call>` blocks first, then a fenced JSON block, then the
    first bare JSON object that has a "name" (or "tool") and "arguments".
    """
    blocks = list(_TOOL_CALL_BLOCK.finditer(text))
    if blocks:
        calls: list[ToolCall] = []
        for block in blocks:
            body = block.group(1)
            try:
                call = _call_from_object(json.loads(body), new_id, need_arguments=False)
            except json.JSONDecodeError as exc:
                error = f"tool call is not valid JSON ({exc.msg} at position {exc.pos})"
                call = ToolCall(
                    id=new_id(), name="", arguments=None, raw_arguments=body, error=error
                )
            if call is not None:
                calls.append(call)
        return _finish(_TOOL_CALL_BLOCK.sub("", text), calls)
    for fence in _FENCE.finditer(text):
        try:
            call = _call_from_object(json.loads(fence.group(1)), new_id, need_arguments=True)
        except json.JSONDecodeError:
            continue
        if call is not None:
            return _finish(text[: fence.start()] + text[fence.end() :], [call])
    decoder = json.JSONDecoder()
    for start in [m.start() for m in re.finditer(r"\{", text)][:50]:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        call = _call_from_object(obj, new_id, need_arguments=True)
        if call is not None:
            return _finish(text[:start] + text[end:], [call])
    return text or None, ()


def parse_action(text: str, new_id: Callable[[], str]) -> tuple[str | None, tuple[ToolCall, ...]]:
    """Parse a json_schema-mode reply (one JSON action) into a tool call or a final answer."""
    try:
        call = _call_from_object(json.loads(text), new_id, need_arguments=False)
    except json.JSONDecodeError:
        call = None
    if call is not None:
        return _finish("", [call])
    content, calls = parse_text_tool_calls(text, new_id)  # a model that wrapped it anyway
    if calls or content != (text or None):
        return content, calls
    error = f'the reply is not a JSON action {{"tool": ..., "arguments": ...}}: {text[:200]}'
    return None, (ToolCall(id=new_id(), name="", arguments=None, raw_arguments=text, error=error),)


def alternatives_of(
    tokens: Sequence[TokenChoices], call: ToolCall, pins: Pins | None
) -> tuple[SecondChoice, ...]:
    """The json_schema-mode answer `tokens` spelled out, again with one token swapped for a
    runner-up at its place, for each place and runner-up: those that still parse to one call of
    the same tool with the same pinned arguments and new arguments, likeliest first, each
    arguments once. No model call: the endpoint sent these with the answer (logprobs)."""
    raw = "".join(token for token, _ in tokens)
    fixed = dict((pins or {}).get(call.name) or {})
    seen = {json.dumps(call.arguments, sort_keys=True)}
    found: list[SecondChoice] = []
    at = 0
    for token, alternatives in tokens:
        for other, logprob in alternatives:
            if other == token:
                continue
            _, calls = parse_action(raw[:at] + other + raw[at + len(token) :], lambda: call.id)
            swapped = calls[0] if len(calls) == 1 else None
            if swapped is None or swapped.name != call.name or swapped.arguments is None:
                continue
            if any(swapped.arguments.get(k) != v for k, v in fixed.items()):
                continue
            key = json.dumps(swapped.arguments, sort_keys=True)
            if key not in seen:
                seen.add(key)
                choice = SecondChoice(
                    call=swapped, probability=math.exp(logprob), was=token, token=other
                )
                found.append(choice)
        at += len(token)
    return tuple(sorted(found, key=lambda c: -c.probability))
