"""Where the bug likely is on a Java project: the lines of its own source files that the
failing tests' texts name (Go's and Node's packages do the same; these need no run at all).

A Java failure names its places itself: a stack trace's frames, innermost first
(`at com.example.Range.contains(Range.java:42)`: the class's package and the file's name say
the file, `<source root>/com/example/Range.java`), and a compile error's `path:line:col`
(sandbox/ecosystems/java/reports.py puts the compiler's lines in the failure's text). The
places in the repository's own files (not a test's, not a dependency's, writable) are the
suspects, scored by how many failing tests name the line, among equals the innermost first. A
test whose assertion failed in the test itself names no such line: the first message's
definitions (grounding.py: what the test calls) show where to look.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox.ecosystems.base import FailedRun, Places
from sandbox.ecosystems.java.source import file_of_class, is_test_file, java_files
from sandbox.source.places import Place, no_code
from sandbox.testrun.junit import TestFailure
from sandbox.worktree.repo_files import RepoFiles

MAX_FAILURES = 50  # failing tests whose texts are read
_FRAME = re.compile(r"\bat (?:[\w.$/@-]+/)?([\w$.]+)\.[\w$<>]+\(([\w$-]+\.java):(\d+)\)")
_COMPILED = re.compile(r"^((?:[\w.$-]+/)*[\w.$-]+\.java):(\d+):\d+: ", re.M)


@dataclass(frozen=True)
class JavaFrame:
    path: str  # relative to the repository's root
    line: int


def frames(text: str, *, files: list[str], module: str = "") -> Iterator[JavaFrame]:
    """The repository's own places `text` names, innermost first: stack frames whose class's
    file is in the repository, and compile errors' `path:line`."""
    for match in _COMPILED.finditer(text):
        yield JavaFrame(match.group(1), int(match.group(2)))
    for match in _FRAME.finditer(text):
        klass, file_name, line = match.group(1), match.group(2), int(match.group(3))
        package = klass.rsplit(".", 1)[0] if "." in klass else ""
        name = f"{package}.{file_name[:-5]}" if package else file_name[:-5]
        rel = file_of_class(files, name, hint=module)
        if rel is not None:
            yield JavaFrame(rel, line)


def module_of(test_id: str) -> str:
    """The module folder a test id names (`core::x.YTest#z`, `core`: core), "" for the
    root's (`.::x.YTest#z`)."""
    module = test_id.partition("::")[0]
    return "" if module == "." else module


def failure_places(
    failures: Sequence[TestFailure], *, workspace: Path, allowed: Callable[[str], bool]
) -> tuple[list[list[Place]], dict[str, list[str]]]:
    """For each failure, the lines of the repository's own Java files it names, innermost
    first, each once; test files, files `allowed` refuses, blank and comment lines and lines
    past the file's end left out."""
    repo = RepoFiles(workspace)
    files = java_files(workspace)
    texts_of: dict[str, list[str] | None] = {}
    out: list[list[Place]] = []
    for failure in failures[:MAX_FAILURES]:
        text = f"{failure.message}\n{failure.traceback}"
        places: list[Place] = []
        seen: set[tuple[str, int]] = set()
        depth = 0
        for frame in frames(text, files=files, module=module_of(failure.test_id)):
            if is_test_file(frame.path) or not allowed(frame.path):
                continue
            if frame.path not in texts_of:
                read = repo.read(frame.path)
                texts_of[frame.path] = read.splitlines() if read is not None else None
            lines = texts_of[frame.path]
            if lines is None or frame.line > len(lines) or no_code(lines[frame.line - 1]):
                continue
            if (frame.path, frame.line) not in seen:
                seen.add((frame.path, frame.line))
                places.append(Place(frame.path, frame.line, depth))
            depth += 1
        out.append(places)
    return out, {rel: lines for rel, lines in texts_of.items() if lines is not None}


def read_places(run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]) -> Places:
    """The places a Maven run's failures name (the search ranks them)."""
    failures = run.summary.failures if run.summary is not None else []
    places, lines = failure_places(failures, workspace=workspace, allowed=allowed)
    return Places(
        places,
        lines,
        source="Java stack traces and compiler errors",
        why_empty="no failure names a line of the repository's own Java source",
    )
