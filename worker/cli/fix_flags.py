"""The flags of `worker fix` (a public contract: keep the names), shared by `worker ci` (without
--apply and --branch) and, for --backend, by `worker sandbox run-tests`."""

from __future__ import annotations

import argparse
from pathlib import Path

from worker.cli.loop_flags import add_budget_arguments, add_loop_arguments
from worker.cli.setup_flags import add_setup_arguments


def add_fix_arguments(p: argparse.ArgumentParser, *, deliver: bool = True) -> None:
    """The flags of `worker fix` (`worker ci` shares them, without --apply and --branch)."""
    p.add_argument("--repo", type=Path, required=True, help="repository to fix (never modified)")
    p.add_argument("--goal", default="make the failing tests pass", help="what to achieve")
    p.add_argument("--model", default=None, help="model name (or WORKER_MODEL; 'local' = bundled)")
    p.add_argument("--base-url", default=None, help="OpenAI-compatible URL (or OPENAI_BASE_URL)")
    p.add_argument("--test-cmd", default=None, help="test command (detected when absent)")
    add_setup_arguments(p)
    add_budget_arguments(p)
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
