"""What an exact workspace write cap would cost at sandbox start-up (issue 9, part 2).

Today the cap is approximate: sandbox/runner.py samples the host filesystem's free space every
0.2 s. Two exact alternatives, timed here from nothing to a mounted, empty, writable folder and
back (median of N): a loop-mounted ext4 image file of the cap's size (sparse: it takes host
disk only as it is written, never more than the cap), and a size-limited tmpfs (exact and fast,
but it takes RAM). Needs root. Run: python3 bench/workspace_cap.py [--repeat N] [--cap-mb MB]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True)


def loop_ext4(root: Path, cap_mb: int) -> Callable[[], None]:
    image, mount = root / "workspace.img", root / "workspace"
    mount.mkdir()
    with image.open("wb") as f:
        f.truncate(cap_mb * 1024 * 1024)  # sparse
    run("mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal",
        "-E", "lazy_itable_init=1,lazy_journal_init=1", str(image))  # fmt: skip
    run("mount", "-o", "loop,nodev,nosuid", str(image), str(mount))
    return lambda: run("umount", str(mount))


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
    for name, make in (("loop-mounted ext4", loop_ext4), ("tmpfs", tmpfs)):
        samples = [time_one(make, args.cap_mb) for _ in range(args.repeat)]
        up = statistics.median(s[0] for s in samples)
        down = statistics.median(s[1] for s in samples)
        print(f"{name:18} cap {args.cap_mb} MB: set up {up * 1000:6.1f} ms, "
              f"tear down {down * 1000:6.1f} ms (median of {args.repeat})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
