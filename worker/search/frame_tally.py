"""The lines failing tests name (in a stack, a compiler error, an assertion's place), tallied
and ranked into suspects: scored by how many failing tests name the line (ef / F), and among
equals the innermost first. Each language package finds its own places
(`Ecosystem.failure_places`: sandbox/ecosystems/node/places.py, go/places.py); this ranks
them the same way for every language."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from sandbox.source.places import Place
from worker.loop.trace import Trace
from worker.search.suspects import MAX_TEXT, Suspect, indent_after, lines_around


@dataclass
class _Seen:
    """One line's tally over the failing tests."""

    ef: int  # failing tests that name it
    depth: int  # its least depth among them (0: the first place in the repository's own code)
    order: int  # when it was first met


class LineTally:
    """Each line named, by how many failing tests and how deep; ranked most tests first, then
    the least deep, then the first met."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int], _Seen] = {}

    def add(self, path: str, line: int, depth: int) -> None:
        """One failing test names `path:line` at `depth`."""
        seen = self._seen.get((path, line))
        if seen is None:
            self._seen[(path, line)] = _Seen(ef=1, depth=depth, order=len(self._seen))
        else:
            seen.ef += 1
            seen.depth = min(seen.depth, depth)

    def ranked(
        self, texts_of: Mapping[str, list[str] | None], *, failed: int, limit: int
    ) -> list[Suspect]:
        """The `limit` first lines as suspects, scored by their share of `failed` tests;
        `texts_of` holds each file's lines (every tallied file is there)."""
        total = max(failed, 1)
        order = sorted(self._seen.items(), key=lambda kv: (-kv[1].ef, kv[1].depth, kv[1].order))
        out = []
        for (path, line), tally in order[:limit]:
            lines = texts_of[path] or []
            out.append(
                Suspect(
                    path,
                    line,
                    lines[line - 1].strip()[:MAX_TEXT],
                    tally.ef / total,
                    tally.ef,
                    0,
                    around=lines_around(lines, line),
                    indent_after=indent_after(lines, line),
                    from_stack=True,
                )
            )
        return out


def rank_places(
    places: list[list[Place]],
    *,
    lines: Mapping[str, list[str]],
    failed: int,
    limit: int = 12,
) -> list[Suspect]:
    """The lines `places` names (one list per failing test), most failing tests first, then
    the innermost, then the first met; scored as a share of `failed` tests. `lines`: each
    named file's lines, as the language read them."""
    tally = LineTally()
    for one in places:
        for place in one:
            tally.add(place.path, place.line, place.depth)
    return tally.ranked(lines, failed=failed or len(places), limit=limit)


def trace_suspects(
    trace: Trace,
    suspects: list[Suspect],
    *,
    started: float,
    failed: int,
    passed: int,
    why_empty: str,
    source: str,
) -> list[Suspect]:
    """The `suspects` trace event (as worker/search/locate.py writes for Python); `suspects`."""
    trace.event(
        "suspects",
        duration_s=round(time.monotonic() - started, 3),
        failed=failed,
        passed=passed,
        why_empty="" if suspects else why_empty,
        source=source,
        lines=[{"where": s.where(), "text": s.text, "ef": s.ef, "ep": None} for s in suspects],
    )
    return suspects
