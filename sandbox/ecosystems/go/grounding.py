"""Facts for the first message on a Go module: the source the failing tests point at, as
Python's package finds it (sandbox/ecosystems/python/grounding.py: the same two calls, the
same `Grounding`).

The places a failure names (sandbox/ecosystems/go/frames.py: a panic's stack, the compiler's
`file:line`) in the module's own source files come first: the functions around them. Then the
failing test itself: its `func TestX` in the `_test.go` files of its package folder (a subtest's
too: `TestX/case` runs inside `TestX`), the calls it makes, resolved by a real parser
(source.py): a plain `Add(..)` to the package's functions, `calc.Add(..)` through
the file's imports to the module's package folder, `s.Push(..)` to the methods of that name in
the package and the module packages it imports; then what those call, two calls deep, as the
lines allow. Parsing only, bounded in size and time.
"""

from __future__ import annotations

import posixpath
import time
from dataclasses import dataclass, field
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.base import FailedRun
from sandbox.ecosystems.go.frames import GoFrame, frames, package_of
from sandbox.ecosystems.go.modules import GoModules, find_modules
from sandbox.ecosystems.go.source import (
    Call,
    GoDefinition,
    GoSource,
    calls,
    definitions,
    enclosing,
    parse_go,
)
from sandbox.source.grounding import Grounding, render_chosen
from sandbox.testrun.junit import TestFailure
from sandbox.worktree.repo_files import RepoFiles

GROUNDING_S = 5.0  # all the parsing for one first message, at most
MAX_FAILURES = 5  # failing tests followed (the Python grounding's number)
CALLEE_DEPTH = 2  # calls followed from a definition the tests reach
MAX_FILES = 200  # Go files of one folder looked at


def implicated_files(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int = 3
) -> list[str]:
    """Writable Go source files the failures name, then those defining what the failing tests
    call: most relevant first."""
    if run.summary is None:
        return []
    reach = _Reach(workspace=workspace, paths=paths)
    failures = run.summary.failures[:MAX_FAILURES]
    found = [f.path for f in reach.source_frames(failures)]
    found += [d.path for failure in failures for d in reach.from_test(failure)]
    return list(dict.fromkeys(found))[:limit]


def implicated_code(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, max_lines: int = 150
) -> Grounding:
    """The definitions the failing tests lead to, numbered as read_file numbers lines; empty
    when none is found (the caller then shows whole files)."""
    if run.summary is None or not run.summary.failures:
        return Grounding()
    reach = _Reach(workspace=workspace, paths=paths)
    failures = run.summary.failures[:MAX_FAILURES]
    chosen: list[GoDefinition] = []
    for frame in reach.source_frames(failures):  # first: the failure happened there
        found = enclosing(reach.definitions(frame.path), frame.line)
        if found is not None:
            chosen.append(found)
    for failure in failures:
        chosen += reach.from_test(failure)
    chosen += reach.callees(chosen)
    return reach.render(chosen, max_lines=max_lines)


