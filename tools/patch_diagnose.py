"""Explain a hunk that does not apply, and refuse hunks whose place in the file is ambiguous.

The model gets what it needs to fix the hunk: which one failed, the first line that differs, and
the real, numbered lines of the file where the hunk was most likely meant to go.
"""

from __future__ import annotations

import difflib

from sandbox.source.numbered import numbered
from tools.patch_parse import FilePatch, Hunk

WINDOW = 12
_MAX_SCAN_LINES = 50_000


def _norm(line: str) -> str:
    return line.rstrip()


def positions(hunk: Hunk, lines: list[str]) -> list[int]:
    """1-based line numbers where the hunk's old lines match (trailing whitespace ignored)."""
    old = [_norm(x) for x in hunk.old_lines]
    if not old or len(lines) > _MAX_SCAN_LINES:
        return []
    normed = [_norm(x) for x in lines]
    first = old[0]
    return [
        i + 1
        for i in range(len(normed) - len(old) + 1)
        if normed[i] == first and normed[i : i + len(old)] == old
    ]


def ambiguous(fp: FilePatch, lines: list[str]) -> str | None:
    """A message when a hunk matches several places and its @@ line points at none of them."""
    for number, hunk in enumerate(fp.hunks, 1):
        found = positions(hunk, lines)
        if len(found) > 1 and (not hunk.numbered or hunk.old_start not in found):
            where = ", ".join(str(n) for n in found[:8])
            said = "it has no line number"
            if hunk.numbered:
                said = f"its @@ line says {hunk.old_start}"
            return (
                f"hunk {number} of {fp.path} matches the file in {len(found)} places "
                f"(lines {where}) and {said}. Add more unchanged context lines so that it "
                "matches one place only, or give the right line numbers in its @@ line."
            )
    return None


def failing_hunk(fp: FilePatch, lines: list[str], git_line: int | None) -> int:
    """Index of the hunk that failed: the one git names by line, else the first not found."""
    if git_line is not None:
        for index, hunk in enumerate(fp.hunks):
            if hunk.old_start == git_line and not positions(hunk, lines):
                return index
    for index, hunk in enumerate(fp.hunks):
        if hunk.old_lines and not positions(hunk, lines):
            return index
    return 0


def explain(fp: FilePatch, index: int, lines: list[str]) -> str:
    """Which hunk failed, the first differing line, and the file's real lines near it."""
    hunk = fp.hunks[index]
    old = hunk.old_lines
    header = f"@@ -{hunk.old_start} @@" if hunk.numbered else "@@"
    head = f"hunk {index + 1} of {fp.path} ({header}) does not match the file."
    if not lines:
        return f"{head} The file is empty."
    start = _best_start(old, lines, hunk.old_start)
    detail = ""
    for offset, want in enumerate(old):
        n = start + offset
        have = lines[n - 1] if n <= len(lines) else None
        if have is None or _norm(have) != _norm(want):
            shown = "<end of file>" if have is None else repr(have)
            detail = f"\nAt line {n} the hunk expects {want!r} but the file has {shown}."
            break
    lo = max(1, start - 2)
    hi = min(len(lines), max(lo + WINDOW - 1, start + len(old) + 1), lo + 30)
    window = numbered(lines, range(lo, hi + 1))
    return (
        f"{head}{detail}\nThe file at lines {lo}-{hi} (of {len(lines)}):\n{window}\n"
        "Copy the context and '-' lines exactly from the file, then send the whole patch again."
    )


def _best_start(old: list[str], lines: list[str], said: int) -> int:
    """Where the hunk most likely belongs: its first non-blank old line, nearest to `said`."""
    anchor_at = next((i for i, x in enumerate(old) if x.strip()), None)
    if anchor_at is None:
        return min(max(said, 1), len(lines))
    anchor = old[anchor_at].strip()
    exact = [i + 1 for i, x in enumerate(lines) if x.strip() == anchor]
    if exact:
        best = min(exact, key=lambda n: abs(n - anchor_at - said))
        return max(1, best - anchor_at)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(anchor)
    best_ratio, best_n = 0.0, said
    for n, line in enumerate(lines[:_MAX_SCAN_LINES], 1):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() > best_ratio and matcher.ratio() > best_ratio:
            best_ratio, best_n = matcher.ratio(), n
    if best_ratio >= 0.6:
        return max(1, best_n - anchor_at)
    return min(max(said, 1), len(lines))
