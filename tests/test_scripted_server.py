"""The scripted OpenAI-compatible server, exercised over real HTTP with the real `openai` client."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest

from worker.llm.scripted_server import ScriptedServer, http_error, text, tool_call

MESSAGES: list[Any] = [{"role": "user", "content": "hi"}]


def client(server: ScriptedServer, **kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0, **kwargs)


def test_replies_parse_as_chat_completions_and_requests_are_recorded() -> None:
    script = [
        tool_call("read_file", {"path": "a.py"}),
        text("done", usage={"prompt_tokens": 7, "completion_tokens": 3}),
    ]
    with ScriptedServer(script=script) as server:
        assert server.base_url.endswith("/v1")
        with client(server) as api:
            first = api.chat.completions.create(model="m", messages=MESSAGES)
            second = api.chat.completions.create(model="m", messages=MESSAGES, temperature=0)
        server.assert_all_used()
    call = first.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.name == "read_file"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"path": "a.py"}  # type: ignore[union-attr]
    assert first.choices[0].finish_reason == "tool_calls"
    assert first.object == "chat.completion" and first.model == "m"
    assert second.choices[0].message.content == "done"
    assert second.choices[0].finish_reason == "stop"
    assert second.usage is not None and second.usage.total_tokens == 10
    assert [r["messages"] for r in server.requests] == [MESSAGES, MESSAGES]
    assert server.requests[1]["temperature"] == 0
    assert server.headers[0]["authorization"] == "Bearer sk-test"


def test_models_endpoint() -> None:
    with ScriptedServer(script=[], model="tiny") as server, client(server) as api:
        assert [m.id for m in api.models.list()] == ["tiny"]


def test_http_error_entries_then_success() -> None:
    script = [http_error(500, "boom"), http_error(401, "bad key"), text("ok")]
    with ScriptedServer(script=script) as server, client(server) as api:
        with pytest.raises(openai.InternalServerError, match="boom"):
            api.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.AuthenticationError, match="bad key"):
            api.chat.completions.create(model="m", messages=MESSAGES)
        reply = api.chat.completions.create(model="m", messages=MESSAGES)
        assert reply.choices[0].message.content == "ok"
        server.assert_all_used()


def test_callable_entry_answers_from_the_conversation() -> None:
    def echo(body: dict[str, Any]) -> dict[str, Any]:
        return text(f"you said {body['messages'][-1]['content']}")

    with ScriptedServer(script=[echo]) as server, client(server) as api:
        reply = api.chat.completions.create(model="m", messages=MESSAGES)
        assert reply.choices[0].message.content == "you said hi"


def test_running_past_the_script_fails_loudly() -> None:
    with ScriptedServer(script=[text("only")]) as server, client(server) as api:
        api.chat.completions.create(model="m", messages=MESSAGES)
        with pytest.raises(openai.InternalServerError, match="script exhausted"):
            api.chat.completions.create(model="m", messages=MESSAGES)
        assert server.overruns == 1
        with pytest.raises(AssertionError, match="1 requests past the end"):
            server.assert_all_used()


def test_unused_entries_are_reported() -> None:
    with ScriptedServer(script=[text("a"), text("b")]) as server, client(server) as api:
        api.chat.completions.create(model="m", messages=MESSAGES)
        assert server.unused() == [text("b")]
        with pytest.raises(AssertionError, match="1 entries unused"):
            server.assert_all_used()


def test_unknown_entry_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown script entry keys"):
        ScriptedServer(script=[{"contnet": "typo"}])


def test_delay_makes_the_client_time_out_and_stop_does_not_wait_for_it() -> None:
    with ScriptedServer(script=[{"delay": 30}]) as server, client(server, timeout=0.3) as api:
        with pytest.raises(openai.APITimeoutError):
            api.chat.completions.create(model="m", messages=MESSAGES)
        started = time.monotonic()
    assert time.monotonic() - started < 5


def test_unknown_route_is_404() -> None:
    with ScriptedServer(script=[]) as server:
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(f"{server.base_url}/nothing", timeout=5)
        assert caught.value.code == 404


def test_runs_as_a_process_until_sigterm(tmp_path: Path) -> None:
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps([text("from a process")]))
    port_file, report_file = tmp_path / "port", tmp_path / "report.json"
    command = [sys.executable, "-m", "worker.llm.scripted_server", "--script", str(script_file)]
    command += ["--port-file", str(port_file), "--report-file", str(report_file)]
    process = subprocess.Popen(command)
    try:
        deadline = time.monotonic() + 10
        while not port_file.exists():
            assert time.monotonic() < deadline, "the server never wrote its port"
            assert process.poll() is None, "the server exited early"
            time.sleep(0.05)
        base_url = f"http://127.0.0.1:{port_file.read_text()}/v1"
        with openai.OpenAI(base_url=base_url, api_key="x", max_retries=0) as api:
            reply = api.chat.completions.create(model="m", messages=MESSAGES)
        assert reply.choices[0].message.content == "from a process"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    report = json.loads(report_file.read_text())
    assert report["unused"] == [] and report["overruns"] == 0
    assert report["requests"][0]["messages"] == MESSAGES


def test_a_reply_comes_at_once_on_a_kept_alive_connection() -> None:
    # The benchmarks' "zero-latency" model (bench/overhead.py): with Nagle's algorithm on, each
    # reply's body waited for the client's delayed ACK of its headers, 40-50 ms a reply. The
    # fastest of eight stays under that even on a loaded machine.
    with ScriptedServer(script=[text("ok")] * 8) as server, client(server) as api:
        took = []
        for _ in range(8):
            started = time.perf_counter()
            api.chat.completions.create(model="m", messages=MESSAGES)
            took.append(time.perf_counter() - started)
    assert min(took[1:]) < 0.02, took
