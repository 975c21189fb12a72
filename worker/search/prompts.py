"""What the search says to the model besides the loop's prompts (worker/loop/prompts.py)."""

from __future__ import annotations

SAMPLE_UNDONE = """\
The failing tests still failed after this edit, so the harness undid it: the files are as they \
were at the start. Look at the code again and make a different change."""

FOCUS = """\
Look at line {where}: {text}
{around}The failing tests run it. Replace that line with what it should be: if it is wrong, the \
corrected line; if it is right, the same line."""

INSERT = """\
Look at line {where}: {text}
{around}The failing tests run it. A statement may be missing right {side} it. Write as new only \
the line or lines to add {side} it (that line itself stays as it is)."""

WHOLE = """\
Look at this function ({where}); the failing tests call it:
{text}
{failure}Write the whole function again as new, corrected so that the failing tests pass."""
