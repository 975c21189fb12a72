"""The eval's outputs: results.json and results.md (the figures), preds.json (SWE-bench shape)."""

from __future__ import annotations

import json
import os
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worker.evaluate.outcome import BatchResult, TaskOutcome
from worker.evaluate.tasks import EvalTask


def summarize(tasks: Sequence[EvalTask], result: BatchResult) -> dict[str, Any]:
    """The figures over the tasks that ran (done before or now); tasks not run are counted."""
    ran = [o for t in tasks if (o := result.outcomes.get(t.id)) is not None]
    resolved = sum(1 for o in ran if o.resolved)
    costs = [o.cost_usd for o in ran if o.cost_usd is not None]
    return {
        "tasks": len(tasks),
        "ran": len(ran),
        "not_run": len(tasks) - len(ran),
        "resolved": resolved,
        "resolve_rate": round(resolved / len(ran), 4) if ran else None,
        "resolve_rate_of_all": round(resolved / len(tasks), 4) if tasks else None,
        "statuses": dict(sorted(Counter(o.status for o in ran).items())),
        "median_steps": _median([o.steps for o in ran]),
        "median_tokens_in": _median([o.tokens_in for o in ran]),
        "median_tokens_out": _median([o.tokens_out for o in ran]),
        "median_seconds": _median([o.seconds for o in ran]),
        "total_tokens": sum(o.tokens for o in ran),
        "total_cost_usd": round(sum(costs), 6) if costs else None,
        "stopped": result.stopped,
    }


def write_results(out: Path, tasks: Sequence[EvalTask], result: BatchResult) -> dict[str, Any]:
    """Write results.json, results.md and preds.json into `out`; returns the summary."""
    summary = summarize(tasks, result)
    rows = [_row(t, result.outcomes.get(t.id)) for t in tasks]
    _write(out / "results.json", json.dumps({"summary": summary, "tasks": rows}, indent=2) + "\n")
    _write(out / "results.md", _markdown(summary, rows, result.notes))
    preds = [
        {
            "instance_id": o.id,
            "model_name_or_path": o.model or "unknown",
            "model_patch": o.patch,
        }
        for t in tasks
        if (o := result.outcomes.get(t.id)) is not None
    ]
    _write(out / "preds.json", json.dumps(preds, indent=2) + "\n")
    return summary


def _row(task: EvalTask, outcome: TaskOutcome | None) -> dict[str, Any]:
    if outcome is None:
        return {"id": task.id, "status": "not_run", "resolved": False}
    data = outcome.to_dict()
    data.pop("patch")
    data["patch_lines"] = len(outcome.patch.splitlines())
    return data


def _markdown(summary: dict[str, Any], rows: list[dict[str, Any]], notes: list[str]) -> str:
    rate = summary["resolve_rate"]
    lines = [
        "# Eval results",
        "",
        f"**Resolved {summary['resolved']} of {summary['ran']} tasks run**"
        + (f" ({rate:.0%})" if rate is not None else "")
        + f"; {summary['not_run']} not run of {summary['tasks']}.",
        "",
        f"- statuses of the fix runs: {_statuses(summary['statuses'])}",
        f"- medians per task: {summary['median_steps']} steps, "
        f"{summary['median_tokens_in']} prompt tokens, {summary['median_tokens_out']} completion "
        f"tokens, {summary['median_seconds']} s",
        f"- total: {summary['total_tokens']} tokens"
        + (f", ${summary['total_cost_usd']}" if summary["total_cost_usd"] is not None else ""),
    ]
    if summary["stopped"]:
        lines.append(f"- stopped early: {summary['stopped']}")
    lines += [f"- {note}" for note in notes]
    lines += [
        "",
        "| task | resolved | fix status | steps | tokens in | tokens out | cost | seconds | why |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in rows:
        if row["status"] == "not_run":
            lines.append(f"| {row['id']} | – | not run | | | | | | |")
            continue
        reasons = row["recheck"].get("reasons", [])
        # Without a patch the run's own ending says why (time, stuck...); with one, the re-check.
        why = row["reason"] if reasons in ([], ["no patch"]) else "; ".join(reasons[:2])
        cost = "" if row["cost_usd"] is None else f"{row['cost_usd']:.4f}"
        lines.append(
            f"| {row['id']} | {'yes' if row['resolved'] else 'no'} | {row['status']} | "
            f"{row['steps']} | {row['tokens_in']} | {row['tokens_out']} | {cost} | "
            f"{row['seconds']:.0f} | {_cell(why)} |"
        )
    return "\n".join(lines) + "\n"


def _statuses(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "none"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:120]


def _median(values: list[float] | list[int]) -> float | None:
    return round(float(statistics.median(values)), 1) if values else None


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)
