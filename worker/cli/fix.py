"""`worker fix`: its flags (a public contract: keep the names) and the run behind them."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_fix_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `worker fix`."""
    p.add_argument("--repo", type=Path, required=True, help="repository to fix (never modified)")
    p.add_argument("--goal", default="make the failing tests pass", help="what to achieve")
    p.add_argument("--model", default=None, help="model name (or WORKER_MODEL; 'local' = bundled)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible URL (or OPENAI_BASE_URL)")
    p.add_argument("--test-cmd", default=None, help="test command (detected when absent)")
    p.add_argument("--setup", default=None, help="dependency set-up command, network on, cached")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--max-tokens", type=int, default=None)
    p.add_argument("--max-cost", type=float, default=None, help="USD")
    p.add_argument("--timeout", type=float, default=None, help="wall-clock seconds for the run")
    p.add_argument("--test-timeout", type=float, default=None, help="seconds per test run")
    p.add_argument("--out", type=Path, default=None, help="where fix.patch, report.json go")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--apply", action="store_true", help="apply the verified patch to the tree")
    where.add_argument("--branch", default=None, help="commit the verified patch on a new branch")
    p.add_argument("--image", default=None, help="sandbox image")
    p.add_argument("--policy", default=None, help="preset: default, strict or ci")
    p.add_argument("--tool-mode", default=None, choices=["auto", "native", "json_schema", "text"])
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
    """Run the agent; returns the exit code."""
    from worker.run.fix import fix_from_args

    return fix_from_args(args)
