"""`replace {path, old, new}`: change one exact piece of a file into another.

A second edit form for models that write unified diffs badly: the model copies the lines it wants
changed (`old`) and writes what they become (`new`). `old` must fit exactly one place in the file:
as written, or else line by line with indentation, trailing spaces and read_file's line-number
prefixes (`12| `) set aside; then `new` takes the file's indentation there. Two places that fit
are never guessed between. The change itself is made by `apply_patch` (a diff computed here), so
the path policy, the syntax check, the rollback and the sandbox user are the same.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from policies.paths import PathRefused
from sandbox.source.numbered import numbered
from tools import apply_patch
from tools.base import Observation, Tool, ToolContext, argument, failed, looks_binary, refused
from tools.search import readable_files

MAX_FILE_BYTES = 2 * 1024 * 1024
SHOW_WHOLE_LINES = 60  # a file this short is shown whole when old is not in it
ELSEWHERE_FILES = 2_000  # files looked through for old when it is not in the file named
NOT_FOUND = "old was not found in the file; nothing was changed."
_NUMBERED = re.compile(r"^\s*\d+\| ?")

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File path relative to the repository root."},
        "old": {
            "type": "string",
            "minLength": 1,
            "description": "The exact lines to change, copied from the file.",
        },
        "new": {"type": "string", "description": "What those lines become."},
        "line": {
            "type": "integer",
            "minimum": 1,
            "description": "Only if old appears more than once: a line number of the place meant.",
        },
    },
    "required": ["path", "old", "new"],
    "additionalProperties": False,
}

# No example values: the small model copies an example's text into its calls verbatim.
DESCRIPTION = (
    "Replace one piece of a file with new text. old: one or a few whole lines copied exactly "
    "from the file (they must appear once). new: what those lines become."
)


@dataclass(frozen=True)
class _Place:
    start: int  # first line (0-based) of the file replaced
    end: int  # one past the last line replaced
    new_lines: list[str]
    note: str


def execute(args: dict[str, Any], ctx: ToolContext) -> Observation:
    """Find `old` once in `path`, write `new` there through apply_patch, and say what was done."""
    rel: str = args["path"]
    old: str = args["old"]
    new: str = args["new"]
    try:
        real = ctx.paths.resolve(ctx.workspace, rel, write=True)
    except PathRefused as exc:
        return refused(rel, exc.decision)
    if not real.is_file():
        return failed(
            f"no such file: {rel!r}. replace changes an existing file; read_file or list_dir "
            "shows the files."
        )
    data = real.read_bytes()
    if len(data) > MAX_FILE_BYTES or looks_binary(data):
        return failed(f"{rel} is not a text file replace can edit; use apply_patch.")
    text = data.decode("utf-8", "replace")
    if old == new:
        return failed("old and new are the same: nothing would change.")
    line = args.get("line")
    changed, note = _replaced(text, old, new, line if isinstance(line, int) else None)
    if changed is None:
        if note.startswith(NOT_FOUND):
            note = _elsewhere(ctx, rel, old) or note
        return failed(note, path=rel)
    diff = "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True),
            changed.splitlines(keepends=True),
            fromfile=f"a/{rel}",
            tofile=f"b/{rel}",
            n=3,
        )
    )
    if not diff:
        return failed("the replacement changes nothing in the file.")
    observation = apply_patch.execute({"patch": diff}, ctx)
    shown = f"{observation.text}\n{note}" if note and observation.ok else observation.text
    return replace(observation, text=shown, data={**observation.data, "tolerated": note})


def _ambiguous(text: str, old: str, count: int, shown: int = 3) -> str:
    """Where `old` is, with a line above and below each place: the model picks one and copies
    the line that tells it apart (the bundled model, told only "include more lines", sent the
    same `old` again)."""
    lines = text.splitlines()
    size = _size(old)
    starts = [text.count("\n", 0, at) for at in _occurrences(text, old)]
    width = len(str(min(len(lines), starts[-1] + size + 1)))
    places = [
        numbered(lines, range(max(1, start), min(len(lines), start + size + 1) + 1), width=width)
        for start in starts[:shown]
    ]
    where = ", ".join(str(n + 1) for n in starts[:12]) + (", ..." if len(starts) > 12 else "")
    more = f"\n[... {len(starts) - shown} more places ...]" if len(starts) > shown else ""
    return (
        f"old appears {count} times in the file (lines {where}); nothing was changed. Add to "
        "old the line above or below it at the place you mean, so that it matches there only "
        "(or give line, the number of a line of that place):\n" + "\n---\n".join(places) + more
    )


def _replaced(text: str, old: str, new: str, line: int | None = None) -> tuple[str | None, str]:
    """The file with `old` replaced once, and a note on what was tolerated; or None and why.
    Where `old` fits several places, `line` (1-based) picks the one place that holds it."""
    count = text.count(old)
    if count == 1:
        return text.replace(old, new, 1), ""
    if count > 1:
        size = _size(old)
        meant = [a for a in _occurrences(text, old) if _holds(text.count("\n", 0, a), size, line)]
        if len(meant) != 1:
            return None, _ambiguous(text, old, count)
        at = meant[0]
        note = f"(replace: old appears {count} times; changed the one at line {line}, as asked)"
        return text[:at] + new + text[at + len(old) :], note
    lines = text.splitlines()
    places = _places(lines, old, new)
    if len(places) > 1 and line is not None:
        places = [p for p in places if _holds(p.start, p.end - p.start, line)] or places
    if len(places) == 1:
        place = places[0]
        out = lines[: place.start] + place.new_lines + lines[place.end :]
        joined = "\n".join(out) + ("\n" if text.endswith("\n") else "")
        return joined, place.note
    if len(places) > 1:
        starts = ", ".join(str(p.start + 1) for p in places[:6])
        return None, (
            f"old fits {len(places)} places (lines {starts}) once indentation is set aside; "
            "nothing was changed. Include more surrounding lines."
        )
    done = _already_there(text, lines, new)
    return None, done or _not_found(lines, old)


def _size(old: str) -> int:
    """How many lines `old` spans."""
    return old.count("\n") + (0 if old.endswith("\n") else 1)


def _occurrences(text: str, old: str) -> list[int]:
    found, at = [], text.find(old)
    while at != -1:
        found.append(at)
        at = text.find(old, at + 1)
    return found


def _holds(start: int, size: int, line: int | None) -> bool:
    """Whether the place of `size` lines from 0-based `start` holds 1-based `line`."""
    return line is not None and start < line <= start + size


def _places(lines: list[str], old: str, new: str) -> list[_Place]:
    """Where `old`'s lines fit: compared without indentation or line-number prefixes, or else
    also without the spaces inside lines and with ' and " taken as one quote."""
    old_lines, new_lines, unnumbered = _without_numbers(old.splitlines(), new.splitlines())
    while old_lines and not old_lines[0].strip():
        old_lines = old_lines[1:]
    while old_lines and not old_lines[-1].strip():
        old_lines = old_lines[:-1]
    if not old_lines:
        return []
    for loose in (False, True):
        key = loosened if loose else str.strip
        wanted = [key(line) for line in old_lines]
        size = len(wanted)
        starts = [
            start
            for start in range(len(lines) - size + 1)
            if all(key(lines[start + i]) == wanted[i] for i in range(size))
        ]
        if starts:
            return [
                _place(lines, start, old_lines, new_lines, unnumbered=unnumbered, loose=loose)
                for start in starts
            ]
    return []


