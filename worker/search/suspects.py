"""The lines most likely to hold the bug, by spectrum-based fault localisation (Ochiai).

A small model given the right function often edits the wrong line of it. The harness knows more
than the model reads: which lines the failing tests run, and how many passing tests run them
too. A line every failing test runs and few passing ones do is the likeliest place of the bug
(Ochiai: ef / sqrt(F * (ef + ep))); among lines of equal score, a line that decides (a
condition) comes first and one that only structures the code last. Each first-edit sample after
the greedy one is pointed at the next ranked line, so samples spread over the places a bug can
be instead of repeating one guess; without samples, the first message lists them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from sandbox.source.numbered import numbered
from sandbox.source.places import LineCounts

MAX_SHOWN = 5  # suspects named in the first message
MAX_TEXT = 160  # characters of a line shown
AROUND = 2  # lines shown before and after a suspect line, where a sample is pointed at it
# Lines that only structure the code (`try:`, `else:`, a `def`, a closing bracket): among lines
# run by the same tests they come last, behind the lines that compute or decide something.
_STRUCTURE = re.compile(
    r"^(try|else|finally|except\b[^:]*|pass|def\b.*|class\b.*|@.*|[)\]}]+,?)\s*:?$"
)

# A line that decides: an if/elif/while/assert, or a comparison or boolean operator in it (the
# `in` of a `for` header is not one). Fixes of a condition are the commonest kind of one-line
# fix in studies of real projects' histories (Pan, Kim and Whitehead 2009: "if condition change").
_DECIDES = re.compile(
    r"^(if|elif|while|assert)\b|(?<![-<>])[<>]=?(?![<>])|[=!]=|\b(not|and|or|is|in)\b"
    r"|&&|\|\||^\}?\s*else\s+if\b"
)
_FOR_HEADER = re.compile(r"^(async\s+)?for\b.*?\bin\b")


@dataclass(frozen=True)
class Anchor:
    """A line a sample's added lines go beside: its number, its text (stripped, as a `replace`
    pins it) and the indentation the added lines take."""

    line: int
    text: str
    indent: str


@dataclass(frozen=True)
class Suspect:
    """One ranked line: where it is, its text, and why it ranks (failing and passing runs)."""

    path: str
    line: int
    text: str
    score: float
    ef: int
    ep: int
    around: str = ""  # the line with AROUND lines each side, numbered, the line marked ">"
    # Found in the failing tests' stack traces (sandbox/ecosystems/node/places.py), not by a traced
    # run: `ef` is how many failing tests' stacks pass through the line, `ep` is not known.
    from_stack: bool = False
    # In a function the failing tests call, where no failure names a line (reached.py): no
    # counts behind it.
    reached: bool = False
    # The indentation a line added right after this one takes (moves.py's insertion): the next
    # line's where this one opens a block (`if x:`, `for (...) {`), else this line's own.
    indent_after: str = ""
    # The `return` (`raise`, `throw`, a panic, Rust's last expression) this line is part of, by
    # the language's own parser (Ecosystem.ending_statement): a line added goes before its
    # first line, at its indentation (moves.py's insertion). None: the line is no such part.
    ending: Anchor | None = None

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def is_test_file(rel: str) -> bool:
    """A test module or pytest configuration, by name (the ranking keeps source lines only)."""
    path = PurePosixPath(rel)
    name = path.name
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
        or any(part in ("tests", "test", "testing") for part in path.parts[:-1])
    )


def rank(
    counts: LineCounts,
    *,
    workspace: Path,
    allowed: Callable[[str], bool],
    limit: int = 12,
) -> list[Suspect]:
    """The source lines failing tests ran, most suspicious first; lines of test files, of files
    `allowed` refuses, and blank or comment lines are left out."""
    if not counts:
        return []
    found: list[Suspect] = []
    texts: dict[str, list[str]] = {}
    for rel, lines in counts.lines.items():
        if rel.endswith(".py") is False or is_test_file(rel) or not allowed(rel):
            continue
        text = read_lines(workspace, rel)
        if text is None:
            continue
        texts[rel] = text
        for number, (ef, ep) in lines.items():
            if ef == 0 or number > len(text):
                continue
            source = text[number - 1].strip()
            if not source or source.startswith("#"):
                continue
            score = ef / math.sqrt(counts.failed * (ef + ep))
            found.append(Suspect(rel, number, source[:MAX_TEXT], score, ef, ep))
    found.sort(key=lambda s: (-s.score, kind(s.text), s.ep, -s.ef, s.path, s.line))
    # The lines around, for the suspects kept only (a traced run can reach thousands of lines).
    return [
        replace(
            s,
            around=lines_around(texts[s.path], s.line),
            indent_after=indent_after(texts[s.path], s.line),
        )
        for s in found[:limit]
    ]


def kind(text: str) -> int:
    """Among lines run by the same tests: 0 for a line that decides (a condition, a
    comparison), 1 for other lines, 2 for lines that only structure the code."""
    if _STRUCTURE.match(text):
        return 2
    return 0 if _DECIDES.search(_FOR_HEADER.sub("", text, count=1)) else 1


def render(suspects: Sequence[Suspect], *, failed: int, limit: int = MAX_SHOWN) -> str:
    """The first message's list: where, the line, and the counts behind its rank."""
    if not suspects:
        return ""
    rows = [f"  {s.where()}: {s.text}   ({_counts(s, failed)})" for s in suspects[:limit]]
    return "\n".join(rows)


def _counts(s: Suspect, failed: int) -> str:
    if s.reached:
        return "in a function the failing tests call"
    if s.from_stack:
        return f"in the stack of {s.ef} of {failed} failing tests"
    return f"run by {s.ef} of {failed} failing tests, {s.ep} passing"


def lines_around(text: list[str], number: int) -> str:
    """Line `number` of `text` with AROUND lines each side, numbered, the line marked `>`: what
    a pointed sample shows of its line (bench/lines.py builds the same prompt)."""
    first, last = max(1, number - AROUND), min(len(text), number + AROUND)
    return numbered(text, range(first, last + 1), mark=number, text=lambda s: s[:MAX_TEXT])


def indent_after(text: list[str], number: int) -> str:
    """The indentation of a line added after line `number` of `text`: the next code line's
    where line `number` opens a block (ends in `:` or `{`) and that line is deeper, else its own.

    >>> indent_after(["if x:", "    y = 1"], 1), indent_after(["\\tx := 1", "\\treturn x"], 1)
    ('    ', '\\t')
    """
    if not 0 < number <= len(text):
        return ""
    line = text[number - 1]
    own = line[: len(line) - len(line.lstrip())]
    below = next((ln for ln in text[number:] if ln.strip()), "")
    deeper = below[: len(below) - len(below.lstrip())]
    opens = line.split("//")[0].split(" #")[0].rstrip().endswith((":", "{"))
    return deeper if opens and len(deeper) > len(own) else own


def read_lines(workspace: Path, rel: str) -> list[str] | None:
    path = workspace / rel
    try:
        if path.is_symlink() or not path.resolve().is_relative_to(workspace.resolve()):
            return None
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, ValueError):
        return None
