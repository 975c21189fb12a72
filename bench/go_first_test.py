"""The first `go test` of a Go module in the agent's sandbox, against a bare `docker run` of the
same image: what the image's seed build cache saves (the standard library compiled once, when
the image was built: sandbox/ecosystems/go/image.py), and what worker adds around the run.

    python3 bench/go_first_test.py [--module bench/tasks/go-projects/textkit]
        [--image worker-sandbox:go1.24] [--runs 3]

Each figure is the median of --runs, each on a fresh container (so each a first `go test`):

- bare, empty cache: `docker run --rm --network none` of `go test ./...` with an empty GOCACHE
  on a tmpfs /tmp, as the sandbox mounts it (on the container's overlay disk the same compile
  took 44 s against 21 s here, loaded);
- bare, seeded: the same, the image's seed copied into GOCACHE first;
- worker, seeded: `worker sandbox run-tests --json --image IMAGE` on a git copy of the module:
  the whole command's seconds and the test command's own (its `duration_s`: the seed's copy and
  `go test -json`);
- worker, empty cache: the same with `--test-cmd "GOCACHE=/tmp/no-seed go test ./..."` (the seed
  is copied where the go command no longer looks).

A stdlib-only module: no set-up (`go mod download` has nothing to fetch). A markdown table on
stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The repository first: bench/sandbox.py would shadow the sandbox package.
sys.path[:] = [str(ROOT), str(HERE / "tasks")] + [
    p for p in sys.path if Path(p or ".").resolve() != HERE
]

from generate import commit_tree  # type: ignore[import-not-found]  # noqa: E402

SEED = "/usr/local/share/go-build-seed"


def bare(module: Path, image: str, *, seeded: bool) -> float:
    """Seconds of one `docker run` of `go test ./...` (the container's start included)."""
    seed = f"cp -R {SEED} /tmp/c && " if seeded else ""
    script = f"{seed}cd /w && go test ./... >/dev/null"
    started = time.monotonic()
    subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", f"{module}:/w:ro",
         "--tmpfs", "/tmp:exec,size=1g",
         "-e", "GOCACHE=/tmp/c", "-e", "GOFLAGS=-mod=readonly", "-e", "GOTOOLCHAIN=local",
         "-e", "HOME=/tmp", "--entrypoint", "sh", image, "-c", script],
        check=True, capture_output=True,
    )  # fmt: skip
    return time.monotonic() - started


def worker(repo: Path, image: str, *, seeded: bool) -> tuple[float, float]:
    """Seconds of one `worker sandbox run-tests`, and its test command's own."""
    command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--json",
               "--repo", str(repo), "--image", image]  # fmt: skip
    if not seeded:
        command += ["--test-cmd", "GOCACHE=/tmp/no-seed go test ./..."]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    if not summary.get("passed"):
        raise SystemExit(f"run-tests did not pass: {summary.get('headline')}")
    return seconds, float(summary["duration_s"])


def median(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", type=Path, default=HERE / "tasks/go-projects/textkit")
    parser.add_argument("--image", default="worker-sandbox:go1.24")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="go-first-test-"))
    try:
        repo = work / "module"
        shutil.copytree(args.module.resolve(), repo)
        commit_tree(repo, "m")
        os.chmod(repo, 0o755)
        rows = []
        for seeded in (False, True):
            b = median(args.runs, lambda s=seeded: bare(repo, args.image, seeded=s))  # type: ignore[misc]
            runs = [worker(repo, args.image, seeded=seeded) for _ in range(args.runs)]
            whole = statistics.median(r[0] for r in runs)
            own = statistics.median(r[1] for r in runs)
            rows.append((seeded, b, whole, own))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        "| build cache | bare `docker run` s | `worker sandbox run-tests` s | its test "
        "command s | worker's overhead s |"
    )
    print("|---|---|---|---|---|")
    for seeded, b, whole, own in rows:
        name = "the image's seed" if seeded else "empty"
        print(f"| {name} | {b:.1f} | {whole:.1f} | {own:.1f} | {whole - b:.1f} |")
    print(f"\n{args.module.name}, {args.image}, median of {args.runs} fresh containers each")
    return 0


if __name__ == "__main__":
    sys.exit(main())
