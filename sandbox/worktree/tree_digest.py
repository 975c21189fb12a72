"""A digest of a small tree, read in this process: what `Workspace.content_hash` asks git for
(every file's bytes, its executable bit, each link's target), without two git processes.

The test-run cache takes a tree's hash before and after every run (sandbox/testrun/cache.py):
`git add` and `git write-tree` in an index of their own, 10-30 ms a hash on this machine, four
git processes on the path of every test run. For a tree of a few hundred small files reading it
here takes under a millisecond. Past `max_files` entries or `max_bytes` of content the answer
is None and the caller asks git, whose index keeps a big tree's unchanged files cheap.

Only equality matters: two trees with the same digest have the same files, modes and bytes.
Nothing is followed: a link is its target's text, a FIFO or socket only its name and kind, so a
tree the sandbox's code arranged cannot make this block or read outside it.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

MAX_FILES = 2_000
MAX_BYTES = 8 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def small_tree_digest(
    root: Path, *, skip: frozenset[str] = frozenset({".git"}), max_files: int = MAX_FILES,
    max_bytes: int = MAX_BYTES,
) -> str | None:  # fmt: skip
    """The digest of everything under `root` (names in `skip` at its top left out, as git
    leaves out `.git`); None when the tree is too big or a file cannot be read here."""
    digest = hashlib.sha256()
    budget = [max_files, max_bytes]
    try:
        if not _walk(root, "", digest, budget, skip):
            return None
    except OSError:
        return None
    return "tree-sha256:" + digest.hexdigest()


def _walk(
    folder: Path, prefix: str, digest: hashlib._Hash, budget: list[int], skip: frozenset[str]
) -> bool:
    with os.scandir(folder) as entries:
        listed = sorted(entries, key=lambda e: e.name)
    for entry in listed:
        if not prefix and entry.name in skip:
            continue
        budget[0] -= 1
        if budget[0] < 0:
            return False
        rel = prefix + entry.name
        info = entry.stat(follow_symlinks=False)
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            digest.update(b"d\0" + os.fsencode(rel) + b"\0")
            if not _walk(Path(entry.path), rel + "/", digest, budget, skip):
                return False
        elif stat.S_ISLNK(mode):
            target = os.fsencode(os.readlink(entry.path))
            digest.update(b"l\0" + os.fsencode(rel) + b"\0" + target + b"\0")
        elif stat.S_ISREG(mode):
            budget[1] -= info.st_size
            if budget[1] < 0:
                return False
            kind = b"x" if mode & 0o111 else b"f"
            sha = _file_sha(entry.path, info.st_size)
            digest.update(kind + b"\0" + os.fsencode(rel) + b"\0" + sha + b"\0")
        else:  # a FIFO, socket or device: never opened
            digest.update(b"o\0" + os.fsencode(rel) + b"\0")
    return True


def _file_sha(path: str, size: int) -> bytes:
    """The file's sha256; OSError if it is not the regular file of `size` bytes listed (a
    file changed while read: the caller asks git)."""
    fd = os.open(path, _READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is no longer a regular file")
        sha, left = hashlib.sha256(), size
        while left >= 0 and (chunk := os.read(fd, min(1 << 20, left + 1))):
            sha.update(chunk)
            left -= len(chunk)
        if left != 0:
            raise OSError(f"{path} changed size while read")
        return sha.digest()
    finally:
        os.close(fd)
