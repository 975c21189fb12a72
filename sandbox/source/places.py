"""Where failing tests point in the repository's own code, as a language package reads it: the
places their failure texts name (`Place`), or, where a language traces a run, how many failing
and passing tests ran each line (`LineCounts`). The search (worker/search/) ranks either into
suspect lines; it never parses a language itself."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Place:
    """A line of the repository's own source that one failing test's text names; `depth` 0 is
    the innermost (where the error was raised), a guard's line shares its frame's depth."""

    path: str
    line: int
    depth: int


@dataclass(frozen=True)
class LineCounts:
    """Per file and line: how many failing (ef) and passing (ep) tests ran it."""

    failed: int = 0
    passed: int = 0
    lines: Mapping[str, Mapping[int, tuple[int, int]]] = field(default_factory=dict)
    why_empty: str = ""  # why there are no counts, when there are none

    def __bool__(self) -> bool:
        return self.failed > 0 and bool(self.lines)


def no_code(line: str) -> bool:
    """A blank line or a comment's (in the C family's syntax)."""
    text = line.strip()
    return not text or text.startswith(("//", "/*", "*"))