def _place(
    lines: list[str],
    start: int,
    old_lines: list[str],
    new_lines: list[str],
    *,
    unnumbered: bool,
    loose: bool,
) -> _Place:
    size = len(old_lines)
    first = _first_text(old_lines)
    shift = _indent(lines[start + first]) - _indent(old_lines[first])
    notes = ["line-number prefixes were removed from old and new"] if unnumbered else []
    if shift:
        notes.append(f"indentation was shifted by {shift} spaces to match the file")
    found = lines[start : start + size]
    if loose:
        notes.append("old matched once spaces inside lines and quote style were set aside")
        new_lines = _requoted(new_lines, old_lines, found)
    elif shift == 0 and found != old_lines:
        notes.append("whitespace differences between old and the file were ignored")
    return _Place(
        start=start,
        end=start + size,
        new_lines=[_shifted(line, shift) for line in new_lines],
        note=f"(replace: matched at line {start + 1}; " + "; ".join(notes) + ")",
    )


def loosened(line: str) -> str:
    """A line compared as a small model copies it: spaces and quote style set aside."""
    return re.sub(r"\s+", "", line).replace("'", '"')


def _requoted(new_lines: list[str], old_lines: list[str], found: list[str]) -> list[str]:
    """The model wrote one quote where the file has the other: `new` takes the file's."""
    old_text, file_text = "\n".join(old_lines), "\n".join(found)
    for mine, theirs in (("'", '"'), ('"', "'")):
        if mine in old_text and theirs not in old_text and mine not in file_text:
            return [line.replace(mine, theirs) for line in new_lines]
    return new_lines


