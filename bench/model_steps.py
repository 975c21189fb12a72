"""The bundled model's step time, from the runs of a `worker eval` (or any `worker fix --out`s).

For every model call in each run's trace.jsonl: seconds and prompt tokens as the loop saw them;
from the same run's llama-server.log: the prompt tokens the server really evaluated (the rest
came from its prompt cache, the prefix shared with the previous call), its prompt and generation
speeds. Prints medians, first calls and later calls apart, and the share of prompt tokens served
from the cache.

    python3 bench/model_steps.py EVAL_DIR [EVAL_DIR ...]

No model runs here: this reads what an evaluation left (docs/performance.md has the figures).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path

_PROMPT = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_GEN = re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def runs(folder: Path) -> list[Path]:
    """The run folders under `folder` (an eval's tasks/*/fix, or run folders themselves)."""
    return sorted(p.parent for p in folder.rglob("trace.jsonl"))


def calls(run: Path) -> list[dict[str, float]]:
    """One record per model call of a run: the loop's figures, and the server's when its log
    holds as many timings as the trace holds calls."""
    trace = [json.loads(line) for line in (run / "trace.jsonl").read_text().splitlines() if line]
    made = [e for e in trace if e.get("type") == "model_call"]
    log = run / "llama-server.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    prompts = [(float(ms), int(n)) for ms, n in _PROMPT.findall(text)]
    gens = [
        (float(ms), int(n))
        for line in text.splitlines()
        if "prompt eval" not in line
        for ms, n in _GEN.findall(line)
    ]
    server = len(prompts) == len(made) == len(gens)
    out = []
    for i, event in enumerate(made):
        record = {
            "first": float(i == 0),
            "seconds": float(event["duration_s"]),
            "prompt_tokens": float(event["prompt_tokens"]),
            "completion_tokens": float(event["completion_tokens"]),
        }
        if server:
            (p_ms, p_n), (g_ms, g_n) = prompts[i], gens[i]
            record |= {
                "evaluated": float(p_n),
                "prompt_tps": p_n / (p_ms / 1000) if p_ms else 0.0,
                "gen_tps": g_n / (g_ms / 1000) if g_ms else 0.0,
            }
        out.append(record)
    return out


def median(records: list[dict[str, float]], key: str) -> str:
    values = [r[key] for r in records if key in r]
    return f"{statistics.median(values):8.1f}" if values else "       -"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    print(
        f"{'folder':<28} {'calls':>5} {'which':<6} {'s/call':>8} {'prompt':>8} "
        f"{'evaluated':>9} {'prompt t/s':>10} {'gen t/s':>8} {'cached':>7}"
    )
    for folder in args.folders:
        every = [c for run in runs(folder) for c in calls(run)]
        for which, chosen in (
            ("first", [c for c in every if c["first"]]),
            ("later", [c for c in every if not c["first"]]),
        ):
            known = [c for c in chosen if "evaluated" in c]
            total = sum(c["prompt_tokens"] for c in known)
            cached = 1 - sum(c["evaluated"] for c in known) / total if total else 0.0
            print(
                f"{str(folder)[-28:]:<28} {len(chosen):>5} {which:<6} {median(chosen, 'seconds')} "
                f"{median(chosen, 'prompt_tokens')} {median(chosen, 'evaluated'):>9} "
                f"{median(chosen, 'prompt_tps'):>10} {median(chosen, 'gen_tps')} "
                f"{cached:>7.0%}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
