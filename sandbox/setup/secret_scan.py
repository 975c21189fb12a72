"""Set-up's changes searched for the values only set-up was given, before any of it is kept.

A variable named by `--setup-env` reaches the set-up command's environment alone, but set-up may
write it down: `pip config set global.index-url https://u:$TOKEN@host/...`, `npm config set
//host/:_authToken`, a `.netrc`. Committed, the image would hand the token to every later
sandbox, where the repository's code can print it. So before the container is committed and
before the files set-up wrote into the tree are kept, both are searched: the container's
changed and added files (`docker diff`, read through the daemon's archive stream: nothing runs
in the container, no link is followed) and the tree's new files, for every form of each value
(policies/secrets.py: the value, URL-quoted, base64). A value inside a longer base64 string
(`user:value` encoded whole, as a `.npmrc`'s `_auth` holds it) is not found: it has no fixed
form. A file over `MAX_FILE_BYTES` (a wheel, a shared library) is passed over.

This catches a tool that writes a token down; it is no defence against set-up code that means
to keep one: that code had the value.
"""

from __future__ import annotations

import io
import os
import posixpath
import stat
import tarfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors

from policies.secrets import Secrets
from sandbox.errors import SandboxError

MAX_FILE_BYTES = 32 * 1024 * 1024
CHUNK = 1024 * 1024
_MODIFIED, _ADDED = 0, 1  # `docker diff` kinds (2: deleted)


@dataclass(frozen=True, kw_only=True)
class SecretFound:
    """Which variable's value was found, and in which file (never the value)."""

    name: str
    path: str


def find_secret(
    client: docker.DockerClient,
    container_id: str,
    secrets: Secrets,
    *,
    tree: Path,
    tree_files: Iterable[str] = (),
) -> SecretFound | None:
    """The first file set-up changed in the container, or added to `tree` (`tree_files`,
    relative to it), that holds a form of one of `secrets`' values; None when none does."""
    if not secrets:
        return None
    needles = [(name, tuple(f.encode() for f in forms)) for name, forms in secrets.named]
    for rel in tree_files:
        with _open_regular(tree / rel) as data:
            if data is not None and (name := _search(data, needles)) is not None:
                return SecretFound(name=name, path=f"{rel} (in the repository's tree)")
    try:
        changes = client.api.diff(container_id) or []
    except docker.errors.APIError as exc:
        raise SandboxError(f"cannot list what set-up changed: {exc.explanation}") from exc
    for root in changed_roots({c["Path"]: c["Kind"] for c in changes}):
        found = _search_archive(client, container_id, root, needles)
        if found is not None:
            return found
    return None


def changed_roots(changes: dict[str, int]) -> list[str]:
    """The fewest paths whose archives hold every changed or added file: an added folder
    stands for all under it; a changed folder is left out when its changed entries are listed.

    >>> changed_roots({"/opt": 0, "/opt/venv": 0, "/opt/venv/pip.conf": 1, "/new": 1,
    ...                "/new/a": 1, "/etc/x": 0, "/gone": 2})
    ['/etc/x', '/new', '/opt/venv/pip.conf']
    """
    kept = {p: k for p, k in changes.items() if k in (_MODIFIED, _ADDED)}
    parents = {posixpath.dirname(p) for p in kept}
    roots = []
    for path in sorted(kept):
        if kept[path] == _MODIFIED and path in parents:
            continue
        up = posixpath.dirname(path)
        while up not in ("/", "") and kept.get(up) != _ADDED:
            up = posixpath.dirname(up)
        if up in ("/", ""):
            roots.append(path)
    return roots


def _search_archive(
    client: docker.DockerClient,
    container_id: str,
    root: str,
    needles: list[tuple[str, tuple[bytes, ...]]],
) -> SecretFound | None:
    try:
        stream, _stat = client.api.get_archive(container_id, root)
    except docker.errors.NotFound:
        return None  # gone since the diff (a temporary file)
    except docker.errors.APIError as exc:
        raise SandboxError(f"cannot read what set-up wrote ({root}): {exc.explanation}") from exc
    reader = io.BufferedReader(_Chunks(stream), CHUNK)
    found = None
    with tarfile.open(fileobj=reader, mode="r|") as tar:
        for member in tar:
            if found is not None or not member.isfile() or member.size > MAX_FILE_BYTES:
                continue  # read through to the end: the stream's connection is reused
            data = tar.extractfile(member)
            name = _search(data, needles) if data is not None else None
            if name is not None:
                where = posixpath.join(posixpath.dirname(root), member.name)
                found = SecretFound(name=name, path=where)
    return found


def _search(data: IO[bytes], needles: list[tuple[str, tuple[bytes, ...]]]) -> str | None:
    """The name of the first value one of whose forms `data` holds, read in chunks (a form
    split between two is found: each chunk is searched with the end of the one before)."""
    keep = max(len(f) for _, forms in needles for f in forms) - 1
    carry = b""
    while chunk := data.read(CHUNK):
        window = carry + chunk
        for name, forms in needles:
            if any(f in window for f in forms):
                return name
        carry = window[-keep:] if keep else b""
    return None


@contextmanager
def _open_regular(path: Path) -> Iterator[IO[bytes] | None]:
    """A regular file of the tree opened without following a link; None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        yield None
        return
    with os.fdopen(fd, "rb") as file:
        yield file if stat.S_ISREG(os.fstat(fd).st_mode) else None


class _Chunks(io.RawIOBase):
    """The daemon's archive stream (an iterator of byte chunks) as a readable file."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks: Iterator[bytes] = iter(chunks)
        self._left = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._left:
            try:
                self._left = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n
