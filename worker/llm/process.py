"""The model client in a process of its own, so that the openai SDK loads on another core.

`import openai` costs about 1.4 s of CPU, all of it under the GIL: in a thread of the run's own
process it competed with our imports and the sandbox's start for the one interpreter, and the
first model call waited for it. In a child process it loads in parallel with everything the run
does before its first model call. The child (worker/llm/serve.py) holds an `OpenAIModel`; this
side speaks to it with one JSON line per request and answer, and raises the same errors the
client raises. The API key stays in the worker's processes: the child inherits the worker's
environment, never the sandbox's.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any

from worker.errors import ModelUnavailable
from worker.llm.types import (
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
    ToolSpec,
)

ANSWER_GRACE_S = 10.0  # beyond a call's own time limit, before the child is taken for hung
STDERR_KEPT = 4000  # characters of the child's stderr kept for an error message
_ERRORS: dict[str, type[ModelUnavailable]] = {
    cls.__name__: cls
    for cls in (
        ModelUnavailable,
        ModelRefused,
        ModelAuthError,
        ModelBadRequest,
        ContextTooLong,
        CallOutOfTime,
    )
}
_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the `worker` package
_EOF = object()


class ModelProcess:
    """`ModelProcess()` starts the child at once; `connect(**options)` builds its client (the
    keyword arguments of `OpenAIModel`); `complete` is `OpenAIModel.complete`. Use it as a
    context manager, or call `close()`: the child is killed and reaped on every path, and it
    ends by itself if this process dies (its stdin closes)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "worker.llm.serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            encoding="utf-8",
        )
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._answers: queue.Queue[Any] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque()
        self._mode = "native"
        self._pending = 0  # requests sent whose answers are not read yet
        self._dead: str | None = None
        self._drain(self._proc.stdout, self._answers.put, "model client answers")
        self._drain(self._proc.stderr, self._keep_stderr, "model client stderr")

    def __enter__(self) -> ModelProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def mode(self) -> str:
        """The wire mode the next call will use (as the child last said)."""
        return self._mode

    def connect(self, **options: Any) -> None:
        """Build the child's `OpenAIModel(**options)` (a `retries` policy goes as a plain dict).
        The answer is read with the next call's, so connecting early costs nothing while the SDK
        still loads."""
        mode = options.get("tool_mode", "auto")
        self._mode = "native" if mode == "auto" else mode
        if isinstance(options.get("retries"), Retries):
            options["retries"] = asdict(options["retries"])
        self._send({"op": "connect", "options": options})

    def complete(
        self, messages: Messages, tools: Sequence[ToolSpec], settings: CallSettings = PLAIN
    ) -> ModelReply:
        """One model call in the child; its errors are raised here as the client raised them."""
        self._send(
            {
                "op": "complete",
                "messages": list(messages),
                "tools": [asdict(tool) for tool in tools],
                "settings": settings.to_dict(),
            }
        )
        limit = settings.timeout_s
        wait = None if limit is None else limit + ANSWER_GRACE_S
        answer: dict[str, Any] = {}
        while self._pending:
            answer = self._answer(wait)
            self._pending -= 1
            if not answer["ok"]:
                self._pending = 0  # a failed connect: nothing after it is answered usefully
                raise self._error(answer["error"])
        return ModelReply.from_dict(answer["reply"])

    def close(self) -> None:
        """Kill the child and reap it: it holds nothing that needs a clean exit."""
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    # -- the pipe ------------------------------------------------------------------------------

    def _send(self, request: dict[str, Any]) -> None:
        if self._dead is not None:
            raise ModelUnavailable(self._dead)
        stdin = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request) + "\n")
            stdin.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise self._died() from exc
        self._pending += 1

    def _answer(self, wait: float | None) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=wait)
        except queue.Empty:
            self._dead = f"the model client process gave no answer within {wait:.0f}s"
            self.close()
            raise CallOutOfTime(self._dead) from None
        if line is _EOF:
            raise self._died()
        answer: dict[str, Any] = json.loads(line)
        if answer.get("mode"):
            self._mode = answer["mode"]
        return answer

    def _died(self) -> ModelUnavailable:
        try:
            code = self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.close()
            code = self._proc.returncode
        said = "".join(self._stderr).strip().splitlines()
        self._dead = f"the model client process ended (exit code {code})" + (
            f": {said[-1]}" if said else ""
        )
        return ModelUnavailable(self._dead)

    def _error(self, error: dict[str, Any]) -> Exception:
        kind, message = error["kind"], error["message"]
        if kind == "ValueError":
            return ValueError(message)
        cls = _ERRORS.get(kind)
        if cls is None:
            return RuntimeError(f"the model client process failed:\n{message}")
        if issubclass(cls, ModelRefused):
            return cls(message, status_code=error.get("status_code"))
        return cls(message)

    def _keep_stderr(self, line: str) -> None:
        if line is not _EOF:
            self._stderr.append(line)
            while sum(map(len, self._stderr)) > STDERR_KEPT and len(self._stderr) > 1:
                self._stderr.popleft()

    @staticmethod
    def _drain(stream: IO[str], put: Any, name: str) -> None:
        def read() -> None:
            try:
                for line in stream:
                    put(line)
            except (OSError, ValueError):
                pass  # closed by close()
            put(_EOF)

        threading.Thread(target=read, name=name, daemon=True).start()
