"""What a JavaScript failure says, made short: paths relative to the workspace, the frames of
node's internals and of node_modules dropped from a stack, terminal colours removed."""

from __future__ import annotations

import posixpath
import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A stack frame (`    at f (file:1:2)`, or a TAP diagnostic's `f (file:1:2)`) in node's own
# code or an installed package: not where a bug of the project is.
_FOREIGN_FRAME = re.compile(
    r"^\s*(?:at\s+)?\S[^(]*\((?:node:|<anonymous>|.*/node_modules/)[^)]*\)\s*$"
    r"|^\s*at\s+(?:node:|.*/node_modules/)\S*\s*$"
)


def relative_to(path: str, root: str) -> str:
    """`path` (absolute, a file:// URL, or relative) relative to `root` when it is inside it.

    >>> relative_to("/workspace/test/a.test.js", "/workspace")
    'test/a.test.js'
    >>> relative_to("file:///workspace/a.js", "/workspace"), relative_to("./t/b.js", "/w")
    ('a.js', 't/b.js')
    """
    path = path.removeprefix("file://")
    if not path:
        return ""
    root = root.rstrip("/") or "/"
    if path.startswith(root + "/"):
        return path[len(root) + 1 :]
    return posixpath.normpath(path)


def clean_stack(text: str) -> str:
    """`text` without colours and without the stack frames of node itself and node_modules
    (all of them kept when nothing else is left)."""
    lines = ANSI.sub("", text).splitlines()
    kept = [line for line in lines if not _FOREIGN_FRAME.match(line)]
    frames = [line for line in kept if line.lstrip().startswith("at ")]
    if not frames and any(line.lstrip().startswith("at ") for line in lines):
        return "\n".join(lines)
    return "\n".join(kept)


def first_line(text: str) -> str:
    """The first line that says something: not empty, not jest's `●` heading."""
    for line in ANSI.sub("", text).splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("●"):
            return stripped
    return ""
