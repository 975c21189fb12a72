"""Facts for the first message on a Rust project: the source the failing tests point at, as the
other languages' packages find it (the same `Grounding`).

The places a failure names in the project's own source (places.py: a panic, a backtrace, the
compiler's `-->`) come first: the functions around them. Then the failing test itself, found
by its id (report.py: `crate::tests::name` in the crate's files, `tests/it.rs::name` in that
file), the calls it makes (source.py: its macros' arguments too), resolved by name to the
functions and methods of the project's own writable files (a qualifier `calc::add` prefers a
file of that module), then what those call, two calls deep, as the lines allow. A failing
doc-test (`src/lib.rs::Stack::push (line 42)`) leads to the item its doc comment documents (the
definition whose span, doc comments included, holds that line; else the one of that name) and
to what its example calls (the example's lines, read out of the comment, parsed as a function's
body): when only doc-tests fail, the functions they exercise are still shown whole, and the
search ranks their lines (worker/search/reached.py). Parsing only, bounded in files, size and
time.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.base import FailedRun
from sandbox.ecosystems.rust.places import frames
from sandbox.ecosystems.rust.source import (
    Call,
    RustDefinition,
    RustSource,
    calls,
    definitions,
    enclosing,
    parse_rust,
)
from sandbox.source.grounding import Grounding, render_chosen
from sandbox.testrun.junit import TestFailure
from sandbox.worktree.repo_files import RepoFiles

GROUNDING_S = 5.0
MAX_FAILURES = 5
CALLEE_DEPTH = 2
MAX_FILES = 400  # .rs files looked at
SKIPPED = ("target", ".git", "node_modules", "vendor")
#: A doc-test's id: its file, the item (`Stack::push`, "" for a module's own docs), the line.
_DOC_TEST = re.compile(r"(.+\.rs)::(.*) \(line (\d+)\)")
MAX_EXAMPLE_LINES = 200  # of one doc-test's example read


def implicated_files(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int = 3
) -> list[str]:
    """Writable Rust files the failures name, then those defining what the failing tests call."""
    if run.summary is None:
        return []
    reach = _Reach(workspace=workspace, paths=paths)
    failures = run.summary.failures[:MAX_FAILURES]
    found = [d.path for d in reach.at_frames(failures)]
    found += [d.path for failure in failures for d in reach.from_test(failure)]
    return list(dict.fromkeys(found))[:limit]


def implicated_code(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, max_lines: int = 150
) -> Grounding:
    """The definitions the failing tests lead to, numbered as read_file numbers lines."""
    if run.summary is None or not run.summary.failures:
        return Grounding()
    reach = _Reach(workspace=workspace, paths=paths)
    failures = run.summary.failures[:MAX_FAILURES]
    chosen = reach.at_frames(failures)
    for failure in failures:
        chosen += reach.from_test(failure)
    chosen += reach.callees(chosen)

    def lines_of(rel: str) -> list[str] | None:
        src = reach.source(rel)
        return src.lines() if src is not None else None

    return render_chosen(
        chosen, lines_of=lines_of, max_lines=max_lines,
        whole=lambda d: d.node.type == "function_item", key=lambda d: (d.path, d.start),
    )  # fmt: skip


@dataclass
class _Reach:
    workspace: Path
    paths: PathPolicy
    files: RepoFiles = field(init=False)
    deadline: float = field(init=False)
    _parsed: dict[str, RustSource | None] = field(default_factory=dict)
    _all: list[str] | None = None

    def __post_init__(self) -> None:
        self.files = RepoFiles(self.workspace)
        self.deadline = time.monotonic() + GROUNDING_S

    def source(self, rel: str) -> RustSource | None:
        if rel not in self._parsed:
            self._parsed[rel] = None
            if time.monotonic() < self.deadline and self.paths.check(rel).allowed:
                text = self.files.read(rel)
                if text is not None:
                    self._parsed[rel] = parse_rust(rel, text.encode())
        return self._parsed[rel]

    def definitions(self, rel: str) -> list[RustDefinition]:
        src = self.source(rel)
        return definitions(src) if src is not None else []

    def rust_files(self) -> list[str]:
        """The repository's .rs files (target/ and the like left out), breadth first."""
        if self._all is None:
            found: list[str] = []
            folders = [""]
            while folders and len(found) < MAX_FILES:
                folder = folders.pop(0)
                for name in self.files.listed(folder or "."):
                    rel = f"{folder}/{name}" if folder else name
                    if self.files.exists(rel):
                        if name.endswith(".rs"):
                            found.append(rel)
                    elif name not in SKIPPED and not name.startswith("."):
                        folders.append(rel)
            self._all = found[:MAX_FILES]
        return self._all

    def writable(self, rel: str) -> bool:
        return rel.endswith(".rs") and self.paths.check(rel, write=True).allowed

    def at_frames(self, failures: tuple[TestFailure, ...]) -> list[RustDefinition]:
        out: list[RustDefinition] = []
        for failure in failures:
            for path, line in frames(f"{failure.message}\n{failure.traceback}"):
                if self.writable(path):
                    found = enclosing(self.definitions(path), line)
                    if found is not None and not found.is_test:
                        out.append(found)
        return out

    def from_test(self, failure: TestFailure) -> list[RustDefinition]:
        if doc := _DOC_TEST.fullmatch(failure.test_id):
            return self.from_doc_test(doc.group(1), doc.group(2), int(doc.group(3)))
        head, _, name = failure.test_id.partition("::")
        if not name or " (line " in name:
            return []
        if head.endswith(".rs"):
            candidates = [head]
        else:
            candidates = [r for r in self.rust_files() if "/tests/" not in f"/{r}"]
        want = name.split("::")
        for rel in candidates:
            for d in self.definitions(rel):
                if d.name == want[-1] and d.is_test:
                    owner = d.owner.split("::") if d.owner else []
                    if want[:-1][-len(owner) :] == owner or not owner:
                        src = self.source(rel)
                        return self.resolve_all(src, d) if src is not None else []
        return []

    def from_doc_test(self, rel: str, item: str, line: int) -> list[RustDefinition]:
        """The item a doc-test documents, then what its example calls."""
        if not self.writable(rel):
            return []
        defs = [d for d in self.definitions(rel) if not d.is_test]
        documented = enclosing(defs, line) or next((d for d in defs if d.title == item), None)
        out = {(documented.path, documented.start): documented} if documented else {}
        example = self.example(rel, line)
        for call in calls(example, example.root) if example is not None else ():
            for found in self.resolve(call):
                out.setdefault((found.path, found.start), found)
        return list(out.values())

    def example(self, rel: str, line: int) -> RustSource | None:
        """The doc-test's example opening at `line` (its ``` fence), as a function's body: the
        comment's marker, and a hidden line's `#`, taken off."""
        src = self.source(rel)
        if src is None:
            return None
        lines = src.lines()[line : line + MAX_EXAMPLE_LINES]
        body: list[str] = []
        for text in lines:
            code = re.sub(r"^\s*(?://[/!]|\*)? ?", "", text, count=1)
            if code.lstrip().startswith("```"):
                break
            body.append(code[2:] if code.startswith("# ") else "" if code == "#" else code)
        return parse_rust(rel, ("fn example() {\n" + "\n".join(body) + "\n}\n").encode())

    def resolve_all(self, src: RustSource, definition: RustDefinition) -> list[RustDefinition]:
        out: list[RustDefinition] = []
        for call in calls(src, definition.node):
            out += self.resolve(call)
        return out

    def resolve(self, call: Call) -> list[RustDefinition]:
        """The project's writable definitions `call` may be (not tests; a qualified call's
        module preferred)."""
        found = [
            d
            for rel in self.rust_files()
            if self.writable(rel)
            for d in self.definitions(rel)
            if d.name == call.name and not d.is_test and d.node.type == "function_item"
        ]
        if call.qualifier:
            preferred = [d for d in found if call.qualifier in (d.owner or "", _stem(d.path))]
            found = preferred or found
        return found[:3]

    def callees(self, chosen: list[RustDefinition]) -> list[RustDefinition]:
        seen = {(d.path, d.start) for d in chosen}
        out: list[RustDefinition] = []
        layer = list(chosen)
        for _ in range(CALLEE_DEPTH):
            following: list[RustDefinition] = []
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


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1].removesuffix(".rs")
    return path.rsplit("/", 2)[-2] if name == "mod" and "/" in path else name
