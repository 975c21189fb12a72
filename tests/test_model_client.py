"""The model client against the real scripted server over HTTP: no mocks, no patching."""

from __future__ import annotations

import json
import math
import socket
import time
from dataclasses import replace
from itertools import count
from typing import Any

import pytest

from worker.cli.exit_codes import exit_code_for
from worker.errors import ModelUnavailable
from worker.llm.client import (
    CallOutOfTime,
    ContextTooLong,
    ModelAuthError,
    ModelBadRequest,
    OpenAIModel,
    ToolMode,
    ToolSpec,
    parse_text_tool_calls,
    to_text_history,
)
from worker.llm.scripted_server import ScriptedServer, http_error, text, tool_call
from worker.llm.types import CallSettings, Retries

READ = ToolSpec(
    name="read_file",
    description="Read a file of the repository.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
)
RUN = ToolSpec(
    name="run",
    description="Run a shell command.",
    parameters={"type": "object", "properties": {"cmd": {"type": "string"}}},
)
TOOLS = [READ, RUN]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "user", "content": "Make the tests pass."},
]


FAST = Retries(backoff=0.01, max_backoff=0.05, deadline_s=5.0)  # retries in hundredths of a second


def model(
    server: ScriptedServer, mode: ToolMode = "native", *, retries: Retries = FAST, **kwargs: Any
) -> OpenAIModel:
    return OpenAIModel(
        model="m",
        base_url=server.base_url,
        api_key="sk-test",
        tool_mode=mode,
        retries=retries,
        **kwargs,
    )


def action(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return text(json.dumps({"tool": tool, "arguments": arguments}))


def ids() -> Any:
    numbers = count(1)
    return lambda: f"call_{next(numbers)}"


def test_native_tool_call_and_usage() -> None:
    script = [
        tool_call(
            "read_file", {"path": "a.py"}, usage={"prompt_tokens": 120, "completion_tokens": 9}
        )
    ]
    with ScriptedServer(script=script) as server, model(server) as client:
        reply = client.complete(MESSAGES, TOOLS)
        server.assert_all_used()
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.error) == ("read_file", {"path": "a.py"}, None)
    assert call.id == "call_1_0"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (120, 9)
    assert reply.mode == "native" and reply.finish_reason == "tool_calls"
    sent = server.requests[0]
    assert sent["tool_choice"] == "auto" and sent["temperature"] == 0
    assert [t["function"]["name"] for t in sent["tools"]] == ["read_file", "run"]
    assert sent["messages"] == MESSAGES
    assert reply.request_bytes == len(json.dumps(sent).encode())
    assert reply.assistant_message()["tool_calls"][0]["function"]["name"] == "read_file"


def test_invalid_json_arguments_surface_as_an_error() -> None:
    with ScriptedServer(script=[tool_call("run", '{"cmd": "ls"')]) as server:
        with model(server) as client:
            (call,) = client.complete(MESSAGES, TOOLS).tool_calls
    assert call.arguments is None and call.raw_arguments == '{"cmd": "ls"'
    assert call.error is not None and "not valid JSON" in call.error


def test_json_schema_mode_sends_one_of_and_parses_the_action() -> None:
    script = [action("read_file", {"path": "b.py"}), action("final_answer", {"summary": "fixed"})]
    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "x1",
                    "type": "function",
                    "function": {"name": "run", "arguments": '{"cmd": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "x1", "content": "a.py b.py"},
    ]
    with ScriptedServer(script=script) as server, model(server, "json_schema") as client:
        first = client.complete(history, TOOLS)
        final = client.complete(history, TOOLS)
    (call,) = first.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "read_file", {"path": "b.py"})
    assert first.mode == "json_schema"
    assert (final.content, final.tool_calls) == ("fixed", ())
    sent = server.requests[0]
    assert "tools" not in sent
    response_format = sent["response_format"]
    assert response_format["type"] == "json_schema"
    branches = response_format["json_schema"]["schema"]["oneOf"]
    consts = [b["properties"]["tool"]["const"] for b in branches]
    assert consts == ["read_file", "run", "final_answer"]
    assert branches[0]["properties"]["arguments"] == READ.parameters
    assert all(m["role"] in ("system", "user", "assistant") for m in sent["messages"])
    assert not any("tool_calls" in m for m in sent["messages"])
    assert "read_file" in sent["messages"][0]["content"]  # tools described in the system prompt
    assert "Result of run (call x1):\na.py b.py" in sent["messages"][-1]["content"]


