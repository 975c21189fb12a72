"""A command's capture file (its JUnit report) as it comes back from the sandbox: whole, or
refused with the reason; never cut short.

From a container, the runner (sandbox/container/runner.py) sends the file zlib-compressed in its
one-line
result; here it is inflated with a hard cap, so that a file that compresses a thousand to one
(written by the code under test, say) cannot fill the worker's memory. The local backend reads
the file from disk with the same cap. What pytest writes for 100,000 tests is about 16 MB and
compresses to about 0.6 MB (`bench/large_report.py`), far below either cap.

>>> packed = zlib.compress(b"<testsuites/>")
>>> inflate(packed, name="report.xml")
b'<testsuites/>'
>>> inflate(zlib.compress(bytes(2000)), name="report.xml", limit=1000)
Traceback (most recent call last):
...
sandbox.container.capture.CaptureRefused: report.xml is too large (over 1000 bytes)
"""

from __future__ import annotations

import binascii
import os
import zlib
from pathlib import Path

from sandbox.container.runner import CAPTURE_MAX, COMPRESSED_MAX

MIB = 1024 * 1024
#: The runner's whole result line: the capture in base64 (4 characters for 3 bytes) and a few
#: fields. What comes past it is dropped unread, and the command reads as having no result.
TRAILER_MAX = COMPRESSED_MAX // 3 * 4 + MIB


class CaptureRefused(ValueError):
    """The capture file came back too large, or damaged; the message says which, in words."""


def _size(limit: int) -> str:
    return f"{limit // MIB} MiB" if limit % MIB == 0 else f"{limit} bytes"


def refusal(name: str, over: str) -> str:
    """Why the runner sent no capture (`over`: "size" or "compressed", as its result says)."""
    if over == "compressed":
        return f"{name} is too large (over {_size(COMPRESSED_MAX)} compressed)"
    return f"{name} is too large (over {_size(CAPTURE_MAX)})"


def inflate(packed: bytes, *, name: str, limit: int = CAPTURE_MAX) -> bytes:
    """The bytes the runner compressed; CaptureRefused past `limit` or when damaged."""
    unpacker = zlib.decompressobj()
    try:
        data = unpacker.decompress(packed, limit + 1)
    except zlib.error as exc:
        raise CaptureRefused(f"{name} came back damaged ({exc})") from exc
    if len(data) > limit or unpacker.unconsumed_tail:
        raise CaptureRefused(f"{name} is too large (over {_size(limit)})")
    if not unpacker.eof:
        raise CaptureRefused(f"{name} came back cut short")
    return data


def from_trailer(encoded: object, over: object, *, name: str) -> tuple[bytes | None, str]:
    """(the file, "") from the runner's `capture` and `capture_over` fields, or (None, why)."""
    if isinstance(over, str) and over:
        return None, refusal(name, over)
    if not isinstance(encoded, str):
        return None, ""  # no file was written
    try:
        return inflate(binascii.a2b_base64(encoded), name=name), ""
    except binascii.Error as exc:
        return None, f"{name} came back damaged ({exc})"
    except CaptureRefused as exc:
        return None, str(exc)


def read_capture_file(path: Path, *, name: str) -> tuple[bytes | None, str]:
    """(the file, "") read from disk up to CAPTURE_MAX, as the runner would; (None, why) for a
    larger one, (None, "") for none at all."""
    chunks = []
    size = 0
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size > CAPTURE_MAX:
                return None, refusal(name, "size")
            while chunk := f.read(MIB):  # not read(CAPTURE_MAX): that allocates it at once
                size += len(chunk)
                if size > CAPTURE_MAX:
                    return None, refusal(name, "size")
                chunks.append(chunk)
    except OSError:
        return None, ""
    return b"".join(chunks), ""
