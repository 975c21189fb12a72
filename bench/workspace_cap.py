"""What the exact workspace write cap costs at sandbox start-up (issue 9, part 2).

As root, the working copy is a loop-mounted ext4 image (sandbox/worktree/capped_dir.py: sparse, so
it
takes host disk only as it is written, never more than its size); elsewhere the approximate
guard in sandbox/container/runner.py stays. Timed here from nothing to a mounted, empty, writable
folder
and back (median of N): what we ship, and a size-limited tmpfs for comparison (exact and faster,
but it takes RAM, so not used). Needs root.
Run: python3 bench/workspace_cap.py [--repeat N] [--cap-mb MB]
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cap-mb", type=int, default=2048, help="Limits.workspace_mb")
    args = parser.parse_args()
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
