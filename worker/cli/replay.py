"""`worker replay RUN_DIR [--repo PATH]`: a recorded run again, compared; exit 0 only on a match."""

from __future__ import annotations

import argparse
from pathlib import Path

from worker.replay.replay import replay


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `worker replay`."""
    p.add_argument("run_dir", type=Path, help="the --out folder of a recorded worker fix or ci")
    p.add_argument(
        "--repo", type=Path, default=None,
        help="replay on this checkout instead of the recorded one (its tree may differ)",
    )  # fmt: skip
    p.add_argument(
        "--out", type=Path, default=None, help="the replay's outputs (default: RUN_DIR/replay)"
    )


def run_replay(args: argparse.Namespace) -> int:
    """Replay, print the first difference or the match; 0 on a match, 1 on a difference."""
    run_dir = args.run_dir.expanduser().resolve()
    out = (args.out or run_dir / "replay").expanduser().resolve()
    result = replay(run_dir, repo=args.repo, out=out)
    if result.note:
        print(f"note: {result.note}")
    if result.difference is not None:
        print(result.difference.render())
        print(f"replay: {result.out}")
        return 1
    if result.cut_off:
        print(
            "replay matches the recording up to where a signal stopped it: every observation "
            f"and test outcome it holds, and the same ending ({out})"
        )
        return 0
    print(f"replay matches the recording: every observation, test outcome and the verdict ({out})")
    return 0
