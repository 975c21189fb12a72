"""A deterministic OpenAI-compatible HTTP server that replays a script, for tests and demos.

A script is a list of entries, consumed one per POST /v1/chat/completions, in arrival order:

- `{"tool_calls": [{"name": "read_file", "arguments": {...}}], "content": None}`: native tool
  calls (`arguments` may also be a string, sent as is, to test invalid JSON);
- `{"content": "text"}`: a plain text reply;
- `{"status": 500, "message": "boom"}`: an HTTP error (`body` replaces the default error JSON);
- `{"delay": 2.0, ...}`: wait before answering (alone, it answers an empty text reply);
- `{"trickle": 2.0, ...}`: send the headers at once, then a space every 0.1 s for that long
  before the answer itself (JSON allows leading blanks), as a slow proxy might;
- any entry may add `usage` ({"prompt_tokens", "completion_tokens"}), `finish_reason`, `headers`,
  `logprobs` (the choice's, as sent: {"content": [{"token", "logprob", "top_logprobs"}, ...]});
- a callable taking the request body and returning one of the above.

`GET /health` answers 200, as llama-server's does (worker/replay/llama_stand_in.py).
A request past the end of the script is answered HTTP 500 "script exhausted" and counted in
`overruns`, so that `assert_all_used` fails loudly.
Run as a process: `python -m worker.llm.scripted_server --script FILE.json --port-file PATH`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import FrameType
from typing import Any

Entry = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]

_KEYS = frozenset(
    {
        "content",
        "tool_calls",
        "status",
        "message",
        "body",
        "delay",
        "trickle",
        "usage",
        "finish_reason",
        "headers",
        "logprobs",
    }
)
_TRICKLE_EVERY = 0.1
_CREATED = 1_700_000_000  # fixed, so replies are byte-for-byte reproducible


def tool_call(name: str, arguments: dict[str, Any] | str, **extra: Any) -> dict[str, Any]:
    """A script entry answering with one native tool call."""
    return {"tool_calls": [{"name": name, "arguments": arguments}], **extra}


def text(content: str, **extra: Any) -> dict[str, Any]:
    """A script entry answering with plain text."""
    return {"content": content, **extra}


def http_error(status: int, message: str, **extra: Any) -> dict[str, Any]:
    """A script entry answering with an HTTP error in OpenAI's error shape."""
    return {"status": status, "message": message, **extra}


