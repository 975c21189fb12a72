r"""The environment a CI file sets, read as hostile text line by line (as workflows.py reads
it): each `NAME: value` of a GitHub workflow's `env:` blocks (the workflow's, a job's, a
step's) with the lines it applies to, and of a GitLab file's `variables:` blocks. Values are
kept as written; which of them a test run takes is ci_test_env.py's to judge.

>>> text = "env:\n  TZ: UTC\njobs:\n  t:\n    steps:\n      - run: pytest\n"
>>> text += "        env:\n          A: '1'\n"
>>> [(e.name, e.value, e.line, e.first, e.last) for e in github_env(text)]
[('TZ', 'UTC', 2, 1, 8), ('A', '1', 8, 6, 8)]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox.worktree.workflows import strip_comment, unquote

MAX_ENTRIES = 100  # of one file
_ENV = re.compile(r"(\s*)(-\s+)?env\s*:(?:\s+(.*?))?\s*")
_ENTRY = re.compile(r"""\s*(['"]?)([^'":\s]+)\1\s*:(?:\s+(.*?))?\s*""")


@dataclass(frozen=True)
class EnvEntry:
    """One variable a CI file sets: its name, its value as written, its line, the lines it
    applies to (`first`..`last`: the workflow, a job, a step), and why its value cannot be
    read as one literal ("" when it can)."""

    name: str
    value: str
    line: int
    first: int
    last: int
    unreadable: str = ""


def github_env(text: str) -> list[EnvEntry]:
    """Every `env:` block's entries; a block's scope is the mapping it is a key of: the whole
    file for the workflow's own, a job's lines, a step's (a service's or container's `env:`
    covers no step's line)."""
    lines = text.splitlines()
    out: list[EnvEntry] = []
    for n, raw in enumerate(lines, start=1):
        found = _ENV.fullmatch(strip_comment(raw))
        if found is None:
            continue
        key_col = len(found[1]) + len(found[2] or "")
        first, last = _scope(lines, n, key_col, dash=len(found[1]) if found[2] else None)
        value = (found[3] or "").strip()
        if value:
            out += _flow(value, n, first, last)
        else:
            out += [
                EnvEntry(name, val, line, first, last, why)
                for name, val, line, why in mapping_entries(lines, n, key_col)
            ]
    return out[:MAX_ENTRIES]


def mapping_entries(lines: list[str], line_no: int, indent: int) -> list[tuple[str, str, int, str]]:
    """The `NAME: value` children of the key on line `line_no` (its column `indent`), each with
    its line and why its value is not one literal: a `|` block, a nested mapping (GitLab's
    `NAME: {value: x}` form gives its `value:`)."""
    out: list[tuple[str, str, int, str]] = []
    child = None
    for n in range(line_no + 1, min(len(lines), line_no + 400) + 1):
        bare = strip_comment(lines[n - 1])
        if not bare.strip():
            continue
        depth = len(bare) - len(bare.lstrip())
        if depth <= indent:
            break
        child = depth if child is None else child
        if depth > child:
            if out and out[-1][3] == "a nested mapping":
                nested = re.fullmatch(r"\s*value\s*:\s+(.*)", bare)
                if nested and not nested[1].startswith(("|", ">")):
                    out[-1] = (out[-1][0], unquote(nested[1]), out[-1][2], "")
            continue
        entry = _ENTRY.fullmatch(bare)
        if depth != child or entry is None:
            continue
        value = entry[3] or ""
        why = ""
        if value[:1] in ("|", ">"):
            why = "a multi-line value"
        elif value.startswith("{"):
            inner = re.search(r"\bvalue\s*:\s*([^,}]*)", value)
            value, why = (inner[1], "") if inner else ("", "a mapping")
        elif not value and _deeper(lines, n, depth):
            why = "a nested mapping"
        out.append((entry[2], unquote(value), n, why))
    return out


def _flow(value: str, line: int, first: int, last: int) -> list[EnvEntry]:
    """`env: {A: 1, B: x}`; any other inline value (an expression) is one unreadable entry."""
    if not (value.startswith("{") and value.endswith("}")):
        return [EnvEntry("env", value, line, first, last, "the whole block is an expression")]
    out = []
    for part in value[1:-1].split(","):
        name, colon, val = part.partition(":")
        if colon and name.strip():
            out.append(EnvEntry(unquote(name), unquote(val), line, first, last))
    return out


def _scope(lines: list[str], line_no: int, key_col: int, *, dash: int | None) -> tuple[int, int]:
    """The lines of the mapping the key on `line_no` (at column `key_col`; `dash`: the column
    of the `- ` it follows) belongs to: from its first key's line (the `- ` of a step) to the
    last line before the next one as shallow."""
    if key_col == 0:
        return 1, len(lines)
    start, block = line_no, key_col if dash is None else dash
    if dash is None:
        for n in range(line_no - 1, 0, -1):
            bare = strip_comment(lines[n - 1])
            if not bare.strip():
                continue
            depth = len(bare) - len(bare.lstrip())
            item = re.match(r"(\s*)-\s+", bare)
            col = len(item[0]) if item else depth
            if col < key_col:
                start = n
                block = depth
                break
            if item and col == key_col:
                start, block = n, depth  # a step whose first key is on its `- ` line
                break
    end = start
    for n in range(start + 1, len(lines) + 1):
        bare = strip_comment(lines[n - 1])
        if not bare.strip():
            continue
        if len(bare) - len(bare.lstrip()) <= block:
            break
        end = n
    return start, end


def _deeper(lines: list[str], line_no: int, depth: int) -> bool:
    """Whether the next non-blank line after `line_no` is indented deeper than `depth`."""
    for raw in lines[line_no : line_no + 50]:
        bare = strip_comment(raw)
        if bare.strip():
            return len(bare) - len(bare.lstrip()) > depth
    return False
