"""Test fixtures that a project's own tests may touch: watched and put back, not locked.

Locked test files (`workspace.protect_files`) are root's and read-only, which a test that calls
`os.utime` or `chmod` on its own template or data file cannot survive (jinja2's loader tests
do: a sandbox-made failure the model would then chase). So the data files of a test folder stay
the sandbox user's, and after every command in the sandbox the guard looks at each one's ctime,
which no process in the sandbox can set back. A fixture whose ctime moved is compared with the
snapshot; if its bytes or its kind changed, the snapshot's copy is put back and the command's
result names it. A touch alone (times, mode) is left as the test made it.

The verdict (sandbox/testrun/verdict.py) refuses a run that changed a fixture the baseline run left
as
it was. What stays possible, and is documented: code that rewrites a fixture and writes it back
before the command ends. Test code and configuration stay locked, so the tests themselves never
change.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_WRITE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class FixtureGuard:
    """The fixtures of one tree (`root`), their snapshot bytes read by `original(rel)`."""

    def __init__(
        self, *, root: Path, files: Iterable[str], original: Callable[[str], bytes]
    ) -> None:
        self._root = root
        self._original = original
        self._stamps: dict[str, int | None] = {}
        self._modes: dict[str, tuple[int, int, int]] = {}  # permission bits, uid, gid
        for rel in files:
            st = os.lstat(root / rel)
            self._stamps[rel] = st.st_ctime_ns
            self._modes[rel] = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(self._stamps)

    def digest(self, rel: str) -> str:
        """The sha256 of `rel`'s snapshot bytes (hex), to compare with a copy held elsewhere."""
        return hashlib.sha256(self._original(rel)).hexdigest()

    def sweep(self) -> tuple[str, ...]:
        """The fixtures changed since the last sweep, each put back from the snapshot."""
        changed = []
        for rel, stamp in self._stamps.items():
            current = _ctime_beneath(self._root, rel)
            if current is not None and current == stamp:
                continue
            if self._differs(rel):
                changed.append(rel)
                self._put_back(rel)
            self._stamps[rel] = _ctime_beneath(self._root, rel)
        return tuple(changed)

    def _differs(self, rel: str) -> bool:
        """True unless `rel` is still a regular file with the snapshot's bytes."""
        try:
            with _open_beneath(self._root, rel, _READ) as fd:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                    return True
                want = self._original(rel)
                if info.st_size != len(want):
                    return True
                with os.fdopen(os.dup(fd), "rb") as handle:
                    return handle.read() != want
        except OSError:
            return True  # gone, a link, or a folder on the way replaced

    def _put_back(self, rel: str) -> None:
        """Write the snapshot's bytes anew, never through a link (a folder on the way that is
        no longer a real folder is left alone: the change stays reported)."""
        folder, name = os.path.split(rel)
        try:
            with _open_beneath(self._root, folder, _DIR) as dir_fd:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=dir_fd)
                fd = os.open(name, _WRITE, 0o600, dir_fd=dir_fd)
                try:
                    os.write(fd, self._original(rel))
                    mode, uid, gid = self._modes[rel]
                    os.fchown(fd, uid, gid)
                    os.fchmod(fd, mode)
                finally:
                    os.close(fd)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EISDIR):
                raise


def _ctime_beneath(root: Path, rel: str) -> int | None:
    try:
        folder, name = os.path.split(rel)
        with _open_beneath(root, folder, _DIR) as dir_fd:
            return os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ctime_ns
    except OSError:
        return None


@contextlib.contextmanager
def _open_beneath(root: Path, rel: str, flags: int) -> Iterator[int]:
    """Open `rel` under `root` one component at a time, following no link on the way (`rel`
    empty: `root` itself)."""
    parts = [p for p in rel.split("/") if p]
    fd = os.open(root, _DIR)
    try:
        for i, part in enumerate(parts):
            if part in (".", ".."):
                raise OSError(errno.EACCES, f"refused component {part!r}")
            last = i == len(parts) - 1
            nxt = os.open(part, flags if last else _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)
