"""Two moves of the search (sampling.py) beside the pointed line: a small function rewritten
whole, where the ranking cannot tell its lines apart, and a line added after a suspect line.

Each is a pinned `replace`, as a pointed sample is: the model writes only `new`, and its answer
goes the way every sample goes (tried on the original tree; the first that fixes is verified
and kept). Where a function is comes from the language's own grounding (`Grounding.functions`:
Python's `ast`, tree-sitter for the others), so both moves work alike in every language.

- Whole function: `old` is the function's text, all of it (its docstring or comment too), so
  the model reads it again right before it writes the function anew. The prompt shows it with
  the first failing test's message (pytest's holds the expected and actual values and the
  call). A function that the spectrum cannot rank (every failing and passing test runs every
  line) is where pointed samples guess: one program's bug was on line 8, and ten samples and
  fifty second choices went to line 4 (issue 48).
- Insertion: `old` is the suspect line and the model writes the line(s) to add after it; the
  harness puts them after the line, at its block's indentation (Suspect.indent_after). JSON
  Schema pins a whole value (`const`), not the start of one, so the line itself is the
  harness's to keep: a pointed sample can only replace a line, and a fix that needs a
  statement added (`visited.add(node)`) was out of its reach.
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
from worker.search.suspects import MAX_TEXT, Suspect, kind, read_lines

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


def insertion_after(suspects: Sequence[Suspect], *, top: int) -> int | None:
    """The first of the `top` suspects a line may be added after: not a line after which
    nothing in its block runs (`return`), one that only structures the code (`else:`, a closing
    bracket), a function's first line, or one whose statement goes on to the next line; None if
    there is none."""
    for i, suspect in enumerate(suspects[:top]):
        text = suspect.text
        if len(text) >= MAX_TEXT or kind(text) == 2 or _LAST.match(text) or _DEFINES.match(text):
            continue
        if not text.split(" #")[0].split("//")[0].rstrip().endswith(_UNFINISHED):
            return i
    return None


def insert_prompt(suspect: Suspect) -> str:
    around = suspect.around + "\n" if suspect.around else ""
    return prompts.INSERT.format(where=suspect.where(), text=suspect.text, around=around)


def inserted(call: ToolCall, suspect: Suspect) -> ToolCall:
    """An insertion sample's answer as the edit it stands for: the suspect line kept, and the
    lines the model wrote (the line itself, if copied first, once) after it at the block's
    indentation. Any other call is returned as it is."""
    args = call.arguments
    if call.name != "replace" or not isinstance(args, dict) or args.get("old") != suspect.text:
        return call
    added = str(args.get("new", "")).splitlines()
    while added and not added[0].strip():
        added = added[1:]
    if added and loosened(added[0]) == loosened(suspect.text):
        added = added[1:]
    body = textwrap.dedent("\n".join(added)).strip("\n")
    lines = [suspect.indent_after + ln if ln.strip() else "" for ln in body.splitlines()]
    new = "\n".join([suspect.text, *lines])
    arguments = {**args, "new": new}
    return replace(call, arguments=arguments, raw_arguments=json.dumps(arguments))