def _without_numbers(old: list[str], new: list[str]) -> tuple[list[str], list[str], bool]:
    """read_file's `12| ` prefixes, when every non-blank line of old has one, come off both."""
    texty = [line for line in old if line.strip()]
    if not texty or not all(_NUMBERED.match(line) for line in texty):
        return old, new, False
    strip = lambda lines: [_NUMBERED.sub("", line, count=1) for line in lines]  # noqa: E731
    return strip(old), strip(new), True


def _first_text(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if line.strip())


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _shifted(line: str, shift: int) -> str:
    if not line.strip() or shift == 0:
        return line
    if shift > 0:
        return " " * shift + line
    return line[min(-shift, _indent(line)) :]


def _already_there(text: str, lines: list[str], new: str) -> str:
    """When `old` is gone but `new` is there: the edit was made already (a small model sends
    its applied edit again and again)."""
    if not new.strip() or new not in text:
        return ""
    at = text[: text.index(new)].count("\n")
    lo, hi = max(0, at - 1), min(len(lines), at + new.count("\n") + 2)
    shown = numbered(lines, range(lo + 1, hi + 1))
    return (
        "old is not in the file, and new already is: this edit was made already (the tests "
        f"after it are above). Nothing was changed. The lines now:\n{shown}\n"
        "If the tests still fail, the bug is elsewhere or needs a different change."
    )


def _not_found(lines: list[str], old: str) -> str:
    """Say old is not there, and show what to copy: the lines most like old's first line, or the
    whole file when it is short."""
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(first, stripped, n=1, cutoff=0.5)
    text = NOT_FOUND + " Copy the lines exactly as read_file shows them."
    if close:
        at = stripped.index(close[0])
        lo, hi, what = max(0, at - 2), min(len(lines), at + 3), "The closest lines in the file"
    elif len(lines) <= SHOW_WHOLE_LINES:
        lo, hi, what = 0, len(lines), "The file"
    else:
        return text
    return f"{text} {what}:\n{numbered(lines, range(lo + 1, hi + 1))}"


def _elsewhere(ctx: ToolContext, rel: str, old: str) -> str:
    """When `old` is not in `rel` but its first line is in another file of the same kind, say
    where. A small model copies a failing test's lines and sends them as the source's: then the
    answer says that file is a test, which the fix must not change."""
    wanted = [line.strip().encode() for line in old.splitlines() if line.strip()]
    if not wanted or len(wanted[0]) < 8:
        return ""
    suffix = PurePosixPath(rel).suffix
    for other, real in readable_files(
        ctx, ".", ctx.workspace.resolve(), limit=ELSEWHERE_FILES, suffix=suffix
    ):
        if other == rel.strip("/").removeprefix("./"):
            continue
        try:
            data = Path(real).read_bytes()
        except OSError:
            continue
        if len(data) > MAX_FILE_BYTES or not all(line in data for line in wanted):
            continue
        line = data[: data.index(wanted[0])].count(b"\n") + 1
        where = f"{NOT_FOUND} Those lines are in {other} (line {line}), not in {rel}."
        if not ctx.paths.is_writable(other):
            return (
                f"{where} {other} is a test or protected file: it says what the code must do "
                "and is not to be changed. Find the code it calls and change that."
            )
        return f"{where} If you meant that file, send the call again with path {other}."
    return ""


TOOL = Tool(
    name="replace",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    execute=execute,
    target=argument("path"),
)
