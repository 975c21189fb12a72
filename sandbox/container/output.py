"""Collect a command's output: full log on disk (itself capped), head and tail in memory; the
run's secrets masked in both (policies/secrets.py) before either sees a byte."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import BinaryIO

from policies.secrets import NO_SECRETS, Secrets


class OutputCapture:
    """Keeps the first and last `keep_bytes // 2` bytes and writes everything to `log_path`."""

    def __init__(
        self,
        *,
        keep_bytes: int,
        log_path: Path | None,
        log_max_bytes: int,
        secrets: Secrets = NO_SECRETS,
    ) -> None:
        self._mask = secrets.stream()
        self._head_max = keep_bytes // 2
        self._tail_max = keep_bytes - self._head_max
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.total = 0
        self._log_max = log_max_bytes
        self._log: BinaryIO | None = None
        self.log_path = log_path
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(log_path, "wb")  # noqa: SIM115 - closed in close()

    def restart(self) -> None:
        """Forget what was taken: the command is run again from the start (its log too)."""
        self._mask.flush()
        self._head.clear()
        self._tail.clear()
        self._tail_len = 0
        self.total = 0
        if self._log is not None:
            self._log.seek(0)
            self._log.truncate()

    def feed(self, data: bytes) -> None:
        """Take the next chunk of output."""
        self._take(self._mask.feed(data))

    def _flush(self) -> None:
        """Take what the mask held back: the output has ended."""
        self._take(self._mask.flush())

    def _take(self, data: bytes) -> None:
        if self._log is not None and self.total < self._log_max:
            self._log.write(data[: self._log_max - self.total])
        self.total += len(data)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail.append(data)
            self._tail_len += len(data)
            while self._tail and self._tail_len - len(self._tail[0]) >= self._tail_max:
                self._tail_len -= len(self._tail.popleft())

    def close(self) -> None:
        """Close the log file, noting if it was cut."""
        self._flush()
        if self._log is not None:
            if self.total > self._log_max:
                self._log.write(f"\n[log cut at {self._log_max} of {self.total} bytes]\n".encode())
            self._log.close()
            self._log = None

    @property
    def truncated(self) -> bool:
        self._flush()
        return self.total > self._head_max + self._tail_max

    def text(self) -> str:
        """Head, a marker saying how much was cut and where the full log is, and tail."""
        self._flush()
        tail = b"".join(self._tail)
        if not self.truncated:
            return (bytes(self._head) + tail).decode("utf-8", "replace")
        tail = tail[-self._tail_max :]
        cut = self.total - len(self._head) - len(tail)
        where = f"; full log: {self.log_path}" if self.log_path else ""
        marker = f"\n[... {cut} bytes of output cut{where} ...]\n"
        head = bytes(self._head).decode("utf-8", "ignore")
        return head + marker + tail.decode("utf-8", "ignore")
