"""`python -m worker.llm.serve`: the model client's own process (see worker/llm/process.py).

It imports the openai SDK first thing, then answers one JSON request per line on stdin with one
JSON line on the stdout it started with: `connect` builds the client, `complete` makes a call.
Anything else that writes to stdout (the SDK, a warning) goes to stderr instead. It ignores
SIGINT (the parent decides when to stop) and ends when stdin closes.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from typing import Any, TextIO

from worker.errors import ModelUnavailable
from worker.llm.types import CallSettings, Retries, ToolSpec


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints cannot break the protocol
    from worker.llm.client import OpenAIModel  # the import this process exists for

    model: OpenAIModel | None = None
    for line in sys.stdin:
        request = json.loads(line)
        answer: dict[str, Any]
        try:
            if request["op"] == "connect":
                if model is not None:
                    model.close()
                options = request["options"]
                if "retries" in options:
                    options["retries"] = Retries(**options["retries"])
                model = OpenAIModel(**options)
                answer = {"ok": True}
            elif model is None:
                raise RuntimeError("complete before connect")
            else:
                reply = model.complete(
                    request["messages"],
                    [ToolSpec(**tool) for tool in request["tools"]],
                    CallSettings.from_dict(request["settings"]),
                )
                answer = {"ok": True, "reply": reply.to_dict()}
        except (ModelUnavailable, ValueError) as exc:
            answer = {"ok": False, "error": _error(exc)}
        except Exception:  # noqa: BLE001 - a bug of ours: its traceback goes to the parent
            answer = {"ok": False, "error": {"kind": "internal", "message": traceback.format_exc()}}
        answer["mode"] = model.mode if model is not None else None
        _write(answers, answer)
    if model is not None:
        model.close()


def _write(out: TextIO, answer: dict[str, Any]) -> None:
    out.write(json.dumps(answer) + "\n")
    out.flush()


def _error(exc: Exception) -> dict[str, Any]:
    return {
        "kind": type(exc).__name__,
        "message": str(exc),
        "status_code": getattr(exc, "status_code", None),
    }


if __name__ == "__main__":
    main()
