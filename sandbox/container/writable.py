"""The folders of an image that each sandbox of it may write, on disk, starting from what the
image holds there: a toolchain's build output that set-up filled (Rust's compiled dependencies,
sandbox/ecosystems/rust/image.py), too large for the /tmp tmpfs and read by every test run.

An image names them in its label `worker.writable` (a JSON list of absolute paths; a set-up
image inherits its base's labels). A sandbox with a read-only root gets an anonymous volume at
each: Docker fills it from the image's files at that path when the container is created
(timestamps kept), on the daemon's disk, not in memory; it is the container's alone (never
shared between parallel runs), outside /workspace (never in a diff), and removed with it
(`remove(v=True)`, and the sweep of dead workers' containers). A writable root (set-up) gets
none: the folder is writable in the container's own layer already, and the commit keeps what
set-up wrote there. What a command writes there is bounded with /workspace: the runner kills
a command once the files under them grew by more than `[limits] workspace_mb` together
(sandbox/container/runner.py: WriteGuard); and no command runs once all of a sandbox's
commands together have left more than that in them.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping

from docker.types import Mount

LABEL_WRITABLE = "worker.writable"
#: Paths a writable folder may not be, or be inside, or hold: the sandbox's own mounts and the
#: system's.
_RESERVED = ("/workspace", "/run", "/tmp", "/proc", "/sys", "/dev", "/etc", "/usr", "/bin")


def writable_dirs(labels: Mapping[str, str] | None) -> tuple[str, ...]:
    """The folders the label names, each once; ValueError for a label that is not a JSON list
    of absolute paths, or that names the root, a system folder or one of the sandbox's.

    >>> writable_dirs({"worker.writable": '["/home/worker/.cargo-target"]'})
    ('/home/worker/.cargo-target',)
    >>> writable_dirs({})
    ()
    >>> writable_dirs({"worker.writable": '["/workspace/target"]'})
    Traceback (most recent call last):
    ...
    ValueError: image label worker.writable: '/workspace/target' is the sandbox's or the system's
    """
    raw = (labels or {}).get(LABEL_WRITABLE)
    if not raw:
        return ()
    try:
        paths = json.loads(raw)
    except ValueError:
        paths = None
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError(f"image label {LABEL_WRITABLE}: not a JSON list of paths: {raw[:200]!r}")
    out: dict[str, None] = {}
    for path in paths:
        norm = posixpath.normpath(path)
        if not path.startswith("/") or norm in ("/", "//"):
            raise ValueError(f"image label {LABEL_WRITABLE}: {path!r} is not a folder's path")
        if any(_overlaps(norm, reserved) for reserved in _RESERVED):
            raise ValueError(
                f"image label {LABEL_WRITABLE}: {path!r} is the sandbox's or the system's"
            )
        out[norm] = None
    return tuple(out)


def _overlaps(path: str, reserved: str) -> bool:
    return path == reserved or path.startswith(reserved + "/") or reserved.startswith(path + "/")


def volume_mounts(dirs: tuple[str, ...]) -> list[Mount]:
    """An anonymous volume at each folder: Docker copies the image's files there at creation."""
    return [Mount(path, None, type="volume") for path in dirs]
