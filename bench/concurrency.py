"""Many runs at once: 1, 2, 4 and 8 concurrent `worker fix` runs with the scripted model.

Each run is bench/overhead.py's trajectory (its own scripted server, its own copy of the two-file
repository, a fresh `python -m worker.cli`). For each level N, N runs start together and the
wall time until the last exits gives runs per minute; each run's own time, minus the median time
of one run alone, is the overhead that running beside the others adds. Where runs per minute
stops growing with N, the machine is saturated.
Run: python3 bench/concurrency.py [--levels 1 2 4 8] [--rounds 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_overhead", HERE / "overhead.py")
assert _spec is not None and _spec.loader is not None
overhead = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(overhead)  # also puts the project first on sys.path


def one_run(parent: Path) -> float:
    """One full `worker fix` on its own repository copy; its seconds, start to exit."""
    folder = Path(tempfile.mkdtemp(dir=parent))
    repo = overhead.make_repo(folder)
    took, report = overhead.time_fix(repo, folder / "out")
    if report["status"] != "fixed":
        raise SystemExit(f"a run did not end fixed: {report['reason']}")
    return float(took)


def level(n: int, parent: Path) -> tuple[float, list[float]]:
    """N runs started together: (wall seconds until the last exits, each run's seconds)."""
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        times = list(pool.map(lambda _i: one_run(parent), range(n)))
    return time.perf_counter() - started, times


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-concurrency-"))
    rows = []
    try:
        one_run(tmp)  # warm-up: page cache, image layers
        alone = statistics.median(one_run(tmp) for _ in range(args.rounds))
        for n in args.levels:
            walls, times = [], []
            for _ in range(args.rounds):
                wall, each = level(n, tmp)
                walls.append(wall)
                times.extend(each)
            wall = statistics.median(walls)
            per_run = statistics.median(times)
            rows.append((n, 60 * n / wall, per_run, per_run - alone))
            print(
                f"{n} at once: {60 * n / wall:5.1f} runs/min (wall {wall:.2f} s), per run median"
                f" {per_run:.2f} s (max {max(times):.2f}), overhead beside the others"
                f" {per_run - alone:+.2f} s",
                flush=True,
            )
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(f"one run alone: median {alone:.2f} s; {os.cpu_count()} cores; {args.rounds} rounds")
    best = max(rows, key=lambda row: row[1])
    print(f"saturates at {best[0]} at once: {best[1]:.1f} runs/min (the most of any level)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
