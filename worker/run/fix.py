"""`worker fix`: wire config, model, sandbox and loop together; always leave a report behind."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from policies.budgets import validate_cost_cap
from policies.config import WorkerConfig, load_config
from sandbox.docker_sandbox import remove_dir
from sandbox.prepare import prepare, run_pending_setup
from sandbox.session import open_session
from sandbox.testrun import TestRun, detect_test_command, run_tests
from sandbox.verdict import judge
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools
from worker.cli.progress import ProgressPrinter
from worker.errors import EXIT_FIXED, EXIT_NOT_FIXED, UsageError, WorkerError, exit_code_for
from worker.llm import pricing
from worker.llm.client import OpenAIModel
from worker.loop.agent import Agent, RunEnded
from worker.loop.grounding import implicated_files
from worker.run.deliver import apply_to_worktree, check_branch_request, commit_on_branch
from worker.run.environment import SandboxEnvironment
from worker.run.report import RunReport, tests_dict
from worker.run.trace import Trace

LOCAL = "local"
LOCAL_CONTEXT_CHARS = 18_000
REMOTE_CONTEXT_CHARS = 60_000


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """Where the model is: a URL and a name, or the bundled local model."""

    model: str
    base_url: str | None
    local: bool


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
    base = Path(os.environ.get("WORKER_HOME") or Path.home() / ".cache" / "worker") / "runs"
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return base / f"{repo.name}-{stamp}-{os.getpid()}"


def fix_from_args(args: argparse.Namespace) -> int:
    """Run `worker fix`; the report is written on every path, including Ctrl-C."""
    started = time.monotonic()
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
            "setup": args.setup,
            "image": args.image,
            "max_steps": args.max_steps,
            "max_tokens": args.max_tokens,
            "max_cost_usd": args.max_cost,
            "max_wall_s": args.timeout,
            "tool_mode": args.tool_mode,
        },
    )
    endpoint = choose_endpoint(args, config)
    price = pricing.price_for(endpoint.model, config.prices)
    validate_cost_cap(config.budgets, price is not None, model=endpoint.model)
    out = args.out.expanduser().resolve() if args.out else default_out_dir(repo)
    _clear_outputs(out)
    show = ProgressPrinter(quiet=args.quiet or args.json)
    report = RunReport(
        repo=str(repo),
        goal=args.goal,
        model=endpoint.model,
        endpoint=endpoint.base_url,
        out_dir=str(out),
        cost_usd=0.0 if price is not None else None,
    )
    try:
        with Trace(path=out / "trace.jsonl") as trace:
            _run(args, repo, config, endpoint, price, out, report, trace, show)
    except BaseException as exc:  # noqa: BLE001 - every ending is reported, then re-raised
        code = exit_code_for(exc)
        report.finish(code, _reason(exc))
        if code == EXIT_NOT_FIXED and isinstance(exc, RunEnded):
            return _finish(report, out, show, started, args)
        if not isinstance(exc, (WorkerError, KeyboardInterrupt)):
            # A bug of ours: one line for the user, the traceback kept for the bug report.
            (out / "traceback.txt").write_text(traceback.format_exc(), encoding="utf-8")
            report.reason = f"internal error: {report.reason} (traceback in {out}/traceback.txt)"
        _finish(report, out, show, started, args)
        raise
    return _finish(report, out, show, started, args)


def _run(
    args: argparse.Namespace,
    repo: Path,
    config: WorkerConfig,
    endpoint: Endpoint,
    price: pricing.Price | None,
    out: Path,
    report: RunReport,
    trace: Trace,
    show: ProgressPrinter,
) -> None:
    t0 = time.monotonic()
    prepared = prepare(
        backend=args.backend,
        isolation=config.isolation,
        repo=repo,
        image=config.image,
        setup=config.setup,
        limits=config.limits,
        progress=show.say,
    )
    weakened = config.isolation.weakened() if args.backend == "docker" else []
    report.sandbox = args.backend + (f" (weakened: {', '.join(weakened)})" if weakened else "")
    with contextlib.ExitStack() as stack:
        model = stack.enter_context(_open_model(stack, endpoint, config, show, out))
        session = stack.enter_context(
            open_session(
                repo,
                client=prepared.client,
                image=prepared.image,
                run_dir=out / "run",
                limits=config.limits,
                output_bytes=config.truncation.max_bytes,
                backend=prepared.backend,
                isolation=prepared.isolation,
                protect=lambda rel: not config.paths.is_writable(rel),
                exclude=out,  # --out may lie inside the repository: never copy our own outputs
            )
        )
        run_pending_setup(prepared, session, timeout_s=config.limits.command_timeout_s)
        report.durations["setup"] = round(time.monotonic() - t0, 3)
        test_cmd = config.test_cmd or detect_test_command(session.workspace.path)
        report.test_cmd = test_cmd
        test_timeout = args.test_timeout or config.limits.command_timeout_s
        t1 = time.monotonic()
        baseline = run_tests(session.box, test_cmd=test_cmd, timeout_s=test_timeout)
        report.durations["tests_before"] = round(time.monotonic() - t1, 3)
        report.tests_before = tests_dict(baseline)
        trace.event("tests_before", command=baseline.command, headline=baseline.headline())
        show.say(f"tests before: {baseline.headline()}")
        _check_baseline(baseline)
        if baseline.passed:
            report.finish(EXIT_FIXED, "the tests already pass: nothing to fix")
            return
        context = ToolContext(
            workspace=session.workspace.path,
            box=session.box,
            paths=config.paths,
            truncation=config.truncation,
            test_cmd=test_cmd,
            test_timeout_s=test_timeout,
        )
        registry = ToolRegistry(tools=default_tools())
        env = SandboxEnvironment(
            session=session,
            registry=registry,
            context=context,
            client=prepared.client,
            image=prepared.image,
            limits=config.limits,
            run_dir=out / "run",
            backend=prepared.backend,
            isolation=prepared.isolation,
        )
        listing = registry.call("list_dir", {}, context).text
        sources = "\n\n".join(
            registry.call("read_file", {"path": rel}, context).text
            for rel in implicated_files(
                baseline, workspace=session.workspace.path, paths=config.paths
            )
        )
        agent = Agent(
            model=model,
            env=env,
            budgets=config.budgets,
            trace=trace,
            cost_of=(lambda u: pricing.cost(price, u)) if price else (lambda u: None),
            on_step=show.step,
            # The bundled server has an 8192-token window: keep the history well inside it.
            max_context_chars=LOCAL_CONTEXT_CHARS if endpoint.local else REMOTE_CONTEXT_CHARS,
        )
        try:
            result = agent.run(args.goal, baseline, listing, sources)
        finally:
            report.steps = agent.usage.steps
            report.tokens_in, report.tokens_out = agent.usage.tokens_in, agent.usage.tokens_out
            report.cost_usd = agent.usage.cost_usd if price is not None else None
            report.durations["model"] = round(agent.model_seconds, 3)
            report.tool_mode = model.mode
            report.tests_after = tests_dict(agent.last_tests)
            report.verification = tests_dict(agent.last_verification)
            in_patch, report.files_left_out = env.changes()
            _save_patch(env.diff(), in_patch, out, report)
            report.verdict = _final_verdict(agent, baseline, env.diff())
        report.verification = tests_dict(result.verification)
        report.tests_after = tests_dict(result.tests_after)
        report.finish(EXIT_FIXED, result.reason)
        if args.apply:
            report.delivered = apply_to_worktree(repo, result.patch)
        elif args.branch:
            report.delivered = commit_on_branch(
                repo, args.branch, result.patch, f"worker: {args.goal}"[:72]
            )


def _final_verdict(agent: Agent, baseline: TestRun, patch: str) -> dict[str, object] | None:
    """How the harness judged the end state: the last clean re-run, else the last test run."""
    judged = agent.last_verification or agent.last_tests
    if judged is None or judged is baseline:
        return None
    of = "verification" if judged is agent.last_verification else "tests_after"
    return {**judge(judged, baseline=baseline, patch=patch).to_dict(), "of": of}


def _check_baseline(baseline: TestRun) -> None:
    """A test command that runs no test, or does not exist, is the user's to fix (exit 2)."""
    result = baseline.result
    if result.exit_code == 127 and not result.timed_out:
        raise UsageError(
            f"the test command was not found in the sandbox: {baseline.command}; "
            "pass --test-cmd (and --setup for its dependencies)"
        )
    if baseline.summary is not None and baseline.summary.total == 0 and result.exit_code == 5:
        raise UsageError("the test command collected no tests: pass --test-cmd")


