"""`search {pattern, path?}`: a Python regex over the readable text files of the workspace."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from policies.paths import PathRefused
from tools.base import Observation, Tool, ToolContext, argument, failed, is_noise, refused

MAX_FILES_SHOWN = 25
MAX_LINES_SHOWN = 80
KEEP_PER_FILE = 8
MAX_FILE_BYTES = 1024 * 1024
MAX_LINE_CHARS = 2000
MAX_FILES_SCANNED = 20_000
BUDGET_S = 5.0
SCANNER = Path(__file__).with_name("search_scan.py")

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "Python regular expression, matched against each line.",
        },
        "path": {
            "type": "string",
            "description": "File or directory to search, relative to the root; omit for all.",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Find lines matching a Python regular expression in the repository's files; shows file, "
    "line number and line. path limits the search to one file or folder."
)


def execute(args: dict[str, Any], ctx: ToolContext) -> Observation:
    """Search; an invalid or runaway pattern comes back as an observation."""
    pattern: str = args["pattern"]
    rel = (args.get("path") or ".").strip()
    try:
        re.compile(pattern)
    except re.error as exc:
        return failed(
            f"invalid regular expression {pattern!r}: {exc}. Escape special characters "
            r"such as ( ) [ ] . * + ? with a backslash, e.g. 'foo\(' to find 'foo('.",
            pattern=pattern,
        )
    try:
        real = ctx.paths.resolve(ctx.workspace, rel)
    except PathRefused as exc:
        return refused(rel, exc.decision)
    if not real.exists():
        return failed(f"no such file or directory: {rel!r}; use list_dir to see what exists.")
    files = readable_files(ctx, rel, real)
    observation = _render(pattern, rel, files, *_scan(pattern, files))
    literal = re.escape(pattern)
    if (
        observation.data["matches"] == 0
        and literal != pattern
        and not observation.data["timed_out"]
    ):
        # Small models often mean the text itself: "def f(x):" as a regex matches nothing.
        as_text = _render(literal, rel, files, *_scan(literal, files))
        if as_text.data["matches"]:
            note = "no matches as a regular expression; searched as plain text instead:\n"
            return replace(as_text, text=note + as_text.text)
    loose = _loose_text(pattern)
    if observation.data["matches"] == 0 and loose and not observation.data["timed_out"]:
        # Text copied from a test's failure: pytest shows 'x' where the source says "x".
        near = _render(loose, rel, files, *_scan(loose, files))
        if near.data["matches"]:
            note = (
                "no matches as written; searched as text with either quote (' or \") and any "
                "spacing instead:\n"
            )
            return replace(near, text=note + near.text)
    return observation


def _loose_text(pattern: str) -> str:
    """`pattern` as plain text where each quote matches either quote and each run of spaces
    any spacing; '' when it has neither (nothing to loosen)."""
    if not re.search(r"['\"\s]", pattern.strip()):
        return ""
    parts = re.split(r"(['\"]|\s+)", pattern.strip())
    out = []
    for part in parts:
        if part in ("'", '"'):
            out.append("['\"]")
        elif part and part.isspace():
            out.append(r"\s*")
        elif part:
            out.append(re.escape(part))
    return "".join(out)


def _scan(pattern: str, files: list[list[str]]) -> tuple[str, bool]:
    """Run the scanner process: (its output, whether it had to be killed)."""
    request = {
        "pattern": pattern,
        "files": files,
        "budget_s": BUDGET_S,
        "max_line": MAX_LINE_CHARS,
        "max_bytes": MAX_FILE_BYTES,
        "keep_per_file": KEEP_PER_FILE,
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", str(SCANNER)],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            timeout=BUDGET_S + 2.0,
            check=False,
        )
        return proc.stdout, False
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or b""
        return (raw.decode() if isinstance(raw, bytes) else raw), True


def readable_files(
    ctx: ToolContext, rel: str, real: Path, *, limit: int = MAX_FILES_SCANNED, suffix: str = ""
) -> list[list[str]]:
    """[relative path, real path] of every readable, non-noise file under `rel` (ending in
    `suffix`, when given), at most `limit` of them, in a stable order."""
    if real.is_file():
        return [[rel.strip("/"), str(real)]]
    found: list[list[str]] = []
    for top, dirs, names in os.walk(real):
        dirs[:] = sorted(d for d in dirs if not is_noise(d))
        for name in sorted(names):
            if is_noise(name) or not name.endswith(suffix):
                continue
            path = Path(top, name)
            rel_path = path.relative_to(ctx.workspace.resolve()).as_posix()
            try:
                target = ctx.paths.resolve(ctx.workspace, rel_path)
            except PathRefused:
                continue
            if target.is_file():
                found.append([rel_path, str(target)])
            if len(found) >= limit:
                return found
    return found


def _render(
    pattern: str, rel: str, files: list[list[str]], output: str, killed: bool
) -> Observation:
    results: list[dict[str, Any]] = []
    tail: dict[str, Any] = {}
    for line in output.splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if item.get("done"):
            tail = item
        else:
            results.append(item)
    total = sum(r["count"] for r in results)
    where = "" if rel in ("", ".") else f" in {rel}"
    files_word = "file" if len(results) == 1 else "files"
    lines = [f"{_count(total, 'match')} in {len(results)} {files_word} for /{pattern}/{where}"]
    shown_lines = shown_matches = 0
    for item in results[:MAX_FILES_SHOWN]:
        if shown_lines >= MAX_LINES_SHOWN:
            break
        lines.append(f"{item['file']} ({_count(item['count'], 'match')})")
        for number, text in item["hits"][: MAX_LINES_SHOWN - shown_lines]:
            lines.append(f"  {number}: {text}")
            shown_lines += 1
            shown_matches += 1
    shown_files = min(len(results), MAX_FILES_SHOWN)
    notes = []
    if total > shown_matches:
        more_files = len(results) - shown_files
        in_files = f" (in {more_files} more files)" if more_files else ""
        notes.append(
            f"[... {total - shown_matches} more matches not shown{in_files}; "
            "use a narrower pattern or path ...]"
        )
    if killed or tail.get("stopped"):
        notes.append(
            f"[search stopped after {BUDGET_S:g}s: the pattern is too slow or the tree "
            "too large; simplify the pattern or give a path; results are incomplete]"
        )
    skipped = (tail.get("binary", 0), tail.get("big", 0))
    if any(skipped):
        notes.append(
            f"(skipped {skipped[0]} binary and {skipped[1]} files over "
            f"{MAX_FILE_BYTES // 1024} KiB)"
        )
    capped = len(files) >= MAX_FILES_SCANNED
    if capped:
        notes.append(
            f"[only the first {MAX_FILES_SCANNED} files in path order were searched: give a "
            "path to search the others; results are incomplete]"
        )
    if not results and not killed:
        notes.append("no matches; try a shorter or case-insensitive pattern, e.g. '(?i)name'")
    return Observation(
        ok=not killed,
        text="\n".join(lines + notes),
        data={
            "pattern": pattern,
            "matches": total,
            "files_matched": len(results),
            "files_scanned": len(files),
            "shown_matches": shown_matches,
            "timed_out": killed or bool(tail.get("stopped")),
            "capped": capped,
        },
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es"


TOOL = Tool(
    name="search",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    execute=execute,
    target=argument("pattern"),
)