@dataclass
class _Reach:
    """One grounding's parsed files and what it found in them."""

    workspace: Path
    paths: PathPolicy
    files: RepoFiles = field(init=False)
    modules: GoModules = field(init=False)
    deadline: float = field(init=False)
    _parsed: dict[str, GoSource | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.files = RepoFiles(self.workspace)
        self.modules = find_modules(self.workspace)
        self.deadline = time.monotonic() + GROUNDING_S

    def writable(self, rel: str) -> bool:
        return (
            rel.endswith(".go")
            and not rel.endswith("_test.go")
            and self.paths.check(rel, write=True).allowed
        )

    def source(self, rel: str) -> GoSource | None:
        if rel not in self._parsed:
            self._parsed[rel] = None
            if time.monotonic() < self.deadline and self.paths.check(rel).allowed:
                text = self.files.read(rel)
                if text is not None:
                    self._parsed[rel] = parse_go(rel, text.encode())
        return self._parsed[rel]

    def definitions(self, rel: str) -> list[GoDefinition]:
        src = self.source(rel)
        return definitions(src) if src is not None else []

    def folder_files(self, folder: str, *, tests: bool) -> list[str]:
        """The `_test.go` files (tests) or the other Go files of a package folder."""
        base = "" if folder in ("", ".") else folder
        names = [n for n in self.files.listed(folder or ".") if n.endswith(".go")][:MAX_FILES]
        return [posixpath.join(base, n) for n in names if n.endswith("_test.go") == tests]

    def source_frames(self, failures: tuple[TestFailure, ...]) -> list[GoFrame]:
        """The places the failures name in writable source files, in order, each once."""
        found: dict[GoFrame, None] = {}
        for failure in failures:
            text = f"{failure.message}\n{failure.traceback}"
            folder = package_of(failure.test_id)
            root = self.modules.module_root(folder)
            for frame in frames(text, folder=folder, workspace=self.workspace, module_root=root):
                if self.writable(frame.path):
                    found[frame] = None
        return list(found)

    def from_test(self, failure: TestFailure) -> list[GoDefinition]:
        """The source definitions a failing test's function calls (none for a package's own
        failure: one that does not build)."""
        folder, _, name = failure.test_id.partition("::")
        top = name.split("/")[0]
        if not top:
            return []
        for rel in self.folder_files(folder, tests=True):
            src = self.source(rel)
            test = next(
                (d for d in self.definitions(rel) if d.name == top and d.receiver is None), None
            )
            if src is not None and test is not None:
                return self.resolve_all(src, test)
        return []

    def resolve_all(self, src: GoSource, definition: GoDefinition) -> list[GoDefinition]:
        out: list[GoDefinition] = []
        for call in calls(src, definition.node):
            out += self.resolve(src, call)
        return out

    def resolve(self, src: GoSource, call: Call) -> list[GoDefinition]:
        """The source definitions `call` (made in `src`) may be."""
        here = posixpath.dirname(src.path) or "."
        imports = src.imports()
        if call.qualifier is None:
            return self._named(here, call.name, method=False)
        if call.qualifier in imports:
            folder = self._folder_of(imports[call.qualifier])
            return self._named(folder, call.name, method=False) if folder is not None else []
        if not call.qualifier:
            return []
        found = self._named(here, call.name, method=True)
        if not found:  # a value of a type another package of the module defines
            for path in imports.values():
                folder = self._folder_of(path)
                if folder is not None:
                    found += self._named(folder, call.name, method=True)
        return found

    def _named(self, folder: str, name: str, *, method: bool) -> list[GoDefinition]:
        return [
            d
            for rel in self.folder_files(folder, tests=False)
            if self.writable(rel)
            for d in self.definitions(rel)
            if d.name == name and (d.receiver is not None) == method
        ]

    def _folder_of(self, import_path: str) -> str | None:
        """The repository's folder of an import path; None for another module's."""
        return self.modules.folder_of(import_path)

    def callees(self, chosen: list[GoDefinition]) -> list[GoDefinition]:
        """What the chosen definitions call, CALLEE_DEPTH calls deep, each once."""
        seen = {(d.path, d.start) for d in chosen}
        out: list[GoDefinition] = []
        layer = list(chosen)
        for _ in range(CALLEE_DEPTH):
            following: list[GoDefinition] = []
            for d in layer:
                src = self.source(d.path)
                if src is None:
                    continue
                for found in self.resolve_all(src, d):
                    if (found.path, found.start) not in seen:
                        seen.add((found.path, found.start))
                        following.append(found)
            out += following
            layer = following
        return out

    def render(self, chosen: list[GoDefinition], *, max_lines: int) -> Grounding:
        """The definitions chosen, each once, within `max_lines`."""

        def lines_of(rel: str) -> list[str] | None:
            src = self.source(rel)
            return src.lines() if src is not None else None

        return render_chosen(
            chosen, lines_of=lines_of, max_lines=max_lines,
            whole=lambda d: d.node.type != "type_declaration", key=lambda d: (d.path, d.start),
        )  # fmt: skip
