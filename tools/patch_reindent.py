"""Repair one mistake small models make often: every line of a hunk indented by the same wrong
amount. The shift is applied only when it makes the hunk match exactly one place in the file."""

from __future__ import annotations

from tools.patch_diagnose import positions
from tools.patch_parse import FilePatch, Hunk

_SHIFTS = (4, 8, 2, 12, 1, 3, 16)


def reindent(fp: FilePatch, lines: list[str]) -> list[str]:
    """Shift hunks of `fp` that match nowhere, where one shift makes them match once; notes."""
    notes = []
    for number, hunk in enumerate(fp.hunks, 1):
        if not hunk.old_lines or positions(hunk, lines):
            continue
        for shift in (*(-s for s in _SHIFTS), *_SHIFTS):
            moved = _shifted(hunk, shift)
            if moved is not None and len(positions(moved, lines)) == 1:
                hunk.lines = moved.lines
                how = "more" if shift < 0 else "less"
                notes.append(
                    f"hunk {number} of {fp.path} was indented {abs(shift)} spaces "
                    f"{how} than the file; it was shifted to match."
                )
                break
    return notes


def _shifted(hunk: Hunk, shift: int) -> Hunk | None:
    """The hunk with `shift` spaces added (or removed) on every non-blank line; None if a line
    lacks the spaces to remove."""
    out = []
    for line in hunk.lines:
        mark, body = line[:1], line[1:]
        if not body.strip():
            out.append(line)
        elif shift > 0:
            out.append(mark + " " * shift + body)
        elif body.startswith(" " * -shift):
            out.append(mark + body[-shift:])
        else:
            return None
    return Hunk(
        old_start=hunk.old_start,
        new_start=hunk.new_start,
        section=hunk.section,
        numbered=hunk.numbered,
        lines=out,
    )
