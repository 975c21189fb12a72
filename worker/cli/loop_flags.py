"""The flags that shape the agent loop, shared by `worker fix` (and `worker ci`) and `worker eval`
(which passes them on to each task's `worker fix`)."""

from __future__ import annotations

import argparse

# The flags `add_loop_arguments` adds, as `worker eval` passes them on.
LOOP_FLAGS: tuple[str, ...] = (
    "--tool-mode",
    "--edit-tools",
    "--first-edit",
    "--undo-worse-edits",
    "--edit-samples",
    "--verify-ahead",
    "--locate",
    "--converse",
    "--second-choices",
)


def add_loop_arguments(p: argparse.ArgumentParser) -> None:
    """How the model's calls are sent and which edits and loop aids it gets."""
    p.add_argument("--tool-mode", default=None, choices=["auto", "native", "json_schema", "text"])
    p.add_argument(
        "--edit-tools",
        default=None,
        choices=["patch", "replace", "both"],
        help="edit tools the model gets (default both)",
    )
    p.add_argument(
        "--first-edit",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the first reply must edit the code shown (default: for the bundled model only)",
    )
    p.add_argument(
        "--undo-worse-edits",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="undo an edit that makes more tests fail (default: for the bundled model only)",
    )
    p.add_argument(
        "--edit-samples",
        type=int,
        default=None,
        metavar="N",
        help="with --first-edit, first edits tried on the original tree until one fixes "
        "(default: 5 for the bundled model, else 1)",
    )
    p.add_argument(
        "--verify-ahead",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="start the clean re-run of each edit beside the working copy's run "
        "(default: for a hosted model only)",
    )
    p.add_argument(
        "--locate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rank the lines the failing tests run (one traced test run) and point the model "
        "at them (default: for the bundled model only)",
    )
    p.add_argument(
        "--converse",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="when no sampled first edit fixed, go on as a conversation until a budget ends "
        "the run (default: not for the bundled model)",
    )
    p.add_argument(
        "--second-choices",
        type=int,
        default=None,
        metavar="N",
        help="after a sample pointed at a line, try N edits the model nearly wrote (one "
        "token swapped for its runner-up) with the tests alone, no model call (json_schema "
        "mode; default: 5 for the bundled model, else 0)",
    )
