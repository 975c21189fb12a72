"""The types the model client speaks in: tool specs, tool calls, usage, replies, and the errors
a caller may want to tell apart."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tools.spec import ToolSpec
from worker.errors import ModelUnavailable

# Arguments fixed for one reply, by tool name: {"replace": {"old": "x = 1"}}. In json_schema
# mode the reply's schema holds them as constants, so the model writes only the others.
Pins = Mapping[str, Mapping[str, Any]]
Messages = Sequence[dict[str, Any]]  # a conversation, in OpenAI's chat message format
# A token of an answer and the likeliest tokens at its place with their log-probabilities.
TokenChoices = tuple[str, Sequence[tuple[str, float]]]


def plain_pins(pins: Pins | None) -> dict[str, dict[str, Any]] | None:
    """Pins as plain dicts (for JSON: a request to the model process, a trace event); None
    when there are none."""
    return {name: dict(args) for name, args in pins.items()} if pins else None


@dataclass(frozen=True)
class CallSettings:
    """What one model call is asked beyond its conversation, chosen by the caller for that call
    alone. `temperature`: None is the client's configured one. `only`: the tools the reply may
    call (None: any). `pins`: arguments those tools' calls must carry. `ask_second_choices`:
    bring back the edits the runner-up tokens spell (`ModelReply.alternatives`). `only`, `pins`
    and `ask_second_choices` bind in json_schema mode only; native and text modes cannot enforce
    them and ignore them.
    `timeout_s`: the whole call's time, retries included (None: no limit but the client's)."""

    temperature: float | None = None
    only: tuple[str, ...] | None = None
    pins: Pins | None = None
    ask_second_choices: bool = False
    timeout_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (a request to the model process, a trace event)."""
        return {
            "temperature": self.temperature,
            "only": list(self.only) if self.only is not None else None,
            "pins": plain_pins(self.pins),
            "ask_second_choices": self.ask_second_choices,
            "timeout_s": self.timeout_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CallSettings:
        only = data.get("only")
        return cls(
            temperature=data.get("temperature"),
            only=tuple(only) if only is not None else None,
            pins=data.get("pins") or None,
            ask_second_choices=bool(data.get("ask_second_choices", False)),
            timeout_s=data.get("timeout_s"),
        )


PLAIN = CallSettings()  # a call with nothing of its own: the client's temperature, any tool


@dataclass(frozen=True, kw_only=True)
class Retries:
    """How the client retries a call that failed for a reason that may pass (a timeout, a lost
    connection, HTTP 408/409/429 or 5xx): at most `max_retries` more attempts, the wait
    doubling from `backoff` seconds up to `max_backoff`, with a jitter seeded by `seed`; no
    retry starts more than `deadline_s` after the call began."""

    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 8.0
    deadline_s: float = 20.0
    seed: int | None = None

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number `attempt` (from 1), before the jitter.

        >>> [Retries().delay(n) for n in (1, 2, 3, 4, 5)]
        [1.0, 2.0, 4.0, 8.0, 8.0]
        """
        return min(self.max_backoff, self.backoff * 2 ** (attempt - 1))


DEFAULT_RETRIES = Retries()  # the client's unless told otherwise: 4 retries, 20 s at most


class ModelRefused(ModelUnavailable):
    """The endpoint answered with an error that retrying cannot fix."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class ModelAuthError(ModelRefused):
    """The endpoint refused our credentials (HTTP 401/403)."""


class ModelBadRequest(ModelRefused):
    """The endpoint rejected the request itself (HTTP 400/404/422 and other 4xx)."""


class ContextTooLong(ModelBadRequest):
    """The request does not fit the model's context window: the caller must send less."""


class CallOutOfTime(ModelUnavailable, TimeoutError):
    """The call ran into the time limit its caller gave (`timeout_s`); no retry went past it."""


def tool_to_openai(spec: ToolSpec) -> dict[str, Any]:
    """A tool spec as an entry of the `tools` request parameter (native tool calls)."""
    function = {"name": spec.name, "description": spec.description}
    return {"type": "function", "function": {**function, "parameters": spec.parameters}}


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

    def key(self) -> str:
        """Its tool and arguments as one comparable string (the same edit sent twice: one key)."""
        args = self.arguments if self.arguments is not None else self.raw_arguments
        return json.dumps([self.name, args], sort_keys=True, default=str)


@dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens one model call consumed, as the endpoint reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, kw_only=True)
class SecondChoice:
    """A reply's tool call again with one token of its answer swapped for the model's runner-up
    at that place (from the endpoint's logprobs): what the model nearly wrote."""

    call: ToolCall
    probability: float  # of the runner-up token there, as the endpoint reported it
    was: str  # the token the answer has there
    token: str  # the runner-up put in its place


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
    # Its second choices (what the model nearly wrote), likeliest first: where asked for
    # (`CallSettings.ask_second_choices`), in json_schema mode.
    alternatives: tuple[SecondChoice, ...] = ()
    # What `worker replay` serves again: the answer's text as the endpoint sent it (before its
    # tool calls were parsed out of it), and the tokens and runner-ups second choices came from.
    answer: str | None = None
    logprobs: tuple[TokenChoices, ...] = ()

    @property
    def calls_complete(self) -> bool:
        """It carries tool calls that all parsed (a cut after them does no harm)."""
        return bool(self.tool_calls) and all(call.error is None for call in self.tool_calls)

    def to_dict(self) -> dict[str, Any]:
        """This reply as JSON-able data (it crosses from the model client's process)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelReply:
        """The reply `to_dict` wrote."""
        calls = tuple(ToolCall(**call) for call in data["tool_calls"])
        seconds = tuple(
            SecondChoice(**{**second, "call": ToolCall(**second["call"])})
            for second in data.get("alternatives", ())
        )
        usage = Usage(**data["usage"])
        logprobs = tuple(
            (str(token), tuple((str(o), float(p)) for o, p in others))
            for token, others in data.get("logprobs", ())
        )
        return cls(**{**data, "tool_calls": calls, "usage": usage, "alternatives": seconds,
                      "logprobs": logprobs})  # fmt: skip

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
