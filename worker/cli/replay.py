"""`worker replay RUN_DIR [--repo PATH]`: a recorded run again, compared; exit 0 only on a match.
RUN_DIR may be a `worker eval` output: each task's run is replayed, and a table printed."""

from __future__ import annotations

import argparse
from pathlib import Path

from worker.errors import UsageError
from worker.replay.eval_replay import replay_eval, table
from worker.replay.replay import replay
from worker.show.write import is_eval


def add_replay_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `worker replay`."""
    p.add_argument(
        "run_dir", type=Path, help="the --out folder of a recorded worker fix, ci or eval"
    )
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
    if is_eval(run_dir):
        return _replay_eval(run_dir, args)
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


def _replay_eval(folder: Path, args: argparse.Namespace) -> int:
    """Each task's run replayed (into EVAL_OUT/tasks/ID/fix/replay); 0 when every one matches."""
    if args.repo is not None or args.out is not None:
        raise UsageError("an eval's tasks replay on their own clones, into their own folders: "
                         "--repo and --out are for one run (EVAL_OUT/tasks/ID/fix)")  # fmt: skip
    rows = []
    for row in replay_eval(folder):
        print(f"{row.task}: {row.said}", flush=True)
        rows.append(row)
    print(table(rows))
    matched = sum(row.matched for row in rows)
    print(f"{matched} of {len(rows)} task(s) replay as recorded")
    return 0 if rows and matched == len(rows) else 1
