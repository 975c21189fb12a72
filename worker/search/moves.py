"""Two moves of the search (sampling.py) beside the pointed line: a small function rewritten
whole, where the ranking cannot tell its lines apart, and a line added after a suspect line, or
before the `return` it is part of.

Each is a pinned `replace`, as a pointed sample is: the model writes only `new`, and its answer
goes the way every sample goes (tried on the original tree; the first that fixes is verified
and kept). Where a function is comes from the language's own grounding (`Grounding.functions`:
Python's `ast`, tree-sitter for the others), and where a statement is from its own parser
(`Ecosystem.ending_statement`), so both moves work alike in every language.

- Whole function: `old` is the function's text, all of it (its docstring or comment too), so
  the model reads it again right before it writes the function anew. The prompt shows it with
  the first failing test's message (pytest's holds the expected and actual values and the
  call). A function that the spectrum cannot rank (every failing and passing test runs every
  line) is where pointed samples guess: one program's bug was on line 8, and ten samples and
  fifty second choices went to line 4 (issue 48).
- Insertion: `old` is the line and the model writes the line(s) to add; the harness puts them
  after the line, at its block's indentation (Suspect.indent_after), or, where the line is part
  of a `return` (`raise`, `throw`, a panic, Rust's last expression: nothing after it runs),
  before that statement's first line, at its indentation (Suspect.ending). JSON Schema pins a
  whole value (`const`), not the start of one, so the line itself is the harness's to keep: a
  pointed sample can only replace a line, and a fix that needs a statement added
  (`visited.add(node)`) was out of its reach.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from sandbox.testrun.run import TestRun
from tools.replace import loosened
from worker.llm.types import Pins, ToolCall
from worker.search import prompts
from worker.search.suspects import MAX_TEXT, Anchor, Suspect, kind, read_lines

# A function rewritten whole is written twice in one answer (`old` pinned, then `new`), JSON
# escaped, within the bundled model's 512-token answer cap (policies/budgets.py): code is about
# 3 to 4 characters a token, so 700 characters twice fit with room for the JSON around them.
WHOLE_MAX_LINES = 30
WHOLE_MAX_CHARS = 700
MESSAGE_LINES = 8  # of the failing test's message, in a whole-function prompt
MESSAGE_CHARS = 600
# A line after which nothing in its block runs, or one a statement cannot follow yet.
_LAST = re.compile(r"^(return|raise|throw|break|continue|goto)\b|^(panic!?|os\.Exit)\(")
_UNFINISHED = ("(", "[", ",", "\\", "=", "&&", "||", " and", " or")
# A function's or a class's first line (a one-line function is all of it): what follows it is
# the next definition, not a statement of its body.
_DEFINES = re.compile(r"^(pub(\(\w+\))?\s+)?(export\s+)?(async\s+)?(func|function|fn|def|class)\b")


@dataclass(frozen=True)
class Function:
    """A function the grounding shows whole, small enough to be rewritten in one answer."""

    path: str
    start: int  # its first line (1-based, its leading comments or decorators included)
    end: int
    text: str  # lines start..end as they are in the file

    def where(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"


def small_functions(
    spans: Sequence[tuple[str, int, int]], *, workspace: Path, allowed: Callable[[str], bool]
) -> tuple[Function, ...]:
    """The functions of `spans` (path, first and last line: Grounding.functions) that a whole
    rewrite fits: a writable file, at most WHOLE_MAX_LINES lines and WHOLE_MAX_CHARS."""
    found = []
    for path, start, end in spans:
        if end - start + 1 > WHOLE_MAX_LINES or not allowed(path):
            continue
        lines = read_lines(workspace, path)
        if lines is None or end > len(lines):
            continue
        text = "\n".join(lines[start - 1 : end])
        if text.strip() and len(text) <= WHOLE_MAX_CHARS:
            found.append(Function(path, start, end, text))
    return tuple(found)


def flat(suspects: Sequence[Suspect], *, top: int) -> bool:
    """Whether the ranking cannot tell its `top` lines apart: lines only of the functions the
    failing tests call (no counts behind them), or the top ones scored alike. With no line
    ranked (the ranking off, or nothing found) nothing says it is flat: False."""
    if not suspects:
        return False
    first = suspects[:top]
    return first[0].reached or (len(first) > 1 and all(s.score == first[0].score for s in first))


def function_of(suspects: Sequence[Suspect], functions: Sequence[Function]) -> Function | None:
    """The smallest of `functions` (of more than one line: a one-line function is the pointed
    sample's) that holds the top suspect line."""
    if not suspects:
        return None
    top = suspects[0]
    holding = [
        f
        for f in functions
        if f.path == top.path and f.start <= top.line <= f.end and f.end > f.start
    ]
    return min(holding, key=lambda f: f.end - f.start, default=None)


def whole_pins(function: Function) -> Pins:
    return {"replace": {"path": function.path, "old": function.text, "line": function.start}}


def whole_prompt(function: Function, baseline: TestRun | None) -> str:
    """What a whole-function sample asks: the function, and what its first failing test says."""
    return prompts.WHOLE.format(
        where=function.where(), text=function.text, failure=_failure(baseline)
    )


def _failure(baseline: TestRun | None) -> str:
    """The first failing test's id, its message's start, and the line of the test it failed at
    where the traceback marks one (pytest's `>`)."""
    summary = baseline.summary if baseline is not None else None
    if summary is None or not summary.failures:
        return ""
    failure = summary.failures[0]
    message = "\n".join(failure.message.strip().splitlines()[:MESSAGE_LINES])[:MESSAGE_CHARS]
    marked = next(
        (ln[1:].strip() for ln in failure.traceback.splitlines() if ln.startswith(">")), ""
    )
    at = f"It fails at: {marked[:MAX_TEXT]}\n" if marked else ""
    return f"The failing test {failure.test_id} says:\n{message}\n{at}"


@dataclass(frozen=True)
class Insertion:
    """Where an insertion sample's lines go: before or after one line of a top suspect's, at an
    indentation; `suspect` is that suspect's rank (0: the top one)."""

    suspect: int
    path: str
    at: Anchor
    before: bool

    def where(self) -> str:
        return f"{self.path}:{self.at.line}"

    def pins(self) -> Pins:
        return {"replace": {"path": self.path, "old": self.at.text, "line": self.at.line}}


def insertion(suspects: Sequence[Suspect], *, top: int) -> Insertion | None:
    """Where the insertion sample adds its lines: at the first of the `top` suspects that can
    take one, before it where it is part of a `return` (`raise`, `throw`: Suspect.ending),
    else after it, unless it is a line after which nothing in its block runs, one that only
    structures the code (`else:`, a closing bracket), a function's first line, or one whose
    statement goes on to the next line; None if there is none."""
    for i, suspect in enumerate(suspects[:top]):
        ending = suspect.ending
        if ending is not None and len(ending.text) < MAX_TEXT:
            return Insertion(i, suspect.path, ending, before=True)
        text = suspect.text
        if len(text) >= MAX_TEXT or kind(text) == 2 or _LAST.match(text) or _DEFINES.match(text):
            continue
        if not text.split(" #")[0].split("//")[0].rstrip().endswith(_UNFINISHED):
            at = Anchor(suspect.line, text, suspect.indent_after)
            return Insertion(i, suspect.path, at, before=False)
    return None


def with_endings(
    suspects: Sequence[Suspect],
    *,
    workspace: Path,
    top: int,
    ending_of: Callable[[bytes, str, int], int | None],
) -> list[Suspect]:
    """The suspects, each of the `top` first with its `ending` where the language's parser
    (`ending_of`: Ecosystem.ending_statement of the file's language) finds its line part of a
    `return`: what lets the insertion go before it."""
    out = list(suspects)
    for i, suspect in enumerate(out[:top]):
        lines = read_lines(workspace, suspect.path)
        if lines is None:
            continue
        data = "\n".join(lines).encode()
        first = ending_of(data, suspect.path, suspect.line)
        if first is None or not 0 < first <= len(lines):
            continue
        line = lines[first - 1]
        anchor = Anchor(first, line.strip(), line[: len(line) - len(line.lstrip())])
        out[i] = replace(suspect, ending=anchor)
    return out


def insert_prompt(suspect: Suspect, where: Insertion) -> str:
    around = suspect.around + "\n" if suspect.around else ""
    side = "before" if where.before else "after"
    return prompts.INSERT.format(where=where.where(), text=where.at.text, around=around, side=side)


def inserted(call: ToolCall, where: Insertion) -> ToolCall:
    """An insertion sample's answer as the edit it stands for: the line kept, and the lines the
    model wrote (the line itself, if copied, left out) before or after it, at `where`'s
    indentation. Any other call is returned as it is."""
    args, at = call.arguments, where.at
    if call.name != "replace" or not isinstance(args, dict) or args.get("old") != at.text:
        return call
    added = [
        ln for ln in str(args.get("new", "")).splitlines() if loosened(ln) != loosened(at.text)
    ]
    body = textwrap.dedent("\n".join(added)).strip("\n")
    lines = [at.indent + ln if ln.strip() else "" for ln in body.splitlines()]
    if not lines:
        new = at.text  # nothing to add: old and new alike, which the tool refuses
    elif where.before:  # the file's indentation stands before `old`, so before the first line
        new = "\n".join([lines[0][len(at.indent) :], *lines[1:], at.indent + at.text])
    else:
        new = "\n".join([at.text, *lines])
    arguments = {**args, "new": new}
    return replace(call, arguments=arguments, raw_arguments=json.dumps(arguments))
