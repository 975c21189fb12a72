"""One recorded run again: its model replies served in order by the scripted server (no model,
no tokens), the same command line on a fresh sandbox of the same tree, then compared
(worker/replay/compare.py). Runs of a hosted endpoint in native tool-call mode only: a bundled
model's run draws second choices from the answer's log-probabilities, which are not recorded."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.errors import UsageError
from worker.llm.scripted_server import ScriptedServer
from worker.loop.trace import TRACE_VERSION
from worker.replay.compare import Difference, first_difference
from worker.replay.header import replay_flags, tree_hash
from worker.show.view import load_run

REPLAY_KEY = "sk-replay-no-model"  # the scripted server takes any key; the client needs one
EXTRA_S = 120.0  # beyond the recorded run's own time, before a replay is given up


@dataclass(frozen=True, kw_only=True)
class ReplayResult:
    """How a replay went: None when it matched the recording."""

    difference: Difference | None
    out: Path
    note: str = ""


def script_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scripted server's entries: each recorded reply as it came, with its usage."""
    script = []
    for event in events:
        if event.get("type") != "model_call":
            continue
        if event.get("mode") not in ("native", None):
            raise UsageError(
                f"step {event.get('step')} was answered in {event.get('mode')} mode: replay "
                "serves native tool calls only (a hosted endpoint's run)"
            )
        calls = [
            {
                "id": c.get("id"),
                "name": c["function"]["name"],
                "arguments": c["function"]["arguments"],
            }
            for c in event.get("tool_calls") or []
        ]
        entry: dict[str, Any] = {
            "content": event.get("content"),
            "usage": {
                "prompt_tokens": int(event.get("prompt_tokens") or 0),
                "completion_tokens": int(event.get("completion_tokens") or 0),
            },
        }
        if calls:
            entry["tool_calls"] = calls
        if event.get("finish_reason"):
            entry["finish_reason"] = event["finish_reason"]
        script.append(entry)
    return script


def replay(run_dir: Path, *, repo: Path | None, out: Path) -> ReplayResult:
    """Replay the run recorded in `run_dir` into `out`; the first difference, if any."""
    recorded = load_run(run_dir)
    header = recorded.header
    version = recorded.first("trace")
    if not header or version is None or version.get("version") != TRACE_VERSION:
        raise UsageError(
            f"{run_dir}/trace.jsonl has no trace version {TRACE_VERSION} header: recorded by an "
            "older worker, or not a fix or ci run; it cannot be replayed"
        )
    if header.get("local"):
        raise UsageError(
            "a run of the bundled model cannot be replayed yet: its second choices come from "
            "the answer's log-probabilities, which the trace does not keep"
        )
    tree = (repo or Path(str(header["repo"]))).expanduser().resolve()
    if not tree.is_dir():
        raise UsageError(f"repository not found: {tree} (pass --repo)")
    now, _files = tree_hash(tree, exclude=run_dir)
    note = ""
    if now != header.get("tree"):
        if repo is None:
            return ReplayResult(
                out=out,
                difference=Difference(
                    where="the tree",
                    said=f"{tree} is not the recorded tree (sha256 {header.get('tree')}, now "
                    f"{now}); pass --repo to replay on it anyway and see what changes",
                ),
            )
        note = f"the tree differs from the recorded one (sha256 {header.get('tree')}, now {now})"
    argv = [str(word) for word in header.get("argv") or ["fix"]]
    verb = argv[0] if argv and argv[0] in ("fix", "ci") else "fix"
    flags = replay_flags(argv)
    if not any(f.split("=")[0] == "--tool-mode" for f in flags):
        flags += ["--tool-mode", "native"]
    limit = EXTRA_S + float(((recorded.report or {}).get("durations") or {}).get("total") or 600)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "WORKER_MODEL")}
    env["OPENAI_API_KEY"] = REPLAY_KEY
    with ScriptedServer(
        script=script_of(recorded.events), model=str(header.get("model"))
    ) as server:
        command = [sys.executable, "-m", "worker.cli", verb, "--repo", str(tree), "--out", str(out),
                   "--model", str(header.get("model")), "--base-url", server.base_url, "--quiet",
                   *flags]  # fmt: skip
        subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=limit, check=False)  # fmt: skip
        unused, overruns = len(server.unused()), server.overruns
    replayed = load_run(out)
    difference = first_difference(
        recorded.events, replayed.events, recorded.report, replayed.report
    )
    if difference is None and (unused or overruns):
        difference = Difference(
            where="the model calls",
            said=f"{unused} recorded replies left unused, {overruns} asked for past the end",
        )
    return ReplayResult(difference=difference, out=out, note=note)
