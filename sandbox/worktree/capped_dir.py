"""A folder with an exact size cap: a loop-mounted ext4 image of a fixed size, so that what a
sandboxed command writes to the working copy (a host folder) can never grow past the cap.

Needs root (mount) and `mkfs.ext4`; where either is missing, `mount_capped` says so and the
caller keeps the runner's guard alone (the in-container runner kills a command once the files
under the folders it may write grew by more than the cap). The image file lives beside the
folder, sparse: it takes host disk only as the copy and what commands write fill it, never more
than its size.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

MIB = 1024 * 1024
SLACK_BYTES = 16 * MIB  # ext4's own metadata on a small image
IMAGE_SUFFIX = ".img"


def can_mount() -> bool:
    """Whether this process can make capped folders here (root, mkfs.ext4, mount)."""
    return os.geteuid() == 0 and all(shutil.which(t) for t in ("mkfs.ext4", "mount", "umount"))


def image_size(*, tree_bytes: int, files: int, cap_mb: int) -> int:
    """Bytes for an image that holds the copy (rounded to 4 KiB blocks) and `cap_mb` more."""
    blocks = tree_bytes + files * 4096
    return blocks + cap_mb * MIB + SLACK_BYTES


def mount_capped(path: Path, *, size_bytes: int, files: int) -> bool:
    """Make `path` (an empty folder) a filesystem of `size_bytes`; False where this cannot be
    done here (not root, no mkfs.ext4), and the folder stays a plain one."""
    if not can_mount():
        return False
    image = path.with_name(path.name + IMAGE_SUFFIX)
    with image.open("wb") as f:
        f.truncate(size_bytes)
    inodes = max(4096, 2 * files + 1024)
    try:
        subprocess.run(
            ["mkfs.ext4", "-q", "-F", "-m", "0", "-N", str(inodes), "-O", "^has_journal",
             "-E", "lazy_itable_init=1", str(image)],
            check=True, capture_output=True,
        )  # fmt: skip
        subprocess.run(
            ["mount", "-o", "loop,nosuid,nodev", str(image), str(path)],
            check=True,
            capture_output=True,
        )
    except (subprocess.CalledProcessError, OSError):
        image.unlink(missing_ok=True)
        return False
    shutil.rmtree(path / "lost+found", ignore_errors=True)
    return True


def unmount_under(path: Path) -> None:
    """Unmount every filesystem mounted at or below `path` (deepest first), and delete the image
    files beside them: a folder is then plain to remove."""
    root = str(path.resolve())
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return
    points = []
    for line in mounts:
        fields = line.split()
        if len(fields) > 1:
            point = fields[1].replace("\\040", " ")
            if point == root or point.startswith(root + "/"):
                points.append(point)
    for point in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)
        Path(point + IMAGE_SUFFIX).unlink(missing_ok=True)
