"""The model client in its own process, against the real scripted server over HTTP: the same
replies and the same errors as the client in-process, and no process left behind."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import psutil
import pytest

from worker.errors import ModelUnavailable
from worker.llm.process import ModelProcess
from worker.llm.scripted_server import ScriptedServer, http_error, text, tool_call
from worker.llm.types import (
    CallOutOfTime,
    CallSettings,
    ContextTooLong,
    ModelAuthError,
    Retries,
    ToolSpec,
)

READ = ToolSpec(
    name="read_file",
    description="Read a file of the repository.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You fix bugs."},
    {"role": "user", "content": "Make the tests pass."},
]


def connected(server: ScriptedServer, **options: Any) -> ModelProcess:
    client = ModelProcess()
    client.connect(
        model="m", base_url=server.base_url, api_key="sk-test",
        retries=Retries(backoff=0.01, deadline_s=5.0), **options,
    )  # fmt: skip
    return client


def test_a_tool_call_comes_back_as_the_client_made_it():
    usage = {"prompt_tokens": 120, "completion_tokens": 9}
    script = [tool_call("read_file", {"path": "a.py"}, usage=usage), text("done")]
    with ScriptedServer(script=script) as server, connected(server) as client:
        reply = client.complete(MESSAGES, [READ], CallSettings(temperature=0.7, timeout_s=30))
        second = client.complete(MESSAGES, [READ])
        server.assert_all_used()
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.id) == ("read_file", {"path": "a.py"}, "call_1_0")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (120, 9)
    assert reply.mode == client.mode == "native" and reply.request_bytes > 0
    assert server.requests[0]["temperature"] == 0.7 and server.requests[0]["messages"] == MESSAGES
    assert second.content == "done" and not second.tool_calls


def test_the_json_schema_mode_and_its_held_tools_cross_the_pipe():
    script = [text('{"tool": "read_file", "arguments": {"path": "b.py"}}')]
    with ScriptedServer(script=script) as server:
        with connected(server, tool_mode="json_schema") as client:
            pins = {"read_file": {"path": "b.py"}}
            reply = client.complete(MESSAGES, [READ], CallSettings(only=("read_file",), pins=pins))
    assert reply.tool_calls[0].arguments == {"path": "b.py"} and client.mode == "json_schema"
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    (branch,) = schema["oneOf"]
    assert branch["properties"]["tool"] == {"const": "read_file"}
    assert branch["properties"]["arguments"]["properties"]["path"] == {"const": "b.py"}


def test_second_choices_cross_the_pipe():
    tokens = [('{"tool": "read_file", "arguments": {"path": "b', []),
              ('.py"}}', [{"token": '.pyi"}}', "logprob": -1.5}])]  # fmt: skip
    logprobs = {"content": [{"token": t, "logprob": 0.0, "top_logprobs": o} for t, o in tokens]}
    script = [text("".join(t for t, _ in tokens), logprobs=logprobs)]
    with ScriptedServer(script=script) as server:
        with connected(server, tool_mode="json_schema") as client:
            reply = client.complete(
                MESSAGES, [READ], CallSettings(only=("read_file",), ask_second_choices=True)
            )
    assert reply.tool_calls[0].arguments == {"path": "b.py"}
    (second,) = reply.alternatives  # what the model nearly wrote, rebuilt on this side
    assert second.call.arguments == {"path": "b.pyi"} and second.token == '.pyi"}}'
    assert server.requests[0]["logprobs"] is True


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        (http_error(401, "bad key"), ModelAuthError),
        (http_error(400, "maximum context length is 8192 tokens"), ContextTooLong),
    ],
)
def test_the_clients_errors_are_raised_here_with_their_class_and_status(entry, error):
    with ScriptedServer(script=[entry]) as server, connected(server) as client:
        with pytest.raises(error) as caught:
            client.complete(MESSAGES, [READ])
    assert caught.value.status_code == entry["status"] and entry["message"] in str(caught.value)


def test_the_callers_time_limit_holds_across_the_pipe():
    with ScriptedServer(script=[{"delay": 60}]) as server, connected(server) as client:
        started = time.monotonic()
        with pytest.raises(CallOutOfTime):
            client.complete(MESSAGES, [READ], CallSettings(timeout_s=1.0))
    assert time.monotonic() - started < 5


def test_a_bad_option_is_a_value_error_at_the_first_call():
    with ScriptedServer(script=[]) as server:
        with connected(server, tool_mode="telepathy") as client, pytest.raises(ValueError):
            client.complete(MESSAGES, [READ])


def test_a_dead_client_process_is_an_unavailable_model_and_close_reaps_it():
    with ScriptedServer(script=[text("never sent")]) as server:
        client = connected(server)
        child = psutil.Process(client._proc.pid)
        os.kill(child.pid, signal.SIGKILL)
        with pytest.raises(ModelUnavailable, match="model client process ended"):
            client.complete(MESSAGES, [READ])
        with pytest.raises(ModelUnavailable):  # and every call after it
            client.complete(MESSAGES, [READ])
        client.close()
    assert not child.is_running()


def test_closing_leaves_no_process_behind_even_mid_import():
    client = ModelProcess()  # closed at once, while the child still loads the SDK
    child = psutil.Process(client._proc.pid)
    client.close()
    assert not child.is_running()