def test_json_schema_mode_can_hold_a_reply_to_some_tools_with_the_prompt_unchanged() -> None:
    script = [action("read_file", {"path": "b.py"}), action("read_file", {"path": "b.py"})]
    with ScriptedServer(script=script) as server, model(server, "json_schema") as client:
        client.complete(MESSAGES, TOOLS)
        client.complete(MESSAGES, TOOLS, CallSettings(only=("read_file",)))
    free, held = server.requests
    consts = [
        b["properties"]["tool"]["const"]
        for b in held["response_format"]["json_schema"]["schema"]["oneOf"]
    ]
    assert consts == ["read_file"]  # neither the other tool nor a final answer
    assert held["messages"] == free["messages"]  # every tool still described: the cache holds


def test_json_schema_mode_pins_arguments_so_the_model_writes_only_the_others() -> None:
    import jsonschema

    with ScriptedServer(script=[action("read_file", {"path": "b.py"})]) as server:
        with model(server, "json_schema") as client:
            client.complete(
                MESSAGES,
                TOOLS,
                CallSettings(only=("read_file",), pins={"read_file": {"path": "b.py"}}),
            )
    (sent,) = server.requests
    schema = sent["response_format"]["json_schema"]["schema"]
    # The schema the server constrains its answer with takes the pinned value and no other.
    jsonschema.validate({"tool": "read_file", "arguments": {"path": "b.py"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"tool": "read_file", "arguments": {"path": "a.py"}}, schema)
    assert READ.parameters["properties"]["path"] == {"type": "string"}  # the spec is unchanged
    assert sent["messages"][0]["content"].count('"type": "string"') >= 2  # the prompt too


def logprobs(*tokens: tuple[str, list[tuple[str, float]]]) -> dict[str, Any]:
    """A choice's `logprobs` as llama.cpp and OpenAI send them: each token and its runner-ups."""
    content = []
    for token, others in tokens:
        top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in others]
        content.append({"token": token, "logprob": -0.1, "bytes": list(token.encode()),
                        "top_logprobs": top})  # fmt: skip
    return {"content": content}


def test_second_choices_are_the_answer_with_a_runner_up_token_that_still_fits() -> None:
    replace_spec = ToolSpec(
        name="replace",
        description="Replace text.",
        parameters={
            "type": "object",
            "properties": {k: {"type": "string"} for k in ("path", "old", "new")},
            "required": ["path", "old", "new"],
        },
    )
    tokens = logprobs(
        ('```json\n{"tool": "replace", "arguments": {"path": "a.py", "old": "x', []),
        (" -", [(" -", -0.2), (" +", -1.9)]),  # in `old`, which is pinned: not a choice
        (' y", "new": "x', []),
        (" -", [(" -", -0.5), (" +", -1.2), (" *", -2.5), ('"', -3.0)]),  # '"': not JSON
        (' y"}}\n```', [(' y"}}\n```', -0.1), (" y}", -2.0)]),  # not JSON: not a choice
    )
    answer = "".join(t["token"] for t in tokens["content"])
    pins = {"replace": {"path": "a.py", "old": "x - y"}}
    with ScriptedServer(script=[text(answer, logprobs=tokens)]) as server:
        with model(server, "json_schema") as client:
            reply = client.complete(
                MESSAGES,
                [replace_spec],
                CallSettings(only=("replace",), pins=pins, ask_second_choices=True),
            )
    sent = server.requests[0]
    assert sent["logprobs"] is True and sent["top_logprobs"] >= 5
    assert reply.tool_calls[0].arguments == {"path": "a.py", "old": "x - y", "new": "x - y"}
    seconds = [(c.call.arguments, c.token) for c in reply.alternatives]
    assert seconds == [
        ({"path": "a.py", "old": "x - y", "new": "x + y"}, " +"),  # the likelier first
        ({"path": "a.py", "old": "x - y", "new": "x * y"}, " *"),
    ]
    assert abs(reply.alternatives[0].probability - math.exp(-1.2)) < 1e-9


