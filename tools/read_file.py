"""`read_file {path, start_line?, end_line?}`: a numbered window of a text file."""

from __future__ import annotations

import difflib
import os
from typing import Any

from policies.paths import PathRefused
from sandbox.source.numbered import numbered
from tools.base import (
    Observation,
    Tool,
    ToolContext,
    argument,
    failed,
    is_noise,
    looks_binary,
    refused,
)

WINDOW = 200
MAX_LINE_CHARS = 400
MAX_FILE_BYTES = 8 * 1024 * 1024

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "File path relative to the repository root."},
        "start_line": {"type": "integer", "minimum": 1, "description": "First line (from 1)."},
        "end_line": {"type": "integer", "minimum": 1, "description": "Last line (inclusive)."},
    },
    "required": ["path"],
    "additionalProperties": False,
}

DESCRIPTION = (
    f"Show lines of a text file with line numbers, {WINDOW} lines at a time; start_line and "
    "end_line choose the lines."
)


def execute(args: dict[str, Any], ctx: ToolContext) -> Observation:
    """Read a window of `path`; refusals and mistakes come back as observations."""
    rel: str = args["path"]
    try:
        real = ctx.paths.resolve(ctx.workspace, rel)
    except PathRefused as exc:
        return refused(rel, exc.decision)
    if real.is_dir():
        return failed(f"{rel!r} is a directory; use list_dir to see what is in it.")
    if not real.is_file():
        return failed(_not_found(rel, ctx), path=rel)
    size = real.stat().st_size
    if size > MAX_FILE_BYTES:
        return failed(f"{rel} is too large to read ({size} bytes); use search to find lines in it.")
    data = real.read_bytes()
    if looks_binary(data):
        return failed(f"{rel} is a binary file ({size} bytes); read_file shows text files only.")
    lines = data.decode("utf-8", "replace").splitlines()
    total = len(lines)
    start = args.get("start_line", 1)
    end = args.get("end_line", start + WINDOW - 1)
    if total == 0:
        return Observation(
            ok=True,
            text=f"{rel}: the file is empty (0 lines).",
            data={"path": rel, "total_lines": 0},
        )
    if end < start:
        return failed(f"end_line ({end}) is before start_line ({start}).")
    if start > total:
        return failed(f"{rel} has only {total} lines; start_line must be at most {total}.")
    end = min(end, total, start + WINDOW * 2 - 1)
    body = numbered(lines, range(start, end + 1), text=_cap)
    header = f"{rel}: lines {start}-{end} of {total}"
    if end < total:
        header += f" (next: start_line={end + 1})"
    return Observation(
        ok=True,
        text="\n".join([header, body]),
        data={"path": rel, "start_line": start, "end_line": end, "total_lines": total},
    )


def _cap(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}[... {len(line) - MAX_LINE_CHARS} chars cut]"


def _not_found(rel: str, ctx: ToolContext) -> str:
    """Say the file is missing and name readable files with a similar name."""
    names: list[str] = []
    for top, dirs, files in os.walk(ctx.workspace):
        dirs[:] = [d for d in dirs if not is_noise(d)]
        for name in files:
            path = os.path.relpath(os.path.join(top, name), ctx.workspace).replace(os.sep, "/")
            if ctx.paths.is_readable(path):
                names.append(path)
        if len(names) > 5000:
            break
    close = difflib.get_close_matches(rel, names, n=3, cutoff=0.6)
    base = os.path.basename(rel)
    close += [n for n in names if os.path.basename(n) == base and n not in close][:3]
    hint = f" Did you mean: {', '.join(close)}?" if close else " Use list_dir to see the files."
    return f"no such file: {rel!r}.{hint}"


TOOL = Tool(
    name="read_file",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    execute=execute,
    target=argument("path"),
)
