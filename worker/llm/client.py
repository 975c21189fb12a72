"""The model client: one OpenAI-compatible chat call per step, bounded retries, and three ways of
getting tool calls out of a model (native `tool_calls`, a JSON Schema `response_format`, text).

The loop keeps one canonical history in OpenAI's native format; for the json_schema and text
modes the client converts it to plain user/assistant turns on the way out.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Sequence
from dataclasses import replace
from itertools import count
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion

from policies.budgets import ANSWER_TOKENS
from worker.errors import ModelUnavailable
from worker.llm.types import (
    DEFAULT_RETRIES,
    PLAIN,
    CallOutOfTime,
    CallSettings,
    ContextTooLong,
    Messages,
    ModelAuthError,
    ModelBadRequest,
    ModelRefused,
    ModelReply,
    Retries,
    SecondChoice,
    TokenChoices,
    ToolCall,
    ToolSpec,
    Usage,
    parse_arguments,
    tool_to_openai,
)
from worker.llm.wire_text import (
    FINAL_ANSWER,
    action_response_format,
    alternatives_of,
    parse_action,
    parse_text_tool_calls,
    to_text_history,
    tool_prompt,
    with_system_addition,
)

__all__ = [
    "FINAL_ANSWER",
    "CallOutOfTime",
    "ContextTooLong",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelRefused",
    "ModelReply",
    "OpenAIModel",
    "Retries",
    "ToolCall",
    "ToolMode",
    "ToolSpec",
    "Usage",
    "parse_arguments",
    "parse_text_tool_calls",
    "to_text_history",
]

ToolMode = Literal["native", "json_schema", "text", "auto"]
WireMode = Literal["native", "json_schema", "text"]

NO_KEY = "sk-no-key"  # local servers ignore the key, but the SDK insists on one
_RETRY_STATUSES = frozenset({408, 409, 429})
_AUTO_SWITCH_AFTER = 2  # replies showing the need before auto mode changes wire mode
TOP_LOGPROBS = 10  # runner-up tokens asked for at each place of an answer, for second choices
# How llama.cpp, OpenAI, vLLM and Anthropic-style proxies word "the request is too long".
_CONTEXT_WORDS = (
    "context_length_exceeded",
    "exceed_context_size_error",
    "exceeds the available context size",
    "maximum context length",
    "reduce the length of the messages",
    "prompt is too long",
    "context window",
)


def _provider_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return exc.message


def _is_context_too_long(exc: openai.APIStatusError, said: str) -> bool:
    body = exc.body if isinstance(exc.body, dict) else {}
    text = " ".join(str(part) for part in (said, body.get("code"), body.get("type"))).lower()
    return exc.status_code in (400, 413) and any(words in text for words in _CONTEXT_WORDS)


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        return float(exc.response.headers.get("retry-after", ""))
    except ValueError:
        return None


class OpenAIModel:
    """A chat model behind any OpenAI-compatible endpoint, reached with the `openai` SDK.

    Retries timeouts, connection errors, 408/409/429 and 5xx with exponential backoff and
    jitter, as `retries` says (worker/llm/types.Retries). Other errors fail at once with the
    provider's message. In "auto" tool mode it starts native and switches to text or
    json_schema mode when the endpoint's answers show the need (see `complete`).
    Every request caps the answer at `max_completion_tokens`; each attempt may take at most
    `timeout_s`, counting the whole answer and not only each read, since a server that trickles
    bytes would defeat a per-read timeout.
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
        retries: Retries = DEFAULT_RETRIES,
        max_completion_tokens: int = ANSWER_TOKENS,
    ) -> None:
        if tool_mode not in ("native", "json_schema", "text", "auto"):
            raise ValueError(f"unknown tool mode {tool_mode!r}")
        self.model = model
        self.temperature = temperature
        self.tool_mode: ToolMode = tool_mode
        self.retries = retries
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_completion_tokens = max_completion_tokens
        self._cap_key = "max_tokens"  # widest support; reasoning models want the newer name
        self._logprobs = True  # until the endpoint refuses them: then no second choices
        self._mode: WireMode = "native" if tool_mode == "auto" else tool_mode
        self._hints = {"text": 0, "json_schema": 0}
        self._ids = count(1)
        self._random = random.Random(retries.seed)
        timeout = openai.Timeout(timeout_s, connect=min(timeout_s, connect_timeout_s))
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or NO_KEY,
            max_retries=0,
            timeout=timeout,
        )
        self.base_url = str(self._client.base_url)
        # The SDK imports its chat resource on first use (about 0.07 s): here, when the client
        # is built while the sandbox starts, rather than in the first call, when the run waits.
        self._completions = self._client.chat.completions.with_streaming_response

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
        self, messages: Messages, tools: Sequence[ToolSpec], settings: CallSettings = PLAIN
    ) -> ModelReply:
        """One model call. Raises ModelUnavailable (or a ModelRefused child) on failure.

        `settings` holds this call's own choices (worker/llm/types.CallSettings): a temperature
        over the configured one; in json_schema mode, the tools the reply may call (the prompt
        still describes every tool, so a server's prompt cache still holds), arguments pinned
        the same way, and the second choices (the calls the runner-up tokens spell, from the
        answer's token log-probabilities; see wire_text.alternatives_of); and the whole call's
        time, retries included: when `settings.timeout_s` runs out the call raises
        CallOutOfTime. A request too long for the model's window raises ContextTooLong (never
        retried, never a reason to switch mode).

        In auto mode: a 400 to native tools or to a response_format switches to text mode and
        asks again; native replies that carry tool calls only in their text switch to text mode
        after the second one (each such call is parsed and used meanwhile); native replies with
        no tool call at all switch to json_schema mode after the second one.
        """
        limit = settings.timeout_s
        stop_at = None if limit is None else time.monotonic() + limit
        mode = self._mode
        try:
            reply = self._call(messages, tools, mode, settings, stop_at)
        except ModelBadRequest as exc:
            if isinstance(exc, ContextTooLong):
                raise
            if self.tool_mode != "auto" or not tools or mode == "text":
                raise
            self._mode = "text"
            plain = CallSettings(temperature=settings.temperature)
            return self._call(messages, tools, "text", plain, stop_at)
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
        settings: CallSettings = PLAIN,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, self._cap_key: self.max_completion_tokens}
        chosen = self.temperature if settings.temperature is None else settings.temperature
        if chosen is not None:
            body["temperature"] = chosen
        if mode == "native":
            body["messages"] = list(messages)
            if tools:
                body["tools"] = [tool_to_openai(tool) for tool in tools]
                body["tool_choice"] = "auto"
            return body
        turns = to_text_history(messages, mode=mode)
        if tools:
            turns = with_system_addition(turns, tool_prompt(tools, mode=mode))
            if mode == "json_schema":
                only = settings.only
                allowed = [t for t in tools if only is None or t.name in only]
                body["response_format"] = action_response_format(
                    allowed or tools, final=only is None, pins=settings.pins
                )
        body["messages"] = turns
        return body

    def _call(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[ToolSpec],
        mode: WireMode,
        settings: CallSettings,
        stop_at: float | None = None,
    ) -> ModelReply:
        body = self._request(messages, tools, mode, settings)
        seconds = (
            settings.ask_second_choices and mode == "json_schema" and bool(tools) and self._logprobs
        )
        if seconds:
            body.update(logprobs=True, top_logprobs=TOP_LOGPROBS)
        completion, attempts = self._send(body, stop_at)
        if not getattr(completion, "choices", None):
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
        nearly: tuple[SecondChoice, ...] = ()
        tokens = _token_choices(choice) if seconds else []
        if tokens and len(calls) == 1:
            nearly = alternatives_of(tokens, calls[0], settings.pins)
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
            alternatives=nearly,
            answer=message.content,
            logprobs=tuple(tokens),
        )

    def _native_call(self, call: Any) -> ToolCall:
        function = getattr(call, "function", None)
        name = str(getattr(function, "name", "") or "")
        raw = str(getattr(function, "arguments", "") or "")
        arguments, error = parse_arguments(raw)
        call_id = str(getattr(call, "id", "") or "") or self._new_id()
        return ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=raw, error=error)

    def _send(self, body: dict[str, Any], stop_at: float | None) -> tuple[Any, int]:
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            limit = self.timeout_s
            if stop_at is not None:
                limit = min(limit, stop_at - time.monotonic())
                if limit <= 0:
                    raise CallOutOfTime(f"model call to {self.base_url} out of time before sending")
            try:
                return self._create(body, limit), attempt
            except openai.APIStatusError as exc:
                status = exc.status_code
                said = _provider_message(exc)
                text = f"model endpoint {self.base_url} answered HTTP {status}: {said}"
                if status in (401, 403):
                    raise ModelAuthError(text, status_code=status) from exc
                if _is_context_too_long(exc, said):
                    raise ContextTooLong(text, status_code=status) from exc
                if self._cap_key == "max_tokens" and "max_completion_tokens" in said:
                    # OpenAI's reasoning models refuse `max_tokens` by name: send the new one.
                    self._cap_key = "max_completion_tokens"
                    body["max_completion_tokens"] = body.pop("max_tokens")
                    continue
                if status == 400 and "logprobs" in body and "logprobs" in said:
                    # An endpoint without log-probabilities: ask again, and never ask again.
                    self._logprobs = False
                    body.pop("logprobs")
                    body.pop("top_logprobs", None)
                    continue
                if status < 500 and status not in _RETRY_STATUSES:
                    raise ModelBadRequest(text, status_code=status) from exc
                failure: str = text
                retry_after = _retry_after(exc)
                last: Exception = exc
            except openai.APIConnectionError as exc:  # timeouts included
                cause = f" ({exc.__cause__})" if exc.__cause__ else ""
                failure = f"model endpoint {self.base_url} unreachable: {exc.message}{cause}"
                last = exc
            delay = self.retries.delay(attempt)
            delay *= self._random.uniform(0.5, 1.0)  # jitter: callers retrying together spread
            if retry_after is not None:
                delay = max(delay, retry_after)
            now = time.monotonic()
            elapsed = now - started
            if stop_at is not None and now + delay >= stop_at:
                raise CallOutOfTime(
                    f"{failure}; out of time after {attempt} attempt(s) in {elapsed:.1f}s"
                ) from last
            if attempt > self.retries.max_retries or elapsed + delay > self.retries.deadline_s:
                raise ModelUnavailable(
                    f"{failure}; gave up after {attempt} attempt(s) in {elapsed:.1f}s"
                ) from last
            time.sleep(delay)

    def _create(self, body: dict[str, Any], limit: float) -> ChatCompletion:
        """One HTTP request that ends within `limit` seconds, however slowly the answer comes.

        The SDK's timeouts bound each read; the body is read here in chunks so that the time of
        the whole answer is bounded too (then at most one read past `limit`).
        """
        ends = time.monotonic() + limit
        timeout = openai.Timeout(limit, connect=min(limit, self.connect_timeout_s))
        create = self._completions.create
        with create(**body, timeout=timeout) as response:
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if time.monotonic() > ends:
                    raise openai.APITimeoutError(request=response.http_request)
        try:
            return ChatCompletion.construct(**json.loads(data))
        except (ValueError, TypeError) as exc:
            raise ModelUnavailable(
                f"model endpoint {self.base_url} answered something that is not a chat "
                f"completion: {bytes(data[:200])!r}"
            ) from exc


def _token_choices(choice: Any) -> list[TokenChoices]:
    """The answer's tokens and their runner-ups from a choice's `logprobs` (objects or plain
    dicts, as the endpoint sent them); empty when it sent none."""

    def get(thing: Any, name: str) -> Any:
        return thing.get(name) if isinstance(thing, dict) else getattr(thing, name, None)

    tokens: list[TokenChoices] = []
    for item in get(get(choice, "logprobs") or {}, "content") or ():
        others = [
            (str(get(o, "token")), float(get(o, "logprob")))
            for o in get(item, "top_logprobs") or ()
            if isinstance(get(o, "logprob"), int | float)  # a server may send null
        ]
        tokens.append((str(get(item, "token")), others))
    return tokens
