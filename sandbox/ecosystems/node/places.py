"""Where the bug likely is on a JavaScript or TypeScript repository: the lines of its own code
that the failing tests' stack traces pass through (worker/search/suspects.py ranks Python's
from a traced run; these need no run at all).

A stack names each place an error passed through, innermost first
(sandbox/ecosystems/node/stack_frames.py). The frames in the repository's own files (not a
test, not a dependency's, writable) are the suspects, as the same `Suspect`: scored by how
many failing tests' stacks pass through the line (ef / F), and among equals the deepest frame
first, since the innermost frame of the repository's code is where the error was thrown. An
assertion that failed in the test has no such frame: those tests add nothing here, and the
first message's definitions (sandbox/ecosystems/node/grounding.py) show what they reach.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from sandbox.ecosystems.base import FailedRun, Places
from sandbox.ecosystems.node.source import Source, parse_bytes, walk
from sandbox.ecosystems.node.stack_frames import failure_texts, frames, is_source
from sandbox.source.places import Place, no_code

MAX_FILE_BYTES = 1_000_000  # a file's lines read to show a suspect line, at most
# Where the search for the `if` around a `throw` stops: the function that holds it.
_SCOPES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function",
     "function_declaration", "generator_function_declaration", "method_definition"}
)  # fmt: skip


def failure_places(
    texts: Sequence[str], *, workspace: Path, allowed: Callable[[str], bool]
) -> tuple[list[list[Place]], dict[str, list[str]]]:
    """For each of `texts` (one per failing test: stack_frames.failure_texts), the lines of the
    repository's own source files its stack passes through, innermost first; lines of test
    files, of dependencies, of files `allowed` refuses, and lines that are blank, comments or
    past the file's end are left out."""
    texts_of: dict[str, list[str] | None] = {}
    guards: dict[str, Source | None] = {}  # the files with a `throw` frame, parsed
    out: list[list[Place]] = []
    for text in texts:
        depth = 0
        places: list[Place] = []
        for frame in frames(text, workspace=workspace):
            if not is_source(frame.path) or not allowed(frame.path):
                continue
            if frame.path not in texts_of:
                texts_of[frame.path] = _lines(workspace, frame.path)
            lines = texts_of[frame.path]
            if lines is None or frame.line > len(lines) or no_code(lines[frame.line - 1]):
                continue
            # A `throw` is the error's line, not often its cause: the condition that decided
            # to throw comes first (a wrong condition is the commonest one-line bug).
            guard = _guard(frame.path, lines, frame.line, guards)
            for line in ([guard] if guard is not None else []) + [frame.line]:
                places.append(Place(frame.path, line, depth))
            depth += 1
        out.append(places)
    return out, {rel: lines for rel, lines in texts_of.items() if lines is not None}


def read_places(run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]) -> Places:
    """The places of a JavaScript or TypeScript run's failures (the search ranks them)."""
    places, lines = failure_places(
        failure_texts(run, workspace=workspace), workspace=workspace, allowed=allowed
    )
    return Places(
        places,
        lines,
        source="stack traces",
        why_empty="no failing test's stack passes through the source",
    )  # fmt: skip


def _guard(rel: str, lines: list[str], line: int, parsed: dict[str, Source | None]) -> int | None:
    """For a frame on a line that starts with `throw`: the line of the condition that decided
    it (the `if` around it in the same function), or None."""
    if not lines[line - 1].lstrip().startswith("throw"):
        return None
    if rel not in parsed:
        parsed[rel] = parse_bytes(rel, "\n".join(lines).encode())
    src = parsed[rel]
    return _guard_line(src, line) if src is not None else None


def _guard_line(src: Source, line: int) -> int | None:
    """For a `throw` on `line`: the line of the condition that decided it (the `if` around it,
    in the same function), where that is another line; else None."""
    row = line - 1
    throw = next(
        (n for n in walk(src.root) if n.type == "throw_statement" and n.start_point.row == row),
        None,
    )
    node = throw.parent if throw is not None else None
    while node is not None and node.type not in _SCOPES:
        if node.type == "if_statement":
            condition = node.child_by_field_name("condition")
            at = condition.start_point.row + 1 if condition is not None else line
            return at if at != line else None
        node = node.parent
    return None


def _lines(workspace: Path, rel: str) -> list[str] | None:
    path = workspace / rel
    try:
        if path.is_symlink() or not path.resolve().is_relative_to(workspace.resolve()):
            return None
        if not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except (OSError, ValueError):
        return None