@contextlib.contextmanager
def _open_model(
    stack: contextlib.ExitStack,
    endpoint: Endpoint,
    config: WorkerConfig,
    show: ProgressPrinter,
    out: Path,
) -> Iterator[OpenAIModel]:
    """The model client; for the bundled model, the local server too (stopped with the stack)."""
    base_url = endpoint.base_url
    if endpoint.local:
        base_url = stack.enter_context(_local_server(show, out))
    mode = config.tool_mode
    if endpoint.local and mode == "auto":
        mode = "json_schema"  # measured: the bundled model never emits native tool_calls
    with OpenAIModel(
        model=endpoint.model,
        base_url=base_url,
        temperature=config.temperature,
        timeout_s=600.0 if endpoint.local else 120.0,
        max_completion_tokens=config.budgets.max_completion_tokens,
        tool_mode=mode,
    ) as model:
        yield model


@contextlib.contextmanager
def _local_server(show: ProgressPrinter, out: Path) -> Iterator[str]:
    from worker.llm import bundled as local_model

    show.say(
        "using the bundled local model (Qwen2.5-Coder-1.5B, llama.cpp on this machine); "
        "for a hosted model pass --base-url URL --model NAME"
    )
    path = local_model.pull(progress=show.say)
    with local_model.LocalServer(model_path=path, log_path=out / "llama-server.log") as server:
        yield server.base_url


OUTPUTS = ("fix.patch", "report.json", "trace.jsonl", "traceback.txt", "llama-server.log")


def _clear_outputs(out: Path) -> None:
    """An --out folder used before: our own outputs go, so none of them is stale."""
    out.mkdir(parents=True, exist_ok=True)
    for name in OUTPUTS:
        (out / name).unlink(missing_ok=True)
    remove_dir(out / "run")


def _save_patch(patch: str, changed: list[str], out: Path, report: RunReport) -> None:
    if patch.strip():
        (out / "fix.patch").write_text(patch, encoding="utf-8")
        report.patch = str(out / "fix.patch")
        report.files_changed = changed


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt) and not str(exc):
        return "interrupted (SIGINT)"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


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