def test_an_endpoint_that_refuses_logprobs_still_answers_without_second_choices() -> None:
    refusal = "Unsupported parameter: 'logprobs' is not supported with this model."
    answer = '```json\n{"tool": "read_file", "arguments": {"path": "b.py"}}\n```'
    script = [http_error(400, refusal), text(answer), text(answer)]
    with ScriptedServer(script=script) as server:
        with model(server, "json_schema") as client:
            first = client.complete(MESSAGES, TOOLS, CallSettings(ask_second_choices=True))
            client.complete(MESSAGES, TOOLS, CallSettings(ask_second_choices=True))
    assert first.tool_calls[0].arguments == {"path": "b.py"} and first.alternatives == ()
    asked = ["logprobs" in request for request in server.requests]
    assert asked == [True, False, False]  # refused once, never asked again


def test_text_mode_parses_tool_call_block_and_fenced_json() -> None:
    script = [
        text(
            "Let me look.\n<tool_call>\n"
            '{"name": "read_file", "arguments": {"path": "c.py"}}\n</tool_call>'
        ),
        text('Next:\n```json\n{"name": "run", "arguments": {"cmd": "pytest"}}\n```'),
    ]
    with ScriptedServer(script=script) as server, model(server, "text") as client:
        first = client.complete(MESSAGES, TOOLS)
        second = client.complete(MESSAGES, TOOLS)
    assert first.content == "Let me look."
    assert [(c.name, c.arguments) for c in first.tool_calls] == [("read_file", {"path": "c.py"})]
    assert [(c.name, c.arguments) for c in second.tool_calls] == [("run", {"cmd": "pytest"})]
    assert first.tool_calls[0].id != second.tool_calls[0].id
    assert "tools" not in server.requests[0] and "response_format" not in server.requests[0]
    assert "<tool_call>" in server.requests[0]["messages"][0]["content"]


def test_text_parser_edge_cases() -> None:
    content, calls = parse_text_tool_calls(
        '<tool_call>{"name": "run", "arguments": {"cmd": </tool_call>', ids()
    )
    assert calls[0].error is not None and calls[0].arguments is None
    content, calls = parse_text_tool_calls('I think {"name": "Bob"} is nice', ids())
    assert calls == () and content == 'I think {"name": "Bob"} is nice'
    content, calls = parse_text_tool_calls(
        'Done. {"tool": "final_answer", "arguments": {"summary": "all green"}}', ids()
    )
    assert (content, calls) == ("all green", ())
    content, calls = parse_text_tool_calls(
        '{"name": "run", "arguments": "{\\"cmd\\": \\"ls\\"}"}', ids()
    )
    assert calls[0].arguments == {"cmd": "ls"}


def test_auto_switches_to_text_when_tools_are_rejected() -> None:
    script = [
        http_error(400, "tools param requires --jinja flag"),
        text('<tool_call>{"name": "run", "arguments": {"cmd": "ls"}}</tool_call>'),
    ]
    with ScriptedServer(script=script) as server, model(server, "auto") as client:
        reply = client.complete(MESSAGES, TOOLS)
        assert client.mode == "text"
    assert reply.mode == "text" and reply.tool_calls[0].arguments == {"cmd": "ls"}
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]


def test_auto_switches_to_text_after_two_text_tool_calls() -> None:
    block = text('<tool_call>{"name": "run", "arguments": {"cmd": "ls"}}</tool_call>')
    with ScriptedServer(script=[block, block, block]) as server, model(server, "auto") as client:
        first = client.complete(MESSAGES, TOOLS)
        assert client.mode == "native" and first.mode == "text" and first.tool_calls
        client.complete(MESSAGES, TOOLS)
        assert client.mode == "text"
        third = client.complete(MESSAGES, TOOLS)
    assert third.mode == "text" and third.tool_calls[0].name == "run"
    assert ["tools" in r for r in server.requests] == [True, True, False]


def test_auto_switches_to_json_schema_when_nothing_parses() -> None:
    script = [text("I would read the file."), text("Still thinking."), action("run", {"cmd": "ls"})]
    with ScriptedServer(script=script) as server, model(server, "auto") as client:
        assert client.complete(MESSAGES, TOOLS).tool_calls == ()
        assert client.complete(MESSAGES, TOOLS).tool_calls == ()
        reply = client.complete(MESSAGES, TOOLS)
    assert reply.mode == "json_schema" and reply.tool_calls[0].arguments == {"cmd": "ls"}
    assert "response_format" in server.requests[2]


