"""`worker eval TASKS --out DIR`: run a task set, each task a `worker fix` run, each patch
re-checked on a clean copy; the resolve rate and its costs in results.json and results.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sandbox.container.client import connect
from worker.cli.exit_codes import EXIT_FIXED, EXIT_NOT_FIXED
from worker.cli.loop_flags import (
    BUDGET_FLAGS,
    LOOP_FLAGS,
    add_budget_arguments,
    add_loop_arguments,
)
from worker.errors import UsageError
from worker.evaluate.batch import EvalBatch
from worker.evaluate.books import Books, EvalBudget, EvalSettings, FixSettings
from worker.evaluate.cluster import ClusterEval, ClusterSettings, import_ray
from worker.evaluate.results import write_results
from worker.evaluate.tasks import load_tasks

#: Flags handed to every `worker fix` run as they are.
FIX_FLAGS: tuple[str, ...] = (
    "--model",
    "--base-url",
    *BUDGET_FLAGS,
    "--image",
    "--policy",
    *LOOP_FLAGS,
)


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("tasks", type=Path, help="JSONL task file (docs/evaluation.md)")
    p.add_argument("--out", type=Path, required=True, help="results, per-task outputs, clones")
    p.add_argument("--workers", type=int, default=1, help="tasks run at once (default 1)")
    p.add_argument("--redo", action="store_true", help="run tasks again that are done")
    p.add_argument("--model", default=None, help="model name ('local' = bundled), as for fix")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible URL, as for fix")
    add_budget_arguments(p, per_task=True)
    p.add_argument("--image", default=None, help="sandbox image")
    p.add_argument("--policy", default=None, help="preset: default, strict or ci")
    add_loop_arguments(p)
    p.add_argument("--max-total-tokens", type=int, default=None, help="for the whole eval")
    p.add_argument("--max-total-cost", type=float, default=None, help="for the whole eval, USD")
    p.add_argument("--max-total-time", type=float, default=None, help="seconds, whole eval")
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        default=None,
        help="run on a Ray cluster: auto, ray://host:port or host:port (docs/scale.md)",
    )
    p.add_argument(
        "--ray-retries", type=int, default=2, help="with --ray: retries of a task a node failed"
    )
    p.add_argument(
        "--max-in-flight",
        type=int,
        default=None,
        help="with --ray: tasks at once (default: the CPUs of the nodes that passed)",
    )


def run_eval(args: argparse.Namespace) -> int:
    """Run the eval; 0 when every task ran, 1 when a budget or a failed task left some undone."""
    tasks = load_tasks(args.tasks.expanduser().resolve())
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    for name in ("max_total_tokens", "max_total_cost", "max_total_time"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive")
    if args.ray is not None:
        import_ray()  # not installed: one line, exit 2
        if args.ray_retries < 0 or (args.max_in_flight is not None and args.max_in_flight < 1):
            raise UsageError("--ray-retries must be 0 or more, --max-in-flight at least 1")
    else:
        connect().close()  # no Docker: exit 3 now, not once per task
    out = args.out.expanduser().resolve()
    out.mkdir(parents=True, exist_ok=True)
    settings = EvalSettings(
        out=out,
        workers=args.workers,
        redo=args.redo,
        fix=FixSettings(flags=tuple(_fix_flags(args)), timeout_s=args.timeout, model=args.model),
        budget=EvalBudget(
            max_tokens=args.max_total_tokens,
            max_cost_usd=args.max_total_cost,
            max_seconds=args.max_total_time,
        ),
    )
    books = Books(tasks=tasks, settings=settings, say=_say)  # it writes the results as they come
    batch: EvalBatch | ClusterEval
    if args.ray is not None:
        cluster = ClusterSettings(
            address=args.ray,
            retries=args.ray_retries,
            max_in_flight=args.max_in_flight,
            image=args.image,
        )
        batch = ClusterEval(tasks=tasks, books=books, cluster=cluster)
    else:
        batch = EvalBatch(books=books)
    try:
        result = batch.run()
    except KeyboardInterrupt:
        write_results(out, tasks, batch.result)  # what finished stays on record
        raise
    summary = write_results(out, tasks, result)
    rate = summary["resolve_rate"]
    _say(
        f"resolved {summary['resolved']} of {summary['ran']} tasks run"
        + (f" ({rate:.0%})" if rate is not None else "")
        + f"; {summary['not_run']} not run; median {summary['median_tokens_in']} prompt tokens, "
        f"{summary['median_seconds']} s per task"
    )
    _say(f"results: {out / 'results.md'}")
    complete = summary["not_run"] == 0 and "eval_error" not in summary["statuses"]
    return EXIT_FIXED if complete else EXIT_NOT_FIXED


def _fix_flags(args: argparse.Namespace) -> list[str]:
    flags: list[str] = []
    for flag in FIX_FLAGS:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if isinstance(value, bool):  # an on/off flag: --name or --no-name
            flags.append(flag if value else f"--no-{flag[2:]}")
        elif value is not None:
            flags += [flag, str(value)]
    return flags


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
