"""The code a first message shows: the definitions the failing tests reach, found by each
language's own parser (sandbox/ecosystems/*/grounding.py), shown the same way for all of them
(`render_chosen`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar


@dataclass(frozen=True)
class Grounding:
    """The code shown in the first message, whether any of it is a whole function (not only a
    long class's outline), and where each function shown whole is (path, first and last line),
    in the order shown: the search's suspects where no failure names a line of the code."""

    text: str = ""
    shows_code: bool = False
    functions: tuple[tuple[str, int, int], ...] = ()


class Definition(Protocol):
    """A definition a language's grounding found: where it is, and how it is shown."""

    @property
    def path(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    def render(self, lines: list[str]) -> str: ...


D = TypeVar("D", bound=Definition)


def render_chosen(
    chosen: Sequence[D],
    *,
    lines_of: Callable[[str], list[str] | None],
    max_lines: int,
    whole: Callable[[D], bool],
    key: Callable[[D], Hashable],
) -> Grounding:
    """The definitions chosen, in order, each once (by `key`) and none inside one already shown
    whole, within `max_lines` (the first always); `whole(d)`: d is shown in full (a function),
    not as an outline, which is what makes the grounding show code."""
    shown: list[str] = []
    used, code = 0, False
    seen: set[Hashable] = set()
    wholes: list[D] = []
    for d in chosen:
        inside = any(w.path == d.path and w.start <= d.start and d.end <= w.end for w in wholes)
        if key(d) in seen or inside:
            continue
        seen.add(key(d))
        lines = lines_of(d.path)
        if lines is None:
            continue
        text = d.render(lines)
        size = text.count("\n") + 1
        if shown and used + size > max_lines:
            continue
        shown.append(text)
        used += size
        if whole(d):
            wholes.append(d)
            code = True
    functions = tuple((w.path, w.start, w.end) for w in wholes)
    return Grounding(text="\n\n".join(shown), shows_code=code, functions=functions)
