"""The request that the flags of `worker fix` and `worker ci` make: flags and configuration,
checked, every usage error raised before anything starts; the --out folder cleared of our own
outputs of an earlier run."""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone
from pathlib import Path

from policies.budgets import validate_cost_cap
from policies.config import WorkerConfig, load_config
from policies.secrets import run_secrets
from sandbox.ecosystems import language_paths
from sandbox.home import worker_home
from sandbox.worktree.workspace import remove_dir
from worker.cli.loop_flags import budget_overrides, search_overrides
from worker.cli.setup_flags import setup_overrides
from worker.errors import UsageError
from worker.llm import pricing
from worker.record.folder import OUTPUTS, RUN_DIR, TRIAGE_DIR
from worker.run.deliver import check_branch_request
from worker.run.fix import Endpoint, FixRequest
from worker.search.settings import config_fragment

LOCAL = "local"


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
            **budget_overrides(args),
            "tool_mode": args.tool_mode,
            "edit_tools": args.edit_tools,
            **search_overrides(args),
        },
        search=config_fragment(),
        paths=language_paths(),
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
        # Registered once, here: masked in all the run writes or sends (policies/secrets.py).
        secrets=run_secrets(config.setup_env, os.environ, api_key=not endpoint.local),
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
    remove_dir(out / RUN_DIR)
    remove_dir(out / TRIAGE_DIR)
