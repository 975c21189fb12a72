"""Which of a pointed answer's second choices to try: the edits the model nearly wrote (one token
of its answer swapped for the runner-up there), tried by the tests alone, with no model call."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence

from worker.llm.types import SecondChoice


def worth_trying(choices: Sequence[SecondChoice], most: int) -> list[SecondChoice]:
    """The `most` likeliest second choices whose edit can be Python where it goes: a `replace`
    of a `.py` file whose new text does not parse, alone or as a block's header, is left out
    (its test run could only fail)."""
    kept = [choice for choice in choices if _may_parse(choice)]
    return kept[: max(most, 0)]


def _may_parse(choice: SecondChoice) -> bool:
    args = choice.call.arguments or {}
    if choice.call.name != "replace" or not str(args.get("path", "")).endswith(".py"):
        return True
    text = str(args.get("new", "")).strip()
    if "\n" in text:
        return True  # several lines: their indentation is the tool's to judge
    with warnings.catch_warnings():  # "invalid decimal literal" and the like: not ours to show
        warnings.simplefilter("ignore")
        for source in (text, text + " pass", "if 1:\n pass\n" + text + " pass"):
            try:
                ast.parse(source)
                return True
            except SyntaxError:
                continue
    return False
