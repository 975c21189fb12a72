"""Facts for the first message on a Java project: the source the failing tests point at, as
the Go and Python packages find it (the same two calls, the same `Grounding`).

The places a failure names (places.py: a stack's frames, a compile error's `path:line`) in the
repository's own source files come first: the methods around them. Then the failing test
itself: its method in the test class's file (`com.example.RangeTest#includesUpperBound`: the
file `.../com/example/RangeTest.java`, the method `includesUpperBound`; a parameterised case's
`(int)[2]` and a nested class's `$Outside` said by the id), the calls it makes, resolved by a
real parser (source.py): `new Range(..)` to Range's constructors, `range.contains(..)` and
`Range.of(..)` to the methods of that name in the classes the test's file can see (its own
package's and those it imports), of those the overloads that take as many arguments as the call
gives (a varargs one: at least one fewer), then what those call, one call deeper, as the lines
allow.
Parsing only, bounded in size and time.
"""

from __future__ import annotations

import posixpath
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.base import FailedRun
from sandbox.ecosystems.java.places import JavaFrame, frames, module_of
from sandbox.ecosystems.java.source import (
    Call,
    JavaDefinition,
    JavaSource,
    calls,
    definitions,
    enclosing,
    file_of_class,
    is_test_file,
    java_files,
    parse_java,
)
from sandbox.source.grounding import Grounding, render_chosen
from sandbox.testrun.junit import TestFailure
from sandbox.worktree.repo_files import RepoFiles

GROUNDING_S = 5.0  # all the parsing for one first message, at most
MAX_FAILURES = 5  # failing tests followed (the other languages' number)
CALLEE_DEPTH = 2  # calls followed from a definition the tests reach
MAX_SEEN_FILES = 60  # files a test's calls are looked for in


def implicated_files(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int = 3
) -> list[str]:
    """Writable Java source files the failures name, then those defining what the failing
    tests call: most relevant first."""
    if run.summary is None:
        return []
    reach = _Reach(workspace=workspace, paths=paths)
    failures = list(run.summary.failures[:MAX_FAILURES])
    found = [f.path for f in reach.source_frames(failures)]
    found += [d.path for failure in failures for d in reach.callees(reach.from_test(failure))]
    return list(dict.fromkeys(p for p in found if reach.writable(p)))[:limit]


def implicated_code(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, max_lines: int = 150
) -> Grounding:
    """The definitions the failing tests lead to, numbered as read_file numbers lines; empty
    when none is found (the caller then shows whole files)."""
    if run.summary is None or not run.summary.failures:
        return Grounding()
    reach = _Reach(workspace=workspace, paths=paths)
    failures = list(run.summary.failures[:MAX_FAILURES])
    chosen: list[JavaDefinition] = []
    for frame in reach.source_frames(failures):  # first: the failure happened there
        found = enclosing(reach.definitions(frame.path), frame.line)
        if found is not None:
            chosen.append(found)
    tests: list[JavaDefinition] = []
    for failure in failures:
        tests += reach.from_test(failure)
    chosen += tests
    chosen += reach.callees(tests)
    return render_chosen(
        chosen,
        lines_of=reach.lines,
        max_lines=max_lines,
        whole=lambda d: d.kind == "method",
        key=lambda d: (d.path, d.start, d.end),
    )


@dataclass
class _Reach:
    """One grounding's parsed files and what it found in them."""

    workspace: Path
    paths: PathPolicy
    files: RepoFiles = field(init=False)
    java: list[str] = field(init=False)
    deadline: float = field(init=False)
    _parsed: dict[str, JavaSource | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.files = RepoFiles(self.workspace)
        self.java = java_files(self.workspace)
        self.deadline = time.monotonic() + GROUNDING_S

    def writable(self, rel: str) -> bool:
        return (
            rel.endswith(".java")
            and not is_test_file(rel)
            and self.paths.check(rel, write=True).allowed
        )

    def source(self, rel: str) -> JavaSource | None:
        if rel not in self._parsed:
            self._parsed[rel] = None
            if time.monotonic() < self.deadline and self.paths.check(rel).allowed:
                text = self.files.read(rel)
                if text is not None:
                    self._parsed[rel] = parse_java(rel, text.encode())
        return self._parsed[rel]

    def lines(self, rel: str) -> list[str] | None:
        src = self.source(rel)
        return src.lines() if src is not None else None

    def definitions(self, rel: str) -> list[JavaDefinition]:
        src = self.source(rel)
        return definitions(src) if src is not None else []

    def source_frames(self, failures: list[TestFailure]) -> list[JavaFrame]:
        out: list[JavaFrame] = []
        for failure in failures:
            text = f"{failure.message}\n{failure.traceback}"
            for frame in frames(text, files=self.java, module=module_of(failure.test_id)):
                if self.writable(frame.path):
                    out.append(frame)
        return out

    def from_test(self, failure: TestFailure) -> list[JavaDefinition]:
        """The failing test's own method (or, for a class's failure, its class)."""
        name = failure.test_id.rpartition("::")[2]
        klass, _, method = name.partition("#")
        rel = file_of_class(self.java, klass, hint=module_of(failure.test_id))
        if rel is None:
            return []
        defs = self.definitions(rel)
        method = re.sub(r"[(\[].*", "", method)
        nested = klass.split("$")[1:]
        owner = ".".join([klass.split("$")[0].rsplit(".", 1)[-1], *nested])
        if method:
            hits = [d for d in defs if d.kind == "method" and d.name == method]
            own = [d for d in hits if d.owner == owner]
            return (own or hits)[:1]
        return [d for d in defs if d.kind == "type" and d.name == owner.rsplit(".", 1)[-1]][:1]

    def visible_files(self, rel: str) -> list[str]:
        """The non-test Java files the file `rel` sees: its package's and its imports'."""
        src = self.source(rel)
        if src is None:
            return []
        package = src.package().replace(".", "/")
        seen: list[str] = []
        for other in self.java:
            if is_test_file(other):
                continue
            if posixpath.dirname(other).endswith(package) and package:
                seen.append(other)
        for name in src.imports():
            found = file_of_class(self.java, name)
            if found is not None and not is_test_file(found):
                seen.append(found)
        return list(dict.fromkeys(seen))[:MAX_SEEN_FILES]

    def resolve(self, call: Call, visible: list[str]) -> list[JavaDefinition]:
        out: list[JavaDefinition] = []
        for rel in visible:
            for d in self.definitions(rel):
                if d.kind != "method" or not d.accepts(call.arity):
                    continue
                if (
                    call.constructor
                    and d.name == call.name
                    and d.owner
                    and (d.owner.rsplit(".", 1)[-1] == call.name)
                ):
                    out.append(d)
                elif not call.constructor and d.name == call.name:
                    out.append(d)
        return out

    def callees(self, start: list[JavaDefinition]) -> list[JavaDefinition]:
        """What `start` calls in the repository's own code, CALLEE_DEPTH calls deep."""
        found: list[JavaDefinition] = []
        frontier = list(start)
        for _ in range(CALLEE_DEPTH):
            nxt: list[JavaDefinition] = []
            for d in frontier:
                src = self.source(d.path)
                if src is None:
                    continue
                visible = self.visible_files(d.path)
                for call in calls(src, d.node):
                    for callee in self.resolve(call, visible):
                        if callee not in found and callee not in start:
                            found.append(callee)
                            nxt.append(callee)
            frontier = nxt
        return [d for d in found if self.writable(d.path)]
