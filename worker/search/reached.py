"""Suspect lines where the failures name none: the lines of the functions the failing tests
call, as the first message shows them (sandbox/source/grounding.py's `functions`).

A wrong value returned leaves no frame of the code in the failing test's stack (the assertion
fails in the test), so a language that reads its failures' places (JavaScript, Go, Rust, Java)
finds no suspect line, and the search's samples went unpointed: on the Rust public task
strsim-generic_jaro_winkler-204-compare the bundled model spent its 11 answers on free-form
edits, 8 of them refused. The functions the failing tests call are where such a bug is; their
lines that decide (a condition, a comparison) come first, as among equals in suspects.py, then
the others, each function's in order, the first function shown first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from sandbox.source.places import no_code
from worker.search.suspects import (
    MAX_TEXT,
    Suspect,
    indent_after,
    kind,
    lines_around,
    read_lines,
)

LIMIT = 12


def reached_suspects(
    functions: Sequence[tuple[str, int, int]],
    *,
    workspace: Path,
    allowed: Callable[[str], bool],
    limit: int = LIMIT,
) -> list[Suspect]:
    """The body lines of `functions` (path, first and last line, its comments included),
    deciding lines first; lines of files `allowed` refuses, blank and comment lines, and the
    lines that only structure the code left out."""
    found: list[tuple[int, int, Suspect]] = []
    for order, (path, start, end) in enumerate(functions):
        lines = read_lines(workspace, path) if allowed(path) else None
        if lines is None:
            continue
        for number in _body(lines, start, end):
            text = lines[number - 1].strip()
            rank = kind(text)
            comment = text.startswith("#") and not text.startswith("#[")  # Python's
            if not text or no_code(text) or comment or rank == 2:
                continue
            suspect = Suspect(path, number, text[:MAX_TEXT], 0.0, 0, 0, reached=True)
            found.append((rank, order, suspect))
    found.sort(key=lambda f: (f[0], f[1], f[2].line))
    out = []
    for _rank, _order, s in found[:limit]:
        source = read_lines(workspace, s.path) or []
        out.append(
            replace(
                s, around=lines_around(source, s.line), indent_after=indent_after(source, s.line)
            )
        )
    return out


def _body(lines: list[str], start: int, end: int) -> range:
    """The line numbers of a function's body: after its header (the first line that ends in
    `{` or `:`), or all of it when it is on one line (`func Add(a, b int) int { return a + b }`)."""
    last = min(end, len(lines))
    for number in range(start, last + 1):
        if lines[number - 1].split("//")[0].rstrip().endswith(("{", ":")):
            return range(number + 1, last + 1)
    return range(start, last + 1)
