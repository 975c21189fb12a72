"""Facts for the first message on a JavaScript or TypeScript repository: the source the
failing tests point at, as Python's package finds it (sandbox/ecosystems/python/grounding.py:
the same two calls, the same `Grounding`).

A failure's stack names the files and lines its error passed through
(sandbox/ecosystems/node/stack_frames.py): the functions around those lines in the repository's
own files come first. An assertion's stack ends in the test, so the test is followed too: the
`it`/`test` callback around its line in the test file (or by its title), the names it uses,
the imports that bind them (ES `import`, `require`, TypeScript's `import = require`), resolved
to files as Node and TypeScript resolve them and through re-exports (an `index.js` that
re-exports), to their definitions; and of a class it reaches, the methods the test calls.
Parsing only (sandbox/ecosystems/node/source.py: a real parser, bounded in size and time).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.base import FailedRun
from sandbox.ecosystems.node.definitions import (
    JsDefinition,
    Uses,
    calls,
    definitions,
    enclosing,
    failing_test_code,
    helpers,
    top_level,
    uses,
)
from sandbox.ecosystems.node.resolve import Modules
from sandbox.ecosystems.node.stack_frames import (
    JS_SUFFIXES,
    WORKSPACE_MOUNT,
    Frame,
    failure_texts,
    frames,
    is_dependency,
    is_source,
    is_test_file,
    relative,
)
from sandbox.source.grounding import Grounding, render_chosen
from sandbox.testrun.junit import TestFailure

GROUNDING_S = 5.0  # all the parsing for one first message, at most
MAX_FAILURES = 5  # failing tests followed (the Python grounding's number)
CALLEE_DEPTH = 2  # calls followed from a definition the tests reach
MAX_CLASSES = 8  # classes (reached, and what they extend) searched for a method the test calls
# A runner's test id: `file::title` (pytest's form), or titles joined by ` > ` (vitest) or
# ` › ` (jest); the last part is the test's own title.
_TITLE_SEPARATORS = re.compile(r"::| > | › ")


@dataclass(frozen=True)
class _Failing:
    """One failing test as the grounding sees it: its stack and its place in its test file."""

    frames: tuple[Frame, ...]
    test_file: str | None
    test_line: int | None  # the innermost frame of its stack in the test file
    title: str


def implicated_files(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int = 3
) -> list[str]:
    """Writable source files the failures' stacks pass through, then those defining what the
    failing tests use, then those their test files import: most relevant first."""
    if run.summary is None:
        return []
    reach = _Reach(workspace=workspace, paths=paths)
    failing = [reach.failing(f) for f in run.summary.failures[:MAX_FAILURES]]
    found = [frame.path for frame in reach.source_frames(run)]
    found += [d.path for f in failing for d in reach.from_test(f)]  # past an index's re-exports
    for test_file in dict.fromkeys(f.test_file for f in failing if f.test_file):
        for item in reach.modules.imports(test_file):
            rel = reach.modules.resolve(test_file, item.specifier)
            if rel is not None and reach.writable_source(rel):
                found.append(rel)
    return list(dict.fromkeys(found))[:limit]


def implicated_code(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, max_lines: int = 150
) -> Grounding:
    """The definitions the failing tests lead to, numbered as read_file numbers lines; empty
    when none is found (the caller then shows whole files)."""
    if run.summary is None or not run.summary.failures:
        return Grounding()
    reach = _Reach(workspace=workspace, paths=paths)
    failing = [reach.failing(f) for f in run.summary.failures[:MAX_FAILURES]]
    chosen: list[JsDefinition] = []
    for frame in reach.source_frames(run):  # first: the error was thrown there
        chosen += reach.around(frame)
    for one in failing:
        chosen += reach.from_test(one)
    # Then what those call: an exported function's work is often done by the module's own
    # helpers, which a test never names (as long as the lines allow).
    chosen += reach.callees(chosen)
    return reach.render(chosen, max_lines=max_lines)


@dataclass
class _Reach:
    """One grounding's parsed files and what it found in them."""

    workspace: Path
    paths: PathPolicy
    modules: Modules = field(init=False)
    _defs: dict[str, list[JsDefinition]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.modules = Modules(workspace=self.workspace, deadline=time.monotonic() + GROUNDING_S)

    def writable_source(self, rel: str) -> bool:
        return (
            is_source(rel)
            and self.paths.check(rel, write=True).allowed
            and self.modules.is_file(rel)
        )

    def definitions(self, rel: str) -> list[JsDefinition]:
        if rel not in self._defs:
            src = self.modules.source(rel)
            self._defs[rel] = definitions(src) if src is not None else []
        return self._defs[rel]

    def source_frames(self, run: FailedRun) -> list[Frame]:
        """The frames of the failures' stacks in writable source files, failure by failure."""
        texts = failure_texts(run, workspace=self.workspace)
        found = [f for text in texts for f in frames(text, workspace=self.workspace)]
        return [f for f in dict.fromkeys(found) if self.writable_source(f.path)]

    def around(self, frame: Frame) -> list[JsDefinition]:
        """The function that holds a frame's line, else the top-level code around it."""
        found = enclosing(self.definitions(frame.path), frame.line)
        if found is not None:
            return [found]
        src = self.modules.source(frame.path)
        total = len(src.lines()) if src is not None else 0
        return [top_level(frame.path, frame.line, total)] if frame.line <= total else []

    def failing(self, failure: TestFailure) -> _Failing:
        text = "\n".join((failure.traceback, failure.message, failure.output))
        stack = tuple(frames(text, workspace=self.workspace))
        head = failure.test_id.split("::")[0]
        if head.startswith("/"):  # a runner that names the test file by its absolute path
            head = relative(head, roots=(WORKSPACE_MOUNT, self.workspace.as_posix())) or ""
        test_file = head if head.endswith(JS_SUFFIXES) and self.modules.is_file(head) else None
        in_tests = [
            f.path
            for f in stack
            if is_test_file(f.path) and not is_dependency(f.path) and self.modules.is_file(f.path)
        ]
        test_file = test_file or (in_tests[0] if in_tests else None)
        line = next((f.line for f in stack if f.path == test_file), None)
        title = _TITLE_SEPARATORS.split(failure.test_id)[-1].strip()
        return _Failing(stack, test_file, line, title)

    def from_test(self, one: _Failing) -> list[JsDefinition]:
        """What the failing test's code reaches through its file's imports."""
        test_file = one.test_file
        if test_file is None or not self.paths.check(test_file).allowed:
            return []
        src = self.modules.source(test_file)
        if src is None:
            return []
        code = failing_test_code(src, line=one.test_line, title=one.title) or src.root
        used = uses(src, code)
        own = helpers(src)
        for name in used.names:  # the test file's helpers it calls, one level down
            if name in own and own[name] is not code:
                more = uses(src, own[name])
                used = Uses(used.names + more.names, used.members + more.members)
        bound = {
            binding.local: (item.specifier, binding.imported)
            for item in self.modules.imports(test_file)
            for binding in item.bindings
        }
        found: list[JsDefinition] = []
        for name in dict.fromkeys(used.names):
            if name not in bound:
                continue
            specifier, imported = bound[name]
            module = self.modules.resolve(test_file, specifier)
            if module is None:
                continue
            wanted = [imported]
            if imported in ("*", "default"):  # the module object: `m.f()` is m's export f
                wanted = ["default", *(m for obj, m in used.members if obj == name)]
            for export in wanted:
                found += self._defined(module, export)
        return found + self._methods(found, used.properties)

    def _defined(self, module: str, export: str) -> list[JsDefinition]:
        """The definition of `module`'s export `export`, where it is a writable source file's."""
        origin = self.modules.origin(module, export)
        if origin is None or origin[1] == "*" or not self.writable_source(origin[0]):
            return []
        rel, local = origin
        named = [d for d in self.definitions(rel) if d.name == local]
        tops = [d for d in named if d.top]
        return tops[:1] if tops else named[:1]

    def callees(self, found: list[JsDefinition]) -> list[JsDefinition]:
        """The functions `found` call (`f()`, `new F()`, `this.m()`), CALLEE_DEPTH calls
        deep, nearest first; a writable source file's only."""
        out: list[JsDefinition] = []
        seen = {(d.path, d.start) for d in found}
        frontier = [d for d in found if not d.is_class]
        for _ in range(CALLEE_DEPTH):
            reached: list[JsDefinition] = []
            for d in frontier:
                src = self.modules.source(d.path)
                for name, on_this in calls(src, d) if src is not None else []:
                    reached += self._callee(d, name, on_this=on_this)
            frontier = []
            for d in reached:
                if (d.path, d.start) not in seen:
                    seen.add((d.path, d.start))
                    out.append(d)
                    frontier += [] if d.is_class else [d]
        return out

    def _callee(self, caller: JsDefinition, name: str, *, on_this: bool) -> list[JsDefinition]:
        if on_this:  # a method of the caller's own class
            return [
                d
                for d in self.definitions(caller.path)
                if d.owner == caller.owner and d.name == name
            ][:1]
        origin = self.modules.local(caller.path, name)
        if origin is None or not self.writable_source(origin[0]):
            return []
        named = [d for d in self.definitions(origin[0]) if d.name == origin[1] and d.top]
        return named[:1]

    def _methods(self, found: list[JsDefinition], names: tuple[str, ...]) -> list[JsDefinition]:
        """The methods `names` of the classes found and of the classes they extend (in the
        same file), nearest first: `new Range(0, 10).clamp(12)` runs `Range.clamp`."""
        out: list[JsDefinition] = []
        queue = [d for d in found if d.is_class]
        seen: set[tuple[str, str]] = set()
        while queue and len(seen) < MAX_CLASSES:
            cls = queue.pop(0)
            if (cls.path, cls.name) in seen:
                continue
            seen.add((cls.path, cls.name))
            defs = self.definitions(cls.path)
            out += [d for n in names for d in defs if d.owner == cls.name and d.name == n]
            queue += [d for b in cls.bases for d in defs if d.is_class and d.name == b]
        return out

    def render(self, chosen: list[JsDefinition], *, max_lines: int) -> Grounding:
        """The definitions chosen, each once and none inside one already shown whole, within
        `max_lines`."""
        # A method whose class is shown whole is shown as that class, where the method ranks.
        chosen = [_holder(d, chosen) for d in chosen]

        def lines_of(rel: str) -> list[str] | None:
            src = self.modules.source(rel)
            return src.lines() if src is not None else None

        return render_chosen(
            chosen, lines_of=lines_of, max_lines=max_lines, whole=lambda d: not d.outline,
            key=lambda d: (d.path, d.start, d.name),
        )  # fmt: skip


def _holder(d: JsDefinition, chosen: list[JsDefinition]) -> JsDefinition:
    """The outermost definition chosen that is shown whole and holds `d`, else `d`."""
    holders = [
        w
        for w in chosen
        if w.path == d.path and not w.outline and w.start <= d.start and d.end <= w.end
    ]
    return min(holders, key=lambda w: (w.start, -w.end), default=d)
