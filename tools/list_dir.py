"""`list_dir {path?}`: the entries of one workspace directory, noise and secrets left out."""

from __future__ import annotations

import os
from typing import Any

from policies.paths import PathRefused
from tools.base import Observation, Tool, ToolContext, argument, failed, is_noise, refused

MAX_ENTRIES = 100

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {
            "type": "string",
            "description": "Directory relative to the repository root; omit for the root.",
        },
    },
    "additionalProperties": False,
}

DESCRIPTION = (
    "List the files and folders in a directory of the repository (folders end with '/'). "
    "Without path: the repository root."
)


def execute(args: dict[str, Any], ctx: ToolContext) -> Observation:
    """List one directory; unreadable entries are not shown, noise is named in a note."""
    rel = (args.get("path") or ".").strip()
    try:
        real = ctx.paths.resolve(ctx.workspace, rel)
    except PathRefused as exc:
        return refused(rel, exc.decision)
    if not real.exists():
        return failed(f"no such directory: {rel!r}; use list_dir with no path to see the root.")
    if not real.is_dir():
        return failed(f"{rel!r} is a file, not a directory; use read_file to read it.")
    prefix = "" if rel in ("", ".", "./") else rel.strip("/") + "/"
    entries: list[str] = []
    noise: list[str] = []
    for name in sorted(os.listdir(real)):
        if is_noise(name):
            noise.append(name)
            continue
        try:
            target = ctx.paths.resolve(ctx.workspace, prefix + name)
        except PathRefused:
            continue  # secrets and links out of the workspace are not even named
        entries.append(name + "/" if target.is_dir() else name)
    shown = entries[:MAX_ENTRIES]
    lines = [f"{prefix or './'} ({len(entries)} entries)", *shown]
    if len(entries) > MAX_ENTRIES:
        lines.append(
            f"[... {len(entries) - MAX_ENTRIES} more entries not shown; "
            "list a subdirectory or use search ...]"
        )
    if not entries:
        lines.append("(empty)")
    if noise:
        lines.append(f"(left out: {', '.join(noise[:10])}{', ...' if len(noise) > 10 else ''})")
    return Observation(
        ok=True,
        text="\n".join(lines),
        data={"path": prefix or ".", "entries": len(entries), "shown": len(shown)},
    )


TOOL = Tool(
    name="list_dir",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    execute=execute,
    target=argument("path"),
)