def test_500_then_success_is_retried() -> None:
    with ScriptedServer(
        script=[http_error(500, "boom"), http_error(503, "busy"), text("ok")]
    ) as server:
        with model(server) as client:
            reply = client.complete(MESSAGES, TOOLS)
    assert reply.content == "ok" and reply.attempts == 3
    server.assert_all_used()


def test_429_is_retried() -> None:
    with ScriptedServer(script=[http_error(429, "slow down"), text("ok")]) as server:
        with model(server) as client:
            assert client.complete(MESSAGES, TOOLS).content == "ok"
    assert len(server.requests) == 2


def test_retries_are_bounded() -> None:
    with ScriptedServer(script=[http_error(500, "boom")] * 3) as server:
        with model(server, retries=replace(FAST, max_retries=2)) as client:
            with pytest.raises(ModelUnavailable, match="boom"):
                client.complete(MESSAGES, TOOLS)
    server.assert_all_used()


def test_401_fails_fast_with_the_provider_message() -> None:
    with ScriptedServer(script=[http_error(401, "Incorrect API key provided")]) as server:
        with (
            model(server) as client,
            pytest.raises(ModelAuthError, match="Incorrect API key") as caught,
        ):
            client.complete(MESSAGES, TOOLS)
    assert len(server.requests) == 1
    assert caught.value.status_code == 401 and exit_code_for(caught.value) == 3
    assert "sk-test" not in str(caught.value)


def test_bad_request_fails_fast_outside_auto_mode() -> None:
    with ScriptedServer(script=[http_error(404, "model 'm' not found")]) as server:
        with model(server) as client, pytest.raises(ModelBadRequest, match="not found"):
            client.complete(MESSAGES, TOOLS)
    assert len(server.requests) == 1


def test_timeout_is_retried() -> None:
    with ScriptedServer(script=[{"delay": 5}, text("ok")]) as server:
        with model(server, timeout_s=0.3) as client:
            assert client.complete(MESSAGES, TOOLS).content == "ok"


def test_every_request_caps_the_answer_length() -> None:
    with ScriptedServer(script=[text("ok"), text("ok")]) as server:
        with model(server) as client:
            client.complete(MESSAGES, TOOLS)
        with model(server, max_completion_tokens=300) as client:
            client.complete(MESSAGES, TOOLS)
    assert [r["max_tokens"] for r in server.requests] == [1536, 300]


def test_a_model_that_wants_max_completion_tokens_gets_it() -> None:
    refusal = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )
    with ScriptedServer(script=[http_error(400, refusal), text("ok"), text("ok")]) as server:
        with model(server) as client:
            assert client.complete(MESSAGES, TOOLS).content == "ok"
            client.complete(MESSAGES, TOOLS)
    assert "max_tokens" in server.requests[0]
    for later in server.requests[1:]:
        assert later["max_completion_tokens"] == 1536 and "max_tokens" not in later


def test_the_callers_time_limit_cuts_a_call_that_never_answers() -> None:
    with ScriptedServer(script=[{"delay": 60}]) as server:
        with model(server, timeout_s=120) as client:
            started = time.monotonic()
            with pytest.raises(CallOutOfTime, match="timed out") as caught:
                client.complete(MESSAGES, TOOLS, CallSettings(timeout_s=1.0))
    assert time.monotonic() - started < 3
    assert isinstance(caught.value, TimeoutError)


def test_retries_never_go_past_the_callers_time_limit() -> None:
    with ScriptedServer(script=[{"delay": 60}] * 10) as server:
        retries = replace(FAST, backoff=0.2, max_backoff=0.2)
        with model(server, timeout_s=0.3, retries=retries) as client:
            started = time.monotonic()
            with pytest.raises(CallOutOfTime, match=r"attempt\(s\)"):
                client.complete(MESSAGES, TOOLS, CallSettings(timeout_s=1.5))
    assert 1.0 < time.monotonic() - started < 2.5
    assert 2 <= len(server.requests) <= 4


