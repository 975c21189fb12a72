"""The run's trace: one JSON object per line, flushed as it goes, so no ending loses it.

Its first line is `{"type": "trace", "version": TRACE_VERSION}`; the shape of each event is
worker/schemas/trace.schema.json. `worker show` draws a page from it, `worker replay` runs it
again (the model's replies as recorded, the tools for real).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from policies.secrets import NO_SECRETS, Secrets
from worker.llm.types import ModelReply

# 1: the header line; the `run` event (tree hash, command line, settings); `sample` and `second`
# on the model_call and tool_call events of sampled first edits and their second choices.
# 2: on model_call, `answer` (the text a json_schema or text-mode reply's tool calls were parsed
# from) and `logprobs` (the tokens and runner-ups its second choices came from): a run of the
# bundled model replays.
TRACE_VERSION = 2


class Trace:
    """Append-only JSONL writer (`with Trace(path=p) as trace: trace.event("tool_call", ...)`);
    every string of every event has `secrets` masked."""

    def __init__(self, *, path: Path | None, secrets: Secrets = NO_SECRETS) -> None:
        self.path = path
        self._secrets = secrets
        self._file: IO[str] | None = None
        self._start = time.monotonic()

    def __enter__(self) -> Trace:
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # backslashreplace: a file name that is not UTF-8 is logged as its escapes.
            self._file = open(  # noqa: SIM115 - closed in __exit__
                self.path, "a", encoding="utf-8", errors="backslashreplace"
            )
            self.event("trace", version=TRACE_VERSION)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def event(self, kind: str, **fields: Any) -> None:
        """Record one event with its time since the run started."""
        if self._file is None:
            return
        record = {"type": kind, "t": round(time.monotonic() - self._start, 3), **fields}
        line = json.dumps(record, default=str, ensure_ascii=False)
        if self._secrets:  # on the data: a value JSON escapes differs in the line
            line = json.dumps(
                self._secrets.mask_data(json.loads(line)), default=str, ensure_ascii=False
            )
        self._file.write(line + "\n")
        self._file.flush()


def replay_fields(reply: ModelReply) -> dict[str, Any]:
    """What `worker replay` needs beyond the parsed reply: the answer's text when the tool calls
    were parsed out of it, the tokens and runner-ups its second choices came from."""
    kept: dict[str, Any] = {}
    if reply.answer != reply.content:
        kept["answer"] = reply.answer
    if reply.logprobs:
        kept["logprobs"] = [[token, [list(o) for o in others]] for token, others in reply.logprobs]
    return kept
