"""Read the unified diffs models write, and write them back out in the one form `git apply` eats.

Models get headers and counts wrong, wrap diffs in Markdown fences, drop the space in front of
blank context lines and mix `a/`/`b/` prefixes. We parse leniently, recount every hunk, and emit
a canonical git diff (`diff --git` headers, `a/`/`b/` prefixes, true counts), so what `git apply`
touches is exactly the list of paths we checked. Nothing here guesses where a hunk goes: that
stays with git, which only moves a hunk to where all of its context matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_HUNK = re.compile(r"^@@+ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@+ ?(.*)$")
_BARE_HUNK = re.compile(r"^@@+(.*?)(?:@@+)?\s*$")
_BAD_MODES = {"120000": "symbolic links", "160000": "submodules"}


class PatchError(ValueError):
    """A patch that cannot be read; the message says what to fix."""


@dataclass(kw_only=True)
class Hunk:
    """One `@@` block: where it says it starts, and its lines with their one-character prefix."""

    old_start: int
    new_start: int
    section: str = ""
    numbered: bool = True  # False for a bare `@@` line without line numbers
    lines: list[str] = field(default_factory=list)

    @property
    def old_lines(self) -> list[str]:
        """Context and removed lines: what the file must contain."""
        return [line[1:] for line in self.lines if line[:1] in (" ", "-")]

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines if line[:1] == "+")

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines if line[:1] == "-")


@dataclass(kw_only=True)
class FilePatch:
    """The hunks for one file; `old`/`new` are None for `/dev/null` (a new or deleted file)."""

    old: str | None
    new: str | None
    hunks: list[Hunk] = field(default_factory=list)
    mode: str = "100644"

    @property
    def path(self) -> str:
        path = self.new if self.new is not None else self.old
        assert path is not None
        return path

    @property
    def status(self) -> str:
        """A (added), D (deleted) or M (modified)."""
        return "A" if self.old is None else "D" if self.new is None else "M"

    @property
    def added(self) -> int:
        return sum(h.added for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(h.removed for h in self.hunks)


def parse_patch(text: str, *, workspace: Path) -> list[FilePatch]:
    """Parse a unified diff leniently; PatchError with a fix-it message when it cannot be read."""
    lines = _unfence(text.replace("\r\n", "\n").split("\n"))
    files: list[FilePatch] = []
    mode: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            mode = None
        elif line.startswith(("new file mode ", "deleted file mode ")):
            mode = line.rsplit(" ", 1)[-1].strip()
            if mode in _BAD_MODES:
                raise PatchError(f"patches may not create or delete {_BAD_MODES[mode]}")
        elif line.startswith("GIT binary patch") or line.startswith("Binary files "):
            raise PatchError("binary patches are not supported; patch text files only")
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old, new = _name(line[4:]), _name(lines[i + 1][4:])
            fp = FilePatch(old=old, new=new)
            _strip_prefixes(fp, workspace)
            if mode is not None and mode.isdigit():
                fp.mode = mode
            files.append(fp)
            i = _read_hunks(lines, i + 2, fp)
            mode = None
            continue
        i += 1
    if not files:
        raise PatchError(
            "no file headers found. A patch needs, for each file, a '--- a/PATH' line, a "
            "'+++ b/PATH' line, then hunks starting with '@@ -LINE,COUNT +LINE,COUNT @@'."
        )
    for fp in files:
        _check_file(fp, workspace)
    return files


def render_patch(files: list[FilePatch], *, modes: dict[str, str]) -> str:
    """The canonical git diff of `files`, with true hunk counts; `modes` gives existing modes."""
    out: list[str] = []
    for fp in files:
        path = fp.path
        out.append(f"diff --git a/{path} b/{path}")
        if fp.status == "A":
            out.append(f"new file mode {fp.mode if fp.mode in ('100644', '100755') else '100644'}")
        elif fp.status == "D":
            out.append(f"deleted file mode {modes.get(path, '100644')}")
        out.append("--- /dev/null" if fp.old is None else f"--- a/{path}")
        out.append("+++ /dev/null" if fp.new is None else f"+++ b/{path}")
        for hunk in fp.hunks:
            old_n = sum(1 for line in hunk.lines if line[:1] in (" ", "-"))
            new_n = sum(1 for line in hunk.lines if line[:1] in (" ", "+"))
            old_s = 0 if old_n == 0 else max(hunk.old_start, 1)
            new_s = 0 if new_n == 0 else max(hunk.new_start, 1)
            section = f" {hunk.section}" if hunk.section else ""
            out.append(f"@@ -{old_s},{old_n} +{new_s},{new_n} @@{section}")
            out.extend(hunk.lines)
    return "\n".join(out) + "\n"


def _unfence(lines: list[str]) -> list[str]:
    """Drop a Markdown code fence around the diff, if there is one."""
    starts = [i for i, line in enumerate(lines) if line.strip().startswith("```")]
    if len(starts) >= 2:
        return lines[starts[0] + 1 : starts[-1]]
    return lines


def _name(raw: str) -> str | None:
    name = raw.split("\t", 1)[0].rstrip()
    if name.startswith('"') and name.endswith('"') and len(name) > 1:
        name = name[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return None if name == "/dev/null" else name


def _strip_prefixes(fp: FilePatch, workspace: Path) -> None:
    """Remove git's `a/` and `b/` unless the unprefixed reading names a file that exists, and
    the `.` and empty segments git apply refuses (`./src/app.py`, as models write it)."""
    for attr, prefix in (("old", "a/"), ("new", "b/")):
        name = getattr(fp, attr)
        if name is None:
            continue
        if name.startswith(prefix) and not (
            (workspace / name).exists() and not (workspace / name[2:]).exists()
        ):  # else a real directory called a/ or b/
            name = name[2:]
        if not name.startswith("/"):  # an absolute path stays one, for the policy to refuse
            name = "/".join(part for part in name.split("/") if part not in ("", "."))
        setattr(fp, attr, name)


def _read_hunks(lines: list[str], i: int, fp: FilePatch) -> int:
    """Read the hunks of one file from line `i`; return the index of the first line after."""
    hunk: Hunk | None = None
    while i < len(lines):
        line = lines[i]
        if _starts_file(lines, i):
            break
        if line.startswith("@@"):
            hunk = _hunk_header(line)
            fp.hunks.append(hunk)
        elif hunk is None:
            pass  # text between the header and the first hunk
        elif line[:1] in (" ", "-", "+", "\\"):
            hunk.lines.append(line)
        elif line == "":
            hunk.lines.append(" ")  # a blank context line whose leading space was lost
        elif _more_changes_follow(lines, i + 1):
            hunk.lines.append(" " + line)  # a context line whose leading space was lost
        else:
            break  # prose after the diff
        i += 1
    for hunk in fp.hunks:
        while hunk.lines and hunk.lines[-1] == " ":
            hunk.lines.pop()  # blank lines after a hunk separate; they are not context
    return i


def _starts_file(lines: list[str], i: int) -> bool:
    line = lines[i]
    if line.startswith("diff --git "):
        return True
    return line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _more_changes_follow(lines: list[str], i: int) -> bool:
    while i < len(lines) and not lines[i].startswith("@@") and not _starts_file(lines, i):
        if lines[i][:1] in ("+", "-"):
            return True
        i += 1
    return False


def _hunk_header(line: str) -> Hunk:
    match = _HUNK.match(line)
    if match:
        return Hunk(old_start=int(match[1]), new_start=int(match[3]), section=match[5].strip())
    bare = _BARE_HUNK.match(line)
    if bare:
        return Hunk(old_start=1, new_start=1, section=bare[1].strip(), numbered=False)
    raise PatchError(f"cannot read the hunk header {line!r}; write it as '@@ -12,4 +12,5 @@'")


def _check_file(fp: FilePatch, workspace: Path) -> None:
    if fp.old is None and fp.new is None:
        raise PatchError("a file header has /dev/null on both sides")
    if fp.old is not None and fp.new is not None and fp.old != fp.new:
        exists = [n for n in (fp.old, fp.new) if (workspace / n).exists()]
        if len(exists) != 1:
            raise PatchError(
                f"the headers name two files ({fp.old!r} and {fp.new!r}); renames are not "
                "supported: use the same path on the '---' and '+++' lines"
            )
        fp.old = fp.new = exists[0]
    for name in (fp.old, fp.new):
        if name is not None and (name != name.strip() or '"' in name or not name):
            raise PatchError(f"unusable file name in the patch: {name!r}")
    if not fp.hunks:
        raise PatchError(f"no hunks for {fp.path}: each file needs at least one '@@' hunk")
    for number, hunk in enumerate(fp.hunks, 1):
        kinds = {line[:1] for line in hunk.lines} - {"\\"}
        if fp.status == "A" and kinds - {"+"}:
            raise PatchError(
                f"{fp.path} is a new file ('--- /dev/null'): every line of its "
                "hunk must start with '+'"
            )
        if fp.status == "D" and kinds - {"-"}:
            raise PatchError(
                f"{fp.path} is deleted ('+++ /dev/null'): every line of its "
                "hunk must start with '-'"
            )
        if fp.status == "M" and not hunk.old_lines:
            raise PatchError(
                f"hunk {number} of {fp.path} has no unchanged context lines; "
                "include the lines just before and after the change so its place "
                "in the file is certain"
            )
        if not kinds & {"+", "-"} and fp.status == "M":
            raise PatchError(
                f"hunk {number} of {fp.path} changes nothing: mark removed lines "
                "with '-' and added lines with '+'"
            )
