"""What the exact workspace write cap costs at sandbox start-up (issue 9, part 2).

As root, the working copy is a loop-mounted ext4 image (sandbox/worktree/capped_dir.py: sparse, so
it
takes host disk only as it is written, never more than its size); elsewhere the approximate
guard in sandbox/container/runner.py stays. Timed here from nothing to a mounted, empty, writable
folder
and back (median of N): what we ship, and a size-limited tmpfs for comparison (exact and faster,
but it takes RAM, so not used). Needs root.
Run: python3 bench/workspace_cap.py [--repeat N] [--cap-mb MB]

Where the copy is not capped (set-up's copy, a non-root user), the runner counts what a command
wrote by walking the folders it may write (sandbox/container/runner.py: WriteGuard), before the
command and now and then during it. `--walk FILES` times one such walk (median of N) on a tree
shaped like a node_modules: FILES files of 1 to 8 KiB, ten to a folder, folders five deep.
Needs no root.
Run: python3 bench/workspace_cap.py --walk 30000 [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox.container.runner import WALK_EVERY_S, WALK_SHARE, held_bytes  # noqa: E402
from sandbox.worktree.capped_dir import image_size, mount_capped, unmount_under  # noqa: E402


def run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


def loop_ext4(root: Path, cap_mb: int) -> Callable[[], None]:
    mount = root / "workspace"
    mount.mkdir()
    size = image_size(tree_bytes=0, files=0, cap_mb=cap_mb)
    assert mount_capped(mount, size_bytes=size, files=0)
    return lambda: unmount_under(mount)


def tmpfs(root: Path, cap_mb: int) -> Callable[[], None]:
    mount = root / "workspace"
    mount.mkdir()
    run("mount", "-t", "tmpfs", "-o", f"size={cap_mb}m,nodev,nosuid", "tmpfs", str(mount))
    return lambda: run("umount", str(mount))


def time_one(make: Callable[[Path, int], Callable[[], None]], cap_mb: int) -> tuple[float, float]:
    root = Path(tempfile.mkdtemp(prefix="bench-cap-"))
    try:
        t = time.perf_counter()
        undo = make(root, cap_mb)
        up = time.perf_counter() - t
        t = time.perf_counter()
        undo()
        down = time.perf_counter() - t
        return up, down
    finally:
        shutil.rmtree(root, ignore_errors=True)


def time_walk(files: int, repeat: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="bench-walk-"))
    try:
        for i in range(files):
            folder = root.joinpath(*(f"d{(i // 10**k) % 10}" for k in range(5, 0, -1)))
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"f{i}.js").write_bytes(b"x" * (1024 * (1 + i % 8)))
        samples = []
        for _ in range(repeat):
            t = time.perf_counter()
            held = held_bytes([str(root)])
            samples.append(time.perf_counter() - t)
        walk = statistics.median(samples)
        every = max(WALK_EVERY_S, WALK_SHARE * walk)
        print(f"walk of {files} files: {walk * 1000:.0f} ms (median of {repeat}), "
              f"{(held or 0) // 2**20} MB counted; during a command one every {every:.1f} s, "
              f"{100 * walk / every:.1f}% of a core")  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cap-mb", type=int, default=2048, help="Limits.workspace_mb")
    parser.add_argument("--walk", type=int, default=0, help="time the guard's walk of FILES")
    args = parser.parse_args()
    if args.walk:
        time_walk(args.walk, args.repeat)
        return 0
    if os.geteuid() != 0:
        print("needs root (mount)")
        return 2
    for name, make in (("loop-mounted ext4 (ours)", loop_ext4), ("tmpfs", tmpfs)):
        samples = [time_one(make, args.cap_mb) for _ in range(args.repeat)]
        up = statistics.median(s[0] for s in samples)
        down = statistics.median(s[1] for s in samples)
        print(f"{name:25} cap {args.cap_mb} MB: set up {up * 1000:6.1f} ms, "
              f"tear down {down * 1000:6.1f} ms (median of {args.repeat})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
