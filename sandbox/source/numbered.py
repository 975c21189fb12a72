"""Lines as read_file numbers them (`12| text`), the one form every observation and prompt
that quotes a file uses, so the model copies lines from any of them the same way."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

__all__ = ["numbered"]


def numbered(
    lines: Sequence[str],
    numbers: Iterable[int],
    *,
    width: int | None = None,
    mark: int | None = None,
    text: Callable[[str], str] = lambda line: line,
) -> str:
    """The lines at `numbers` (1-based), each as `n| text`, numbers right-aligned to `width`
    (default: the widest of them); with `mark`, a first column holds `>` at that line.

    >>> print(numbered(["a", "b", "c"], range(2, 4), mark=3, width=2))
      2| b
    > 3| c
    """
    wanted = list(numbers)
    if width is None:
        width = len(str(max(wanted, default=0)))
    flag = (lambda n: ">" if n == mark else " ") if mark is not None else (lambda n: "")
    return "\n".join(f"{flag(n)}{n:>{width}}| {text(lines[n - 1])}" for n in wanted)