def check_entry(entry: Entry) -> None:
    """Refuse an entry with unknown keys, so that a typo in a script fails at once."""
    if callable(entry):
        return
    if not isinstance(entry, dict):
        raise ValueError(f"a script entry must be a dict or a callable, got {entry!r}")
    unknown = set(entry) - _KEYS
    if unknown:
        raise ValueError(f"unknown script entry keys {sorted(unknown)} in {entry!r}")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    scripted: ScriptedServer


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"
    # The headers and the body go out in two writes: with Nagle's algorithm the body waited for
    # the client's delayed ACK of the headers, 40-50 ms a reply on Linux's loopback, where a
    # real server (uvicorn, llama-server) answers at once. A scripted model answers at once.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": self.server.scripted.model, "object": "model", "created": _CREATED}
            self._send(200, {"object": "list", "data": [{**model, "owned_by": "scripted"}]})
        elif self.path.rstrip("/") == "/health":  # llama-server's: replay stands in for it
            self._send(200, {"status": "ok"})
        else:
            self._send(404, _error_body(f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(404, _error_body(f"no route POST {self.path}", "not_found"))
            return
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as exc:
            self._send(400, _error_body(f"request is not JSON: {exc}", "invalid_request_error"))
            return
        status, payload, headers, trickle = self.server.scripted._answer(
            body, {k.lower(): v for k, v in self.headers.items()}
        )
        self._send(status, payload, headers, trickle)

    def _send(
        self,
        status: int,
        payload: Any,
        headers: dict[str, str] | None = None,
        trickle: float = 0.0,
    ) -> None:
        data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
        blanks = int(trickle / _TRICKLE_EVERY)
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(blanks + len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            for _ in range(blanks):
                self.wfile.write(b" ")
                self.wfile.flush()
                if self.server.scripted._closing.wait(_TRICKLE_EVERY):
                    return
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout under test); nothing to tell it


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class ScriptedServer:
    """Serve a script on 127.0.0.1 (port 0 picks a free one) while in a `with` block."""

    def __init__(
        self, *, script: Sequence[Entry], model: str = "scripted-model", port: int = 0
    ) -> None:
        for entry in script:
            check_entry(entry)
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.overruns = 0
        self._script = list(script)
        self._next = 0
        self._port = port
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ScriptedServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        """Bind and serve in a background thread."""
        server = _HTTPServer(("127.0.0.1", self._port), _Handler)
        server.scripted = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.05,), name="scripted-server", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, wake delayed answers, close the socket."""
        self._closing.set()
        if self._server is not None:
            try:
                self._server.shutdown()
            finally:
                self._server.server_close()
                if self._thread is not None:
                    self._thread.join()
            self._server = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the scripted server is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def unused(self) -> list[Entry]:
        """Script entries no request has consumed yet."""
        with self._lock:
            return self._script[self._next :]

    def assert_all_used(self) -> None:
        """Fail unless every entry was consumed and no request ran past the end."""
        unused = self.unused()
        if unused or self.overruns:
            raise AssertionError(
                f"scripted server: {len(unused)} entries unused, {self.overruns} requests past "
                f"the end of the script; unused: {unused!r}"
            )

    def _answer(
        self, body: dict[str, Any], headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str], float]:
        with self._lock:
            number = len(self.requests) + 1
            self.requests.append(body)
            self.headers.append(headers)
            if self._next >= len(self._script):
                self.overruns += 1
                entry: Entry | None = None
            else:
                entry = self._script[self._next]
                self._next += 1
        if entry is None:
            message = f"scripted server: script exhausted ({len(self._script)} entries)"
            return 500, _error_body(message, "script_exhausted"), {}, 0.0
        if callable(entry):
            entry = entry(body)
            check_entry(entry)
        if entry.get("delay"):
            self._closing.wait(float(entry["delay"]))
        extra_headers = {str(k): str(v) for k, v in (entry.get("headers") or {}).items()}
        trickle = float(entry.get("trickle") or 0.0)
        if "status" in entry:
            payload = entry.get("body") or _error_body(
                str(entry.get("message", "scripted error")), "scripted_error"
            )
            return int(entry["status"]), payload, extra_headers, trickle
        return 200, _completion(entry, body, number, self.model), extra_headers, trickle


def _completion(
    entry: dict[str, Any], request: dict[str, Any], number: int, model: str
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": entry.get("content")}
    calls = []
    for index, call in enumerate(entry.get("tool_calls") or ()):
        arguments = call.get("arguments", {})
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        call_id = call.get("id") or f"call_{number}_{index}"
        function = {"name": call["name"], "arguments": raw}
        calls.append({"id": call_id, "type": "function", "function": function})
    if calls:
        message["tool_calls"] = calls
    elif message["content"] is None:
        message["content"] = ""
    produced = len(json.dumps(message))
    usage = entry.get("usage") or {
        "prompt_tokens": len(json.dumps(request.get("messages", []))) // 4,
        "completion_tokens": produced // 4 + 1,
    }
    usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
    choice = {
        "index": 0,
        "message": message,
        "finish_reason": entry.get("finish_reason") or ("tool_calls" if calls else "stop"),
        "logprobs": entry.get("logprobs"),
    }
    return {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": str(request.get("model") or model),
        "choices": [choice],
        "usage": usage,
    }


def _write_atomically(path: Path, data: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(data)
    os.replace(partial, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a JSON script file until SIGTERM/SIGINT; optionally write what was received."""
    parser = argparse.ArgumentParser(prog="python -m worker.llm.scripted_server")
    parser.add_argument("--script", type=Path, required=True, help="JSON list of entries")
    parser.add_argument("--port-file", type=Path, required=True, help="where to write the port")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument(
        "--report-file", type=Path, help="on exit, write requests, unused entries and overruns"
    )
    args = parser.parse_args(argv)
    loaded = json.loads(args.script.read_text())
    script = loaded["script"] if isinstance(loaded, dict) else loaded
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with ScriptedServer(script=script, model=args.model, port=args.port) as server:
        _write_atomically(args.port_file, str(server.port))
        try:
            while not stop.wait(0.2):
                pass
        finally:
            if args.report_file:
                report = {
                    "requests": server.requests,
                    "unused": server.unused(),
                    "overruns": server.overruns,
                }
                _write_atomically(args.report_file, json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
