"""What making the copy a repository costs (sandbox/container/checkout_repo.py): the first git
call in a container makes it, so in fresh containers a first command that runs no git, the
first `git rev-parse HEAD` and the second are timed.

    PYTHONPATH=$PWD python3 bench/checkout_repo.py [TREE ...] [--repeat N]

Without a TREE: a synthetic tree of 10,000 small files (100 folders of 100). Each line: the
tree's files and bytes, the medians, and the `.git` it made.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, where bench/sandbox.py would hide
# the `sandbox` package: drop that folder so the imports below find the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from policies.limits import Limits  # noqa: E402
from sandbox.container.client import connect  # noqa: E402
from sandbox.container.docker_sandbox import DockerSandbox  # noqa: E402
from sandbox.container.image import DEFAULT_IMAGE, ensure_image  # noqa: E402
from sandbox.worktree.workspace import make_run_dir, remove_dir, snapshot  # noqa: E402

GIT = "git rev-parse HEAD"


def synthetic(root: Path) -> Path:
    for i in range(100):
        (root / f"d{i}").mkdir(parents=True)
        for j in range(100):
            (root / f"d{i}" / f"f{j}.txt").write_text(f"file {i} {j}\n")
    return root


def measure(tree: Path, repeat: int) -> str:
    client = connect()
    ensure_image(client)
    run_dir = make_run_dir("worker-bench-repo-")
    try:
        ws = snapshot(tree, run_dir / "copy")
        plain, firsts, seconds, made = [], [], [], [""]
        for n in range(repeat):
            box = DockerSandbox(
                client=client, image=DEFAULT_IMAGE, workspace=ws.path,
                control_dir=run_dir / f"control{n}", limits=Limits(),
            )  # fmt: skip
            with box:
                for times, command in ((plain, "true"), (firsts, GIT), (seconds, GIT)):
                    t = time.perf_counter()
                    box.run(command)
                    times.append(time.perf_counter() - t)
                made = box.run("git ls-files | wc -l; du -sh .git | cut -f1").output.split()
        return (
            f"{tree}: {ws.files} files, {ws.tree_bytes / 1e6:.1f} MB; a command with no git "
            f"{statistics.median(plain):.2f} s; the first git call "
            f"{statistics.median(firsts):.2f} s, the second {statistics.median(seconds):.2f} s; "
            f"{made[0]} files committed, .git {made[-1]}"
        )
    finally:
        remove_dir(run_dir)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trees", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        trees = args.trees or [synthetic(Path(tmp) / "synthetic")]
        for tree in trees:
            print(measure(tree, args.repeat), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
