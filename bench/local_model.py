"""Measure the bundled local model on this machine: pull, server start, tokens/s, peak memory.

Run: python bench/local_model.py [--json]. Figures go to docs/local-model.md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import openai
import psutil
from openai.types.shared_params import ResponseFormatJSONSchema

from worker.llm.bundled import LocalServer, pull

SYSTEM = (
    "You fix failing tests. Reply with one JSON object: a tool call or final_answer. "
    "Tools: read_file(path), write_file(path, content), run_tests(test)."
)
FAILING = """\
The test fails:

tests/test_stats.py::test_median_even FAILED
    def test_median_even():
>       assert median([4, 1, 3, 2]) == 2.5
E       assert 3 == 2.5
E        +  where 3 = median([4, 1, 3, 2])

stats.py:
def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    ordered = sorted(xs)
    middle = len(ordered) // 2
    return ordered[middle]


def mode(xs):
    counts = {}
    for x in xs:
        counts[x] = counts.get(x, 0) + 1
    return max(counts, key=counts.get)
"""

SCHEMA: dict[str, object] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "tool": {"const": name},
                "arguments": {
                    "type": "object",
                    "properties": {k: {"type": "string"} for k in keys},
                    "required": list(keys),
                    "additionalProperties": False,
                },
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for name, keys in (
            ("read_file", ("path",)),
            ("write_file", ("path", "content")),
            ("run_tests", ("test",)),
            ("final_answer", ("summary",)),
        )
    ]
}


RESPONSE_FORMAT: ResponseFormatJSONSchema = {
    "type": "json_schema",
    "json_schema": {"name": "step", "schema": SCHEMA},
}


@dataclass(frozen=True)
class RequestFigures:
    """One chat request as llama-server's `timings` field reports it."""

    name: str
    seconds: float
    prompt_tokens: int
    cached_tokens: int
    prompt_tokens_per_s: float
    generated_tokens: int
    generation_tokens_per_s: float
    answer: str


class PeakRss:
    """Samples the resident memory of a process and its children until stopped."""

    def __init__(self, pid: int, every_s: float = 0.2) -> None:
        self.process = psutil.Process(pid)
        self.every_s = every_s
        self.peak_bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.process, *self.process.children(recursive=True)]
                rss = sum(p.memory_info().rss for p in procs)
            except psutil.Error:
                return
            self.peak_bytes = max(self.peak_bytes, rss)
            self._stop.wait(self.every_s)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def chat(client: openai.OpenAI, model: str, name: str, messages: list[Any]) -> RequestFigures:
    """Send one schema-constrained request and read its timings."""
    started = time.monotonic()
    reply = client.chat.completions.create(
        model=model,
        messages=messages,
        temperature=0,
        max_tokens=300,
        response_format=RESPONSE_FORMAT,
    )
    seconds = time.monotonic() - started
    timings = reply.model_dump().get("timings") or {}
    return RequestFigures(
        name=name,
        seconds=round(seconds, 2),
        prompt_tokens=int(timings.get("prompt_n", 0)),
        cached_tokens=int(timings.get("cache_n", 0)),
        prompt_tokens_per_s=round(float(timings.get("prompt_per_second", 0.0)), 1),
        generated_tokens=int(timings.get("predicted_n", 0)),
        generation_tokens_per_s=round(float(timings.get("predicted_per_second", 0.0)), 1),
        answer=reply.choices[0].message.content or "",
    )


def representative_requests(server: LocalServer) -> list[RequestFigures]:
    """A first agent step (failing test and code up front), then a turn on the same prefix."""
    client = openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": FAILING},
    ]
    first = chat(client, server.model_name, "first step", messages)
    messages += [
        {"role": "assistant", "content": first.answer},
        {"role": "user", "content": "Observation: done. Next step?"},
    ]
    second = chat(client, server.model_name, "second step (cached prefix)", messages)
    return [first, second]


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def measure_verified_fix(server: LocalServer, *, repeat: int = 1) -> list[dict[str, Any]]:
    """`worker fix` on each project in examples/ against this server, as the README demo runs
    it (json_schema tool calls): fixed or not, steps, seconds, tokens and seconds per step."""
    rows = []
    for example in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        for attempt in range(1, repeat + 1):
            with tempfile.TemporaryDirectory(prefix="bench-fix-") as out:
                started = time.monotonic()
                proc = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "worker.cli.main",
                        "fix",
                        "--repo",
                        str(example),
                        "--base-url",
                        server.base_url,
                        "--model",
                        server.model_name,
                        "--tool-mode",
                        "json_schema",
                        "--out",
                        out,
                        "--quiet",
                        "--json",
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                seconds = time.monotonic() - started
                try:
                    report = json.loads(proc.stdout)
                except json.JSONDecodeError:
                    report = {
                        "status": f"no report (exit {proc.returncode})",
                        "steps": 0,
                        "tokens_in": 0,
                        "tokens_out": 0,
                        "durations": {},
                    }
            steps = max(int(report["steps"]), 1)
            rows.append(
                {
                    "example": example.name,
                    "attempt": attempt,
                    "fixed": report["status"] == "fixed",
                    "status": report["status"],
                    "reason": report.get("reason", ""),
                    "steps": report["steps"],
                    "seconds": round(seconds, 1),
                    "model_seconds_per_step": round(
                        report["durations"].get("model", 0.0) / steps, 1
                    ),
                    "tokens_per_step": round((report["tokens_in"] + report["tokens_out"]) / steps),
                }
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Print the figures as text, or as one JSON object with --json."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeat", type=int, default=1, help="runs of worker fix per example")
    parser.add_argument("--no-fix", action="store_true", help="skip the worker fix runs")
    args = parser.parse_args(argv)

    started = time.monotonic()
    model = pull(progress=lambda m: print(f"  pull: {m}", file=sys.stderr))
    pull_s = time.monotonic() - started
    server = LocalServer(model_path=model, threads=args.threads)
    with server:
        assert server.pid is not None
        with PeakRss(server.pid) as rss:
            requests = representative_requests(server)
            fix = [] if args.no_fix else measure_verified_fix(server, repeat=args.repeat)
    report = {
        "pull_seconds": round(pull_s, 1),
        "server_ready_seconds": round(server.startup_s or 0.0, 2),
        "threads": server.threads,
        "requests": [asdict(r) for r in requests],
        "peak_rss_mb": round(rss.peak_bytes / 2**20),
        "verified_fix": fix,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"pull (cached: no-op)     {report['pull_seconds']} s")
    print(f"server ready             {report['server_ready_seconds']} s ({server.threads} threads)")
    for r in requests:
        print(
            f"{r.name:<28} {r.seconds} s; prompt {r.prompt_tokens} tok "
            f"(+{r.cached_tokens} cached) at {r.prompt_tokens_per_s} tok/s; "
            f"generated {r.generated_tokens} tok at {r.generation_tokens_per_s} tok/s"
        )
        print(f"    answer: {r.answer[:160]}")
    print(f"peak server RSS          {report['peak_rss_mb']} MiB")
    for row in fix:
        why = "" if row["fixed"] else f": {row['reason']}"
        print(
            f"worker fix {row['example']:<10} #{row['attempt']}: "
            f"{'FIXED' if row['fixed'] else 'not fixed'} in {row['steps']} steps, "
            f"{row['seconds']} s ({row['model_seconds_per_step']} s and "
            f"{row['tokens_per_step']} tokens per step){why}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