def test_an_answer_that_trickles_in_is_cut_at_the_timeout() -> None:
    # A space every 0.1 s keeps each read short: only a bound on the whole answer stops it.
    with ScriptedServer(script=[{"trickle": 30, "content": "late"}]) as server:
        with model(server, timeout_s=1.0, retries=replace(FAST, max_retries=0)) as client:
            started = time.monotonic()
            with pytest.raises(ModelUnavailable, match="timed out"):
                client.complete(MESSAGES, TOOLS)
    assert time.monotonic() - started < 3


def test_a_short_trickle_is_read_whole() -> None:
    with ScriptedServer(script=[{"trickle": 0.5, "content": "slow but fine"}]) as server:
        with model(server, timeout_s=5.0) as client:
            assert client.complete(MESSAGES, TOOLS).content == "slow but fine"


@pytest.mark.parametrize(
    "message",
    [
        "the request exceeds the available context size, try increasing it",  # llama.cpp
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9000 tokens. Please reduce the length of the messages.",  # OpenAI
        "This model's maximum context length is 4096 tokens. However, you requested 5000 "
        "tokens (3464 in the messages, 1536 in the completion). Please reduce the length of "
        "the messages or completion.",  # vLLM
    ],
)
def test_context_too_long_is_its_own_error_and_no_reason_to_switch_mode(message: str) -> None:
    with ScriptedServer(script=[http_error(400, message)]) as server:
        with model(server, mode="auto") as client, pytest.raises(ContextTooLong) as caught:
            client.complete(MESSAGES, TOOLS)
        assert client.mode == "native"
    assert len(server.requests) == 1 and caught.value.status_code == 400


def test_dead_endpoint_gives_model_unavailable_in_bounded_time() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago and now listens to nothing
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = OpenAIModel(
        model="m",
        base_url=f"http://127.0.0.1:{port}/v1",
        retries=Retries(backoff=0.1, deadline_s=1.0),
    )
    started = time.monotonic()
    with client, pytest.raises(ModelUnavailable, match="unreachable") as caught:
        client.complete(MESSAGES, TOOLS)
    assert time.monotonic() - started < 3
    assert exit_code_for(caught.value) == 3


def test_no_key_sends_a_dummy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # environment only, no code patched
    with ScriptedServer(script=[text("ok")]) as server:
        with OpenAIModel(model="m", base_url=server.base_url) as client:
            client.complete(MESSAGES, [])
            assert "sk-" not in repr(client)
    assert server.headers[0]["authorization"] == "Bearer sk-no-key"


def test_history_conversion_keeps_every_call_paired_with_its_result() -> None:
    def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        return {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": arguments},
        }

    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": "Two things.",
            "tool_calls": [call("a", "read_file", '{"path": "x"}'), call("b", "run", "{bad")],
        },
        {"role": "tool", "tool_call_id": "a", "content": "X"},
        {"role": "tool", "tool_call_id": "b", "content": "error: bad arguments"},
        {"role": "user", "content": "Tests still fail."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("c", "run", '{"cmd": "pytest"}')],
        },
        {"role": "tool", "tool_call_id": "c", "content": "1 passed"},
    ]
    turns = to_text_history(history)
    assert [t["role"] for t in turns] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert all(set(t) == {"role", "content"} for t in turns)
    assert turns[2]["content"].splitlines() == [
        "Two things.",
        '{"tool": "read_file", "arguments": {"path": "x"}}',
        '{"tool": "run", "arguments": "{bad"}',
    ]
    assert turns[3]["content"] == (
        "Result of read_file (call a):\nX\n\nResult of run (call b):\nerror: bad arguments"
        "\n\nTests still fail."
    )
    assert turns[4]["content"] == '{"tool": "run", "arguments": {"cmd": "pytest"}}'
    assert turns[5]["content"] == "Result of run (call c):\n1 passed"
    text_turns = to_text_history(history, mode="text")
    assert (
        text_turns[4]["content"]
        == '<tool_call>{"name": "run", "arguments": {"cmd": "pytest"}}</tool_call>'
    )


def test_request_size_matches_the_native_request() -> None:
    with ScriptedServer(script=[text("ok")]) as server, model(server) as client:
        size = client.request_size(MESSAGES, TOOLS)
        assert client.complete(MESSAGES, TOOLS).request_bytes == size
