"""One truncation rule for every output that reaches the model or the terminal."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Truncation:
    """Keep the head and the tail of a text, within a byte and a line budget.

    >>> t = Truncation(max_bytes=20, max_lines=100)
    >>> print(t.apply("a" * 50).text)
    aaaaaaaaaa
    [... 30 bytes cut ...]
    aaaaaaaaaa
    >>> t.apply("short").truncated
    False
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
        if len(data) <= self.max_bytes and len(lines) <= self.max_lines:
            return Truncated(text=text, truncated=False, total_bytes=len(data), total_lines=len(lines))
        head_lines = max(1, int(self.max_lines * self.head_fraction))
        tail_lines = max(1, self.max_lines - head_lines)
        if len(lines) > self.max_lines:
            head_l, tail_l = lines[:head_lines], lines[-tail_lines:]
        else:
            head_l, tail_l = lines, []
        head = "".join(head_l).encode("utf-8", "replace")
        tail = "".join(tail_l).encode("utf-8", "replace")
        head_budget = int(self.max_bytes * self.head_fraction)
        tail_budget = self.max_bytes - head_budget
        if not tail_l:
            tail = head[-tail_budget:] if len(head) > self.max_bytes else b""
        head = head[:head_budget] if len(head) + len(tail) > self.max_bytes else head
        tail = tail[-tail_budget:] if len(head) + len(tail) > self.max_bytes else tail
        cut_bytes = len(data) - len(head) - len(tail)
        where = f"; full output: {full_path}" if full_path else ""
        marker = f"[... {cut_bytes} bytes cut{where} ...]"
        head_s = head.decode("utf-8", "ignore")
        tail_s = tail.decode("utf-8", "ignore")
        sep = "" if head_s.endswith("\n") or not head_s else "\n"
        out = f"{head_s}{sep}{marker}\n{tail_s}"
        return Truncated(text=out, truncated=True, total_bytes=len(data), total_lines=len(lines))


@dataclass(frozen=True, kw_only=True)
class Truncated:
    """A text after truncation, with the size of the original."""

    text: str
    truncated: bool
    total_bytes: int
    total_lines: int
