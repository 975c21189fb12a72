"""The set-up flags, shared by `worker fix`, `worker ci` and `worker sandbox run-tests`."""

from __future__ import annotations

import argparse
from typing import Any

from policies.config import SETUP_NETWORKS


def add_setup_arguments(p: argparse.ArgumentParser) -> None:
    """--setup/--no-setup, --setup-network, --setup-env, --setup-timeout."""
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--setup",
        default=None,
        help="dependency set-up command, run once and cached (default: inferred from the "
        "repository's files)",
    )
    which.add_argument(
        "--no-setup", action="store_true", help="no set-up at all, neither given nor inferred"
    )
    p.add_argument(
        "--setup-network",
        choices=SETUP_NETWORKS,
        default=None,
        help="what set-up may reach: index (the package index only, default), full, none",
    )
    p.add_argument(
        "--setup-env",
        action="append",
        default=None,
        metavar="NAME",
        help="a host variable passed to set-up only (a private index's token); repeatable",
    )
    p.add_argument(
        "--setup-timeout", type=float, default=None, help="seconds for set-up (default 900)"
    )


def setup_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The configuration keys the set-up flags set (None: unset)."""
    return {
        "setup": False if args.no_setup else args.setup,
        "setup_network": args.setup_network,
        "setup_env": args.setup_env,
        "setup_timeout_s": args.setup_timeout,
    }
