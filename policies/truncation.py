"""One truncation rule for every output that reaches the model or the terminal."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Truncation:
    """Keep the head and the tail of a text, within a byte and a line budget.

    The result, marker included, fits in `max_bytes` as long as `max_bytes` is larger than the
    marker (about 40 bytes plus the length of `full_path`); the marker replaces a kept line.

    >>> t = Truncation(max_bytes=60, max_lines=100)
    >>> print(t.apply("a" * 100).text)
    aaaaaaaaaaaaa
    [... 74 bytes cut ...]
    aaaaaaaaaaaaa
    >>> print(Truncation(max_lines=3).apply("1\\n2\\n3\\n4\\n5\\n", full_path="out.log").text)
    1
    [... 3 lines, 6 bytes cut; full output: out.log ...]
    5
    <BLANKLINE>
    >>> t.apply("short").truncated
    False
    >>> Truncation(max_lines=0)
    Traceback (most recent call last):
    ...
    ValueError: max_bytes and max_lines must be positive
    """

    max_bytes: int = 16_000
    max_lines: int = 400
    head_fraction: float = 0.5

    def __post_init__(self) -> None:
        if self.max_bytes <= 0 or self.max_lines <= 0:
            raise ValueError("max_bytes and max_lines must be positive")
        if not 0.0 < self.head_fraction < 1.0:
            raise ValueError("head_fraction must be between 0 and 1")

    def apply(self, text: str, *, full_path: str | None = None) -> Truncated:
        """Cut `text` to the budget; the marker says what was cut and where the full text is."""
        data = text.encode("utf-8", "replace")
        lines = text.splitlines(keepends=True)
        total_bytes, total_lines = len(data), len(lines)
        if total_bytes <= self.max_bytes and total_lines <= self.max_lines:
            return Truncated(
                text=text, truncated=False, total_bytes=total_bytes, total_lines=total_lines
            )
        where = f"; full output: {full_path}" if full_path else ""
        # Room for the widest marker (counts cannot exceed the totals) and its newlines.
        marker_room = len(_marker(total_lines, total_bytes, where).encode()) + 2
        byte_budget = max(0, self.max_bytes - marker_room)
        line_budget = self.max_lines - 1
        if total_lines > line_budget:
            head_n = int(line_budget * self.head_fraction)
            head = "".join(lines[:head_n]).encode("utf-8", "replace")
            tail = "".join(lines[total_lines - (line_budget - head_n) :]).encode("utf-8", "replace")
            tail = tail if line_budget - head_n else b""
        else:
            head, tail = data, b""
        if len(head) + len(tail) > byte_budget:
            head, tail = self._split_bytes(head, tail, byte_budget)
        head_s, tail_s = head.decode("utf-8", "ignore"), tail.decode("utf-8", "ignore")
        cut_bytes = total_bytes - len(head_s.encode()) - len(tail_s.encode())
        cut_lines = max(0, total_lines - len(head_s.splitlines()) - len(tail_s.splitlines()))
        sep = "\n" if head_s and not head_s.endswith("\n") else ""
        out = f"{head_s}{sep}{_marker(cut_lines, cut_bytes, where)}\n{tail_s}"
        return Truncated(text=out, truncated=True, total_bytes=total_bytes, total_lines=total_lines)

    def _split_bytes(self, head: bytes, tail: bytes, budget: int) -> tuple[bytes, bytes]:
        """Share `budget` between head and tail; one lone segment gives up its middle."""
        if not tail:
            head, tail = head, head
        head_budget = int(budget * self.head_fraction)
        keep_head = min(len(head), max(head_budget, budget - len(tail)))
        keep_tail = min(len(tail), budget - keep_head)
        head = _to_line_end(head[:keep_head])
        tail = _from_line_start(tail[len(tail) - keep_tail :]) if keep_tail else b""
        return head, tail


def _marker(lines: int, nbytes: int, where: str) -> str:
    what = f"{lines} lines, {nbytes} bytes" if lines else f"{nbytes} bytes"
    return f"[... {what} cut{where} ...]"


def _to_line_end(head: bytes) -> bytes:
    """Drop a trailing partial line, unless that would drop more than half of the head."""
    cut = head.rfind(b"\n") + 1
    return head[:cut] if cut * 2 >= len(head) else head


def _from_line_start(tail: bytes) -> bytes:
    """Drop a leading partial line, unless that would drop more than half of the tail."""
    start = tail.find(b"\n") + 1
    return tail[start:] if 0 < start and start * 2 <= len(tail) else tail


@dataclass(frozen=True, kw_only=True)
class Truncated:
    """A text after truncation, with the size of the original."""

    text: str
    truncated: bool
    total_bytes: int
    total_lines: int
