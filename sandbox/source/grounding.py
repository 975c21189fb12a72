"""The code a first message shows: the definitions the failing tests reach, found by each
language's own parser (sandbox/ecosystems/*/grounding.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Grounding:
    """The code shown in the first message, and whether any of it is a whole function (not
    only a long class's outline)."""

    text: str = ""
    shows_code: bool = False
