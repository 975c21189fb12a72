"""Apply what the model clearly meant when a hunk's lines are a little off, and only then.

Small models copy context badly: a docstring line skipped, test output pasted into the hunk, a
line taken from an older version of the file, indentation off. When a hunk matches nowhere, we
align its lines with the file, tolerating per hunk at most `MAX_TOLERATED` of: a file line the
hunk skipped (`skipped`), a context line the file does not have (`extra`), a context line close
to the file's (`near`, similarity >= `NEAR`), and compare lines without their indentation. Lines
the hunk removes must be in the file as written (indentation aside). When exactly one place in
the file fits, the hunk's context and removed lines are rewritten from the file there; when two
fit, nothing is guessed. Every tolerance is said in a note for the model.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from tools.patch_diagnose import positions
from tools.patch_parse import FilePatch, Hunk

MAX_TOLERATED = 4
MAX_SKIP = 3  # file lines skipped in a row
NEAR = 0.75
_MAX_LINES = 20_000


@dataclass(frozen=True)
class _Fit:
    start: int  # 0-based line of the file where the hunk now starts
    lines: tuple[str, ...]  # the rewritten hunk lines
    skipped: int
    extra: int
    near: int
    indent: int  # lines matched only without their indentation


def realign(fp: FilePatch, lines: list[str]) -> list[str]:
    """Rewrite the hunks of `fp` that match nowhere but fit one place with tolerance; notes."""
    if len(lines) > _MAX_LINES:
        return []
    notes = []
    for number, hunk in enumerate(fp.hunks, 1):
        if not hunk.old_lines or positions(hunk, lines):
            continue
        fits = {fit.start: fit for fit in _fits(hunk, lines)}
        if len(fits) > 1:
            starts = sorted(f.start + 1 for f in fits.values())
            notes.append(
                f"hunk {number} of {fp.path} does not match exactly, and it would fit "
                f"{len(fits)} places (lines {', '.join(map(str, starts[:6]))}): not guessed."
            )
            continue
        if not fits:
            continue
        (fit,) = fits.values()
        hunk.lines = list(fit.lines)
        hunk.old_start = hunk.new_start = fit.start + 1
        notes.append(f"hunk {number} of {fp.path} applied at line {fit.start + 1}; " + _said(fit))
    return notes


def _said(fit: _Fit) -> str:
    parts = []
    if fit.skipped:
        parts.append(f"{fit.skipped} file line(s) the hunk skipped were kept as context")
    if fit.extra:
        parts.append(f"{fit.extra} context line(s) not in the file were dropped")
    if fit.near:
        parts.append(f"{fit.near} context line(s) differing from the file were taken as the file's")
    if fit.indent:
        parts.append(f"{fit.indent} line(s) matched only when indentation is ignored")
    return "tolerated: " + "; ".join(parts) + ". Read the file again before the next patch."


def _fits(hunk: Hunk, lines: list[str]) -> list[_Fit]:
    """Every start where the hunk fits with tolerance (the first old line the file has there)."""
    stripped = [x.strip() for x in lines]
    found = []
    for start in range(len(lines)):
        fit = _align(hunk, lines, stripped, start)
        if fit is not None:
            found.append(fit)
    return found


def _align(hunk: Hunk, lines: list[str], stripped: list[str], start: int) -> _Fit | None:
    out: list[str] = []
    deltas: list[int | None] = []  # per output line: indentation file minus hunk (matched lines)
    j = start
    skipped = extra = near = indent = exact = 0
    body = [(x[:1], x[1:]) for x in hunk.lines]
    first = True
    for mark, text in body:
        if mark == "+":
            out.append(mark + text)
            deltas.append(None)
            continue
        want = text.strip()
        ahead = _find(want, stripped, j, 0 if first else MAX_SKIP)
        if ahead is not None:
            if first and ahead != start:
                return None
            for k in range(j, ahead):
                out.append(" " + lines[k])
                deltas.append(None)
            skipped += ahead - j
            indent += lines[ahead] != text and lines[ahead].rstrip() != text.rstrip()
            out.append(mark + lines[ahead])
            deltas.append(_indent(lines[ahead]) - _indent(text) if want else None)
            j, exact, first = ahead + 1, exact + 1, False
            continue
        if mark == "-" or not want:
            if not want and mark == " ":
                extra += 1  # a blank context line the file does not have here
                continue
            return None
        if first:
            if _near(want, stripped, j):
                near += 1
                out.append(" " + lines[j])
                deltas.append(None)
                j, first = j + 1, False
                continue
            return None  # a fit starts with a line the file has
        if j < len(lines) and _near(want, stripped, j):
            near += 1
            out.append(" " + lines[j])
            deltas.append(None)
            j += 1
        else:
            extra += 1
        if skipped + extra + near > MAX_TOLERATED:
            return None
    old_count = sum(1 for m, _ in body if m in (" ", "-"))
    if skipped + extra + near > MAX_TOLERATED or exact < max(2, (old_count + 1) // 2):
        return None
    if not any(m == "-" for m, _ in body) and not any(m == "+" for m, _ in body):
        return None
    added = _shift_added(out, deltas)
    if added is None:
        return None
    return _Fit(
        start=start, lines=tuple(added), skipped=skipped, extra=extra, near=near, indent=indent
    )


def _shift_added(out: list[str], deltas: list[int | None]) -> list[str] | None:
    """Added lines moved by the indentation difference of the nearest matched line before them
    (after them for added lines that come first); None when a line lacks the spaces to remove."""
    known = [d for d in deltas if d is not None]
    if not known or not any(known):
        return out
    shifted, last = [], known[0]
    for line, delta in zip(out, deltas, strict=True):
        if delta is not None:
            last = delta
        if line[:1] != "+" or not line[1:].strip() or last == 0:
            shifted.append(line)
        elif last > 0:
            shifted.append("+" + " " * last + line[1:])
        elif line[1:].startswith(" " * -last):
            shifted.append("+" + line[1 - last :])
        else:
            return None
    return shifted


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


def _find(want: str, stripped: list[str], j: int, skip: int) -> int | None:
    if not want:
        return j if j < len(stripped) and not stripped[j] else None
    for k in range(j, min(j + skip + 1, len(stripped))):
        if stripped[k] == want:
            return k
    return None


def _near(want: str, stripped: list[str], j: int) -> bool:
    if j >= len(stripped) or not stripped[j] or not want:
        return False
    return difflib.SequenceMatcher(None, want, stripped[j], autojunk=False).ratio() >= NEAR
