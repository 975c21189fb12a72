"""`worker fix`: its flags (a public contract: keep the names), the request they make, and the
ending of the run as an exit code and a report (written on every path, Ctrl-C included)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Container, Sequence
from datetime import datetime, timezone
from pathlib import Path

from policies.budgets import validate_cost_cap
from policies.config import WorkerConfig, load_config
from sandbox.setup_choice import worker_home
from sandbox.workspace import remove_dir
from worker.cli.exit_codes import EXIT_FIXED, EXIT_NOT_FIXED, EXPECTED, exit_code_for
from worker.cli.loop_flags import add_loop_arguments
from worker.cli.out_of_space import known_error
from worker.cli.progress import ProgressPrinter
from worker.cli.setup_flags import add_setup_arguments, setup_overrides
from worker.errors import UsageError
from worker.llm import pricing
from worker.loop.trace import Trace
from worker.replay.header import run_header
from worker.run.deliver import check_branch_request
from worker.run.fix import Endpoint, FixRequest, FixRun
from worker.run.report import RunReport

LOCAL = "local"
OUTPUTS = (
    "fix.patch",
    "report.json",
    "trace.jsonl",
    "traceback.txt",
    "llama-server.log",
    "summary.md",
    "verification.junit.xml",
)


def add_fix_arguments(p: argparse.ArgumentParser, *, deliver: bool = True) -> None:
    """The flags of `worker fix` (`worker ci` shares them, without --apply and --branch)."""
    p.add_argument("--repo", type=Path, required=True, help="repository to fix (never modified)")
    p.add_argument("--goal", default="make the failing tests pass", help="what to achieve")
    p.add_argument("--model", default=None, help="model name (or WORKER_MODEL; 'local' = bundled)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible URL (or OPENAI_BASE_URL)")
    p.add_argument("--test-cmd", default=None, help="test command (detected when absent)")
    add_setup_arguments(p)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--max-cost", type=float, default=None, help="USD")
    p.add_argument("--timeout", type=float, default=None, help="wall-clock seconds for the run")
    p.add_argument("--test-timeout", type=float, default=None, help="seconds per test run")
    p.add_argument("--out", type=Path, default=None, help="where fix.patch, report.json go")
    if deliver:
        where = p.add_mutually_exclusive_group()
        where.add_argument("--apply", action="store_true", help="apply the verified patch")
        where.add_argument("--branch", default=None, help="commit the verified patch on a branch")
    else:
        p.set_defaults(apply=False, branch=None)
    p.add_argument("--image", default=None, help="sandbox image")
    p.add_argument("--policy", default=None, help="preset: default, strict or ci")
    add_loop_arguments(p)
    p.add_argument("--quiet", action="store_true", help="plain progress lines")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    add_backend_argument(p)


def add_backend_argument(p: argparse.ArgumentParser) -> None:
    """--backend: docker (default) or local, which is loudly weaker and never a fall-back."""
    p.add_argument(
        "--backend",
        choices=["docker", "local"],
        default="docker",
        help="sandbox backend; local = host processes with rlimits (weaker isolation)",
    )


def run_fix(args: argparse.Namespace) -> int:
    """Run `worker fix`; returns the exit code. Every ending is reported, then re-raised."""
    started = time.monotonic()
    request = make_request(args)
    show = ProgressPrinter(quiet=args.quiet or args.json)
    report = new_report(request)
    report.durations["startup"] = _since_process_start()
    return run_reported(
        request,
        report,
        lambda trace: FixRun(
            request=request,
            report=report,
            trace=trace,
            progress=show,
            client=getattr(args, "model_process", None),
        ).run(),
        lambda: _finish(report, request.out, show, started, args),
        ordinary=(EXIT_NOT_FIXED,),
        argv=getattr(args, "argv", ()),
    )


def new_report(request: FixRequest) -> RunReport:
    """The report of a run about to start (filled as it goes)."""
    return RunReport(
        repo=str(request.repo),
        goal=request.goal,
        model=request.endpoint.model,
        endpoint=request.endpoint.base_url,
        out_dir=str(request.out),
        cost_usd=0.0 if request.price is not None else None,
    )


def run_reported(
    request: FixRequest,
    report: RunReport,
    run: Callable[[Trace], str],
    finish: Callable[[], int],
    *,
    ordinary: Container[int],
    argv: Sequence[str] = (),
) -> int:
    """Run `run` (it returns the reason of a good ending) and report every ending: the exit
    code and reason, the traceback of a bug of ours kept in the out folder, `finish` (write and
    say). An expected ending whose code is `ordinary` returns it; any other is raised again,
    for the command line to say in one line. The trace starts with what `worker replay` needs:
    the command line (`argv`), the tree's hash, the endpoint's kind."""
    try:
        with Trace(path=request.out / "trace.jsonl") as trace:
            trace.event("run", **run_header(
                argv=argv, repo=request.repo, out=request.out, model=request.endpoint.model,
                local=request.endpoint.local, backend=request.backend,
            ))  # fmt: skip
            reason = run(trace)
        report.finish(EXIT_FIXED, reason)
    except BaseException as exc:  # noqa: BLE001 - every ending is reported, then re-raised
        known = known_error(exc, out=request.out)
        report.finish(exit_code_for(known), reason_of(known))
        if not isinstance(known, EXPECTED):
            # A bug of ours: one line for the user, the traceback kept for the bug report.
            keep = request.out / "traceback.txt"
            keep.write_text(traceback.format_exc(), encoding="utf-8")
            report.reason = f"internal error: {report.reason} (traceback in {keep})"
        _finish_or_say(finish, request.out)
        if report.exit_code in ordinary and isinstance(known, EXPECTED):
            return report.exit_code  # an ordinary ending (budget, stuck...): said above
        if known is not exc:
            raise known from exc
        raise
    return _finish_or_say(finish, request.out)


def make_request(args: argparse.Namespace) -> FixRequest:
    """Flags and configuration, checked: every usage error is raised before anything starts."""
    repo = args.repo.expanduser().resolve()
    if not repo.is_dir():
        raise UsageError(f"repository not found: {args.repo}")
    if args.branch:
        check_branch_request(repo, args.branch)
    config = load_config(
        repo,
        preset=args.policy,
        overrides={
            "test_cmd": args.test_cmd,
            **setup_overrides(args),
            "image": args.image,
            "max_steps": args.max_steps,
            "max_tokens": args.max_tokens,
            "max_cost_usd": args.max_cost,
            "max_wall_s": args.timeout,
            "tool_mode": args.tool_mode,
            "edit_tools": args.edit_tools,
            "first_edit": args.first_edit,
            "undo_worse_edits": args.undo_worse_edits,
            "edit_samples": args.edit_samples,
            "verify_ahead": args.verify_ahead,
            "locate": args.locate,
            "converse": args.converse,
            "second_choices": args.second_choices,
        },
    )
    endpoint = choose_endpoint(args, config)
    price = pricing.price_for(endpoint.model, config.prices)
    validate_cost_cap(config.budgets, price is not None, model=endpoint.model)
    out = args.out.expanduser().resolve() if args.out else default_out_dir(repo)
    _clear_outputs(out)
    return FixRequest(
        repo=repo,
        goal=args.goal,
        out=out,
        config=config,
        endpoint=endpoint,
        price=price,
        backend=args.backend,
        test_timeout_s=args.test_timeout or config.limits.command_timeout_s,
        apply=args.apply,
        branch=args.branch,
    )


def choose_endpoint(args: argparse.Namespace, config: WorkerConfig) -> Endpoint:
    """Flags, then config, then the openai SDK's variables; no endpoint at all means local."""
    model = args.model or config.model or os.environ.get("WORKER_MODEL")
    base_url = args.base_url or config.base_url or os.environ.get("OPENAI_BASE_URL")
    if model == LOCAL or (base_url is None and not os.environ.get("OPENAI_API_KEY")):
        return Endpoint(model=LOCAL, base_url=None, local=True)
    if not model:
        raise UsageError(
            "no model named: pass --model NAME or set WORKER_MODEL "
            "(or --model local for the bundled model)"
        )
    return Endpoint(model=model, base_url=base_url, local=False)


