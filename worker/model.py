"""The model client: one OpenAI-compatible chat call per step, bounded retries, and three ways of
getting tool calls out of a model (native `tool_calls`, a JSON Schema `response_format`, text).

The loop keeps one canonical history in OpenAI's native format; for the json_schema and text
modes the client converts it to plain user/assistant turns on the way out.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import count
from typing import Any, Literal

import openai

from worker.errors import ModelUnavailable

ToolMode = Literal["native", "json_schema", "text", "auto"]
WireMode = Literal["native", "json_schema", "text"]

FINAL_ANSWER = "final_answer"
NO_KEY = "sk-no-key"  # local servers ignore the key, but the SDK insists on one
_RETRY_STATUSES = frozenset({408, 409, 429})
_AUTO_SWITCH_AFTER = 2  # replies showing the need before auto mode changes wire mode
_TOOL_CALL_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.DOTALL)


class ModelRefused(ModelUnavailable):
    """The endpoint answered with an error that retrying cannot fix."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ModelAuthError(ModelRefused):
    """The endpoint refused our credentials (HTTP 401/403)."""


class ModelBadRequest(ModelRefused):
    """The endpoint rejected the request itself (HTTP 400/404/422 and other 4xx)."""


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """A tool as the model sees it: a name, a description and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The entry for the `tools` request parameter."""
        function = {"name": self.name, "description": self.description}
        return {"type": "function", "function": {**function, "parameters": self.parameters}}


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """One tool call; `error` says why `arguments` is None (they were not a JSON object)."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str
    error: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """The entry for an assistant message's `tool_calls` in the canonical history."""
        function = {"name": self.name, "arguments": self.raw_arguments}
        return {"id": self.id, "type": "function", "function": function}


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens one model call consumed, as the endpoint reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, kw_only=True)
class ModelReply:
    """What one `complete` call produced; `mode` says how the tool calls were obtained."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Usage
    finish_reason: str | None
    mode: str
    request_bytes: int = 0
    attempts: int = 1

    def assistant_message(self) -> dict[str, Any]:
        """This reply as an assistant message of the canonical (native-format) history."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_openai() for call in self.tool_calls]
        return message


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Decode a tool call's arguments: (object, None) or (None, reason); blank means `{}`."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at position {exc.pos}): {raw[:200]}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def action_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """JSON Schema of one action: a `oneOf` branch per tool plus the final answer."""

    def branch(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        properties = {"tool": {"const": name}, "arguments": arguments}
        return {"type": "object", "properties": properties, "required": ["tool", "arguments"]}

    final = {"type": "object", "properties": {"summary": {"type": "string"}}}
    return {"oneOf": [branch(t.name, t.parameters) for t in tools] + [branch(FINAL_ANSWER, final)]}


def action_response_format(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """The `response_format` request parameter of json_schema mode."""
    schema = {"name": "action", "strict": False, "schema": action_schema(tools)}
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


def _with_system_addition(turns: list[dict[str, Any]], addition: str) -> list[dict[str, Any]]:
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


def _provider_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return exc.message


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        return float(exc.response.headers.get("retry-after", ""))
    except ValueError:
        return None


class OpenAIModel:
    """A chat model behind any OpenAI-compatible endpoint, reached with the `openai` SDK.

    Retries timeouts, connection errors, 408/409/429 and 5xx with exponential backoff and
    jitter; no retry starts more than `deadline_s` after the call began. Other errors fail at
    once with the provider's message. In "auto" tool mode it starts native and switches to
    text or json_schema mode when the endpoint's answers show the need (see `complete`).
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        temperature: float | None = 0.0,
        tool_mode: ToolMode = "auto",
        timeout_s: float = 120.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_backoff: float = 8.0,
        deadline_s: float = 20.0,
        seed: int | None = None,
    ) -> None:
        if tool_mode not in ("native", "json_schema", "text", "auto"):
            raise ValueError(f"unknown tool mode {tool_mode!r}")
        self.model = model
        self.temperature = temperature
        self.tool_mode: ToolMode = tool_mode
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.deadline_s = deadline_s
        self._mode: WireMode = "native" if tool_mode == "auto" else tool_mode
        self._hints = {"text": 0, "json_schema": 0}
        self._ids = count(1)
        self._random = random.Random(seed)
        timeout = openai.Timeout(timeout_s, connect=min(timeout_s, connect_timeout_s))
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or NO_KEY,
            max_retries=0,
            timeout=timeout,
        )
        self.base_url = str(self._client.base_url)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIModel(model={self.model!r}, base_url={self.base_url!r}, mode={self._mode!r})"

    def __enter__(self) -> OpenAIModel:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    @property
    def mode(self) -> WireMode:
        """The wire mode the next call will use."""
        return self._mode

    def request_size(self, messages: Sequence[dict[str, Any]], tools: Sequence[ToolSpec]) -> int:
        """Bytes of the request JSON that `complete` would send now."""
        return len(json.dumps(self._request(messages, tools, self._mode)).encode())

    def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[ToolSpec],
        *,
        temperature: float | None = None,
    ) -> ModelReply:
        """One model call. Raises ModelUnavailable (or a ModelRefused child) on failure.

        `temperature` overrides the configured one for this call only (the loop raises it to
        break a repeat).

        In auto mode: a 400 to native tools or to a response_format switches to text mode and
        asks again; native replies that carry tool calls only in their text switch to text mode
        after the second one (each such call is parsed and used meanwhile); native replies with
        no tool call at all switch to json_schema mode after the second one.
        """
        mode = self._mode
        try:
            reply = self._call(messages, tools, mode, temperature)
        except ModelBadRequest:
            if self.tool_mode != "auto" or not tools or mode == "text":
                raise
            self._mode = "text"
            return self._call(messages, tools, "text", temperature)
        if self.tool_mode != "auto" or not tools or mode != "native" or reply.tool_calls:
            return reply
        content, calls = parse_text_tool_calls(reply.content or "", self._new_id)
        hint: WireMode = "text" if calls else "json_schema"
        self._hints[hint] += 1
        if self._hints[hint] >= _AUTO_SWITCH_AFTER:
            self._mode = hint
        return replace(reply, content=content, tool_calls=calls, mode="text") if calls else reply

    def _new_id(self) -> str:
        return f"call_{next(self._ids)}"

    def _request(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[ToolSpec],
        mode: WireMode,
        temperature: float | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model}
        chosen = self.temperature if temperature is None else temperature
        if chosen is not None:
            body["temperature"] = chosen
        if mode == "native":
            body["messages"] = list(messages)
            if tools:
                body["tools"] = [tool.to_openai() for tool in tools]
                body["tool_choice"] = "auto"
            return body
        turns = to_text_history(messages, mode=mode)
        if tools:
            turns = _with_system_addition(turns, tool_prompt(tools, mode=mode))
            if mode == "json_schema":
                body["response_format"] = action_response_format(tools)
        body["messages"] = turns
        return body

    def _call(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[ToolSpec],
        mode: WireMode,
        temperature: float | None = None,
    ) -> ModelReply:
        body = self._request(messages, tools, mode, temperature)
        completion, attempts = self._send(body)
        if not completion.choices:
            raise ModelUnavailable(f"model endpoint {self.base_url} returned no choices")
        choice = completion.choices[0]
        message = choice.message
        usage = completion.usage
        content: str | None = message.content
        calls: tuple[ToolCall, ...] = ()
        if mode == "native":
            calls = tuple(self._native_call(call) for call in message.tool_calls or ())
        elif tools and mode == "json_schema":
            content, calls = parse_action(content or "", self._new_id)
        elif tools:
            content, calls = parse_text_tool_calls(content or "", self._new_id)
        return ModelReply(
            content=content,
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
            ),
            finish_reason=choice.finish_reason,
            mode=mode,
            request_bytes=len(json.dumps(body).encode()),
            attempts=attempts,
        )

    def _native_call(self, call: Any) -> ToolCall:
        function = getattr(call, "function", None)
        name = str(getattr(function, "name", "") or "")
        raw = str(getattr(function, "arguments", "") or "")
        arguments, error = parse_arguments(raw)
        call_id = str(getattr(call, "id", "") or "") or self._new_id()
        return ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=raw, error=error)

    def _send(self, body: dict[str, Any]) -> tuple[Any, int]:
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            try:
                return self._client.chat.completions.create(**body), attempt
            except openai.APIStatusError as exc:
                status = exc.status_code
                said = _provider_message(exc)
                text = f"model endpoint {self.base_url} answered HTTP {status}: {said}"
                if status in (401, 403):
                    raise ModelAuthError(text, status_code=status) from exc
                if status < 500 and status not in _RETRY_STATUSES:
                    raise ModelBadRequest(text, status_code=status) from exc
                failure: str = text
                retry_after = _retry_after(exc)
                last: Exception = exc
            except openai.APIConnectionError as exc:  # timeouts included
                cause = f" ({exc.__cause__})" if exc.__cause__ else ""
                failure = f"model endpoint {self.base_url} unreachable: {exc.message}{cause}"
                last = exc
            delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
            delay *= self._random.uniform(0.5, 1.0)  # jitter: callers retrying together spread
            if retry_after is not None:
                delay = max(delay, retry_after)
            elapsed = time.monotonic() - started
            if attempt > self.max_retries or elapsed + delay > self.deadline_s:
                raise ModelUnavailable(
                    f"{failure}; gave up after {attempt} attempt(s) in {elapsed:.1f}s"
                ) from last
            time.sleep(delay)
