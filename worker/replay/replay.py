"""One recorded run again: its model replies served in order by the scripted server (no model,
no tokens), the same command line on a fresh sandbox of the same tree, then compared
(worker/replay/compare.py). A run of the bundled model is replayed as one too: the scripted
server stands in for llama-server (worker/replay/llama_stand_in.py), and serves each answer's
text with the log-probabilities its second choices came from (trace version 2)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.errors import UsageError
from worker.llm.bundled import pulled_model
from worker.llm.scripted_server import ScriptedServer
from worker.loop.trace import TRACE_VERSION
from worker.record.folder import RunFolder, TraceRead
from worker.record.header import replay_flags, tree_hash
from worker.record.report import RunReport
from worker.replay.compare import Difference, first_difference
from worker.replay.llama_stand_in import launcher, served, signal_past_the_end

REPLAY_KEY = "sk-replay-no-model"  # the scripted server takes any key; the client needs one
EXTRA_S = 120.0  # beyond the recorded run's own time, before a replay is given up


@dataclass(frozen=True, kw_only=True)
class ReplayResult:
    """How a replay went: None when it matched the recording."""

    difference: Difference | None
    out: Path
    note: str = ""
    cut_off: bool = False  # the recording was stopped by a signal: compared up to there


def script_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scripted server's entries: each recorded reply as the endpoint sent it (the text its
    tool calls were parsed from, in json_schema and text modes), with its usage and the
    log-probabilities the client read second choices from."""
    script = []
    for event in events:
        if event.get("type") != "model_call":
            continue
        entry: dict[str, Any] = {
            "content": event["answer"] if "answer" in event else event.get("content"),
            "usage": {
                "prompt_tokens": int(event.get("prompt_tokens") or 0),
                "completion_tokens": int(event.get("completion_tokens") or 0),
            },
        }
        if event.get("mode") in ("native", None) and event.get("tool_calls"):
            entry["tool_calls"] = [
                {"id": c.get("id"), "name": c["function"]["name"],
                 "arguments": c["function"]["arguments"]}
                for c in event["tool_calls"]
            ]  # fmt: skip
        if event.get("finish_reason"):
            entry["finish_reason"] = event["finish_reason"]
        if event.get("logprobs"):
            entry["logprobs"] = {
                "content": [
                    {"token": token, "logprob": 0.0,
                     "top_logprobs": [{"token": o, "logprob": p} for o, p in others]}
                    for token, others in event["logprobs"]
                ]
            }  # fmt: skip
        script.append(entry)
    return script


def replay(run_dir: Path, *, repo: Path | None, out: Path) -> ReplayResult:
    """Replay the run recorded in `run_dir` into `out`; the first difference, if any."""
    recorded = RunFolder(run_dir)
    trace = recorded.read_trace() or TraceRead(events=[])
    report = recorded.read_report()
    header = trace.header
    version = trace.first("trace")
    if header is None or version is None or version.get("version") not in (1, TRACE_VERSION):
        raise UsageError(
            f"{run_dir}/trace.jsonl has no trace version {TRACE_VERSION} header: recorded by an "
            "older worker, or not a fix or ci run; it cannot be replayed"
        )
    if header.local and version.get("version") == 1:
        raise UsageError(
            "this run of the bundled model was recorded by trace version 1, which kept neither "
            "the answers' text nor the log-probabilities its second choices came from; it "
            "cannot be replayed"
        )
    if header.local and pulled_model() is None:
        raise UsageError(
            "replaying a run of the bundled model needs its weights pulled (`worker model pull`):"
            " the replayed run checks them, though the scripted server answers in its place"
        )
    if repo is None and header.repo is None:
        raise UsageError(f"{run_dir}/trace.jsonl names no repository: pass --repo")
    tree = (repo or Path(str(header.repo))).expanduser().resolve()
    if not tree.is_dir():
        raise UsageError(f"repository not found: {tree} (pass --repo)")
    now, _files = tree_hash(tree, exclude=run_dir)
    note = ""
    if now != header.tree:
        if repo is None:
            return ReplayResult(
                out=out,
                difference=Difference(
                    where="the tree",
                    said=f"{tree} is not the recorded tree (sha256 {header.tree}, now "
                    f"{now}); pass --repo to replay on it anyway and see what changes",
                ),
            )
        note = f"the tree differs from the recorded one (sha256 {header.tree}, now {now})"
    argv = list(header.argv) or ["fix"]
    verb = argv[0] if argv and argv[0] in ("fix", "ci") else "fix"
    durations = (report.durations if report else None) or {}
    limit = EXTRA_S + float(durations.get("total") or 600)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "WORKER_MODEL")}
    env["OPENAI_API_KEY"] = REPLAY_KEY
    command = [sys.executable, "-m", "worker.cli", verb, "--repo", str(tree), "--out", str(out),
               "--model", str(header.model), "--quiet", *replay_flags(argv)]  # fmt: skip
    script = script_of(trace.events)
    end_with = ending_signal(report)
    child = _Child()
    with contextlib.ExitStack() as stack:
        if header.local:
            # The bundled model's run as it was, its engine the scripted server.
            stand_in = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="replay-")))
            engine, stand_in_report = launcher(stand_in, script=script, end_with=end_with)
            env["WORKER_LLAMA_SERVER"] = str(engine)
            ended = child.run(command, env, limit)
            unused, overruns = served(stand_in_report)
        else:
            server = stack.enter_context(ScriptedServer(script=script, model=str(header.model)))
            stop = threading.Event()
            stack.callback(stop.set)
            if end_with is not None:
                signal_past_the_end(server, pid=child.pid, signum=end_with, stop=stop)
            ended = child.run([*command, "--base-url", server.base_url], env, limit)
            unused, overruns = len(server.unused()), server.overruns
    replayed = RunFolder(out)
    difference = first_difference(
        trace.events, (replayed.read_trace() or TraceRead(events=[])).events,
        report, replayed.read_report(), cut_off=end_with is not None,
    )  # fmt: skip
    if difference is None and ended:
        difference = Difference(where="the replayed run", said=ended)
    if end_with is not None:
        overruns = 0  # the request past the end is where the recording was stopped
        note = "; ".join(
            n for n in (note, f"the recording was stopped by a signal ({_said(report)})")
            if n
        )  # fmt: skip
    if difference is None and (unused or overruns):
        difference = Difference(
            where="the model calls",
            said=f"{unused} recorded replies left unused, {overruns} asked for past the end",
        )
    return ReplayResult(difference=difference, out=out, note=note, cut_off=end_with is not None)


def ending_signal(report: RunReport | None) -> int | None:
    """The signal that stopped the recorded run (`worker fix` reports "received signal N" or
    SIGINT; a run killed outright wrote no report: SIGTERM stands in), or None."""
    if report is None:
        return signal.SIGTERM
    if report.status != "interrupted":
        return None
    found = re.search(r"received signal (\d+)", str(report.reason or ""))
    return int(found.group(1)) if found else signal.SIGINT


def _said(report: RunReport | None) -> str:
    return str((report.reason if report else None) or "killed: it wrote no report")


class _Child:
    """The replayed command's process: its pid while it runs (for the ending signal)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None

    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def run(self, command: list[str], env: dict[str, str], limit: float) -> str:
        """Run it to its end; "" when it ended by itself, else how it was stopped."""
        with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) as proc:  # fmt: skip
            self._proc = proc
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGTERM)  # it reports, and removes its sandbox
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    proc.kill()
                return f"it did not end within {limit:.0f}s (the recorded run's and {EXTRA_S:.0f}s)"
        return ""