def default_out_dir(repo: Path) -> Path:
    base = worker_home() / "runs"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return base / f"{repo.name}-{stamp}-{os.getpid()}"


def _clear_outputs(out: Path) -> None:
    """An --out folder used before: our own outputs go, so none of them is stale."""
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        (out / name).unlink(missing_ok=True)
    remove_dir(out / "run")
    remove_dir(out / "triage")


def _since_process_start() -> float:
    """Seconds from this process's start to now (the interpreter, our imports, the flags), from
    the kernel's clock-tick counts since boot (10 ms steps); 0.0 where /proc cannot tell."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/uptime", encoding="ascii") as uptime:
            now = float(uptime.read().split()[0])
        return round(max(0.0, now - ticks / os.sysconf("SC_CLK_TCK")), 3)
    except (OSError, ValueError, IndexError):
        return 0.0


def reason_of(exc: BaseException) -> str:
    """How a run ended, in one line, from the error that ended it."""
    if isinstance(exc, KeyboardInterrupt) and not str(exc):
        return "interrupted (SIGINT)"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _finish_or_say(finish: Callable[[], int], out: Path) -> int:
    """`finish`; where the disk under --out is full, an error that says so (no report then)."""
    try:
        return finish()
    except OSError as exc:
        known = known_error(exc, out=out)
        if known is exc:
            raise
        raise known from exc


def _finish(
    report: RunReport, out: Path, show: ProgressPrinter, started: float, args: argparse.Namespace
) -> int:
    report.durations["total"] = round(time.monotonic() - started, 3)
    report.write(out / "report.json")
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        fixed = "FIXED (verified)" if report.patch else "NOTHING TO FIX"
        verdict = {0: fixed, 1: "NOT FIXED"}.get(report.exit_code, report.status.upper())
        show.say(f"{verdict}: {report.reason}")
        if report.patch:
            show.say(f"patch: {report.patch}")
        show.say(f"report: {out / 'report.json'}")
    sys.stdout.flush()
    return report.exit_code
