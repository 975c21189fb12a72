"""TAP (13 and 14) read into tests: test points, subtests, directives, YAML diagnostics.

Two shapes reach us. node-tap and ava write a test point per test, a subtest's points indented
four spaces under a `# Subtest: name` line and closed by the parent's point; the points inside
a test with no subtests of its own are its assertions. tape writes flat assertions, each test
a `# name` comment before its assertions. Read line by line from the bytes, never whole: lines
that are not TAP (what a test printed) are passed over.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

POINT = re.compile(r"^(?P<indent> *)(?P<not>not )?ok\b(?: +\d+)?(?: +-)?(?: +(?P<rest>.*))?$")
SUBTEST = re.compile(r"^(?P<indent> *)# Subtest(?:: (?P<name>.*))?$")
PLAN = re.compile(r"^ *1\.\.\d+")
YAML_MESSAGE = re.compile(r"^ {0,4}(?:message|error): ?(?P<value>.*)$")
DIRECTIVE = re.compile(r"(?<!\\)#\s*(?P<kind>skip|todo)\b", re.I)
TEXT_CHARS = 64 * 1024  # of diagnostics kept for one test
TOP_LEVEL = "(top level)"  # a node-tap file's assertions made outside any subtest


@dataclass
class TapTest:
    """One test as TAP reported it: its names (outermost first), outcome and diagnostics."""

    path: list[str]
    ok: bool
    directive: str = ""  # "skip", "todo" or ""
    text: str = ""
    own_error: bool = False  # failed outside its tests (a file that died, a hook)
    message: str = ""  # what its diagnostics say went wrong, when they say it

    def result(self) -> tuple[str, str, str]:
        """(outcome, text, message): outcome "passed", "failed", "error" or "skipped"."""
        if self.directive:
            return "skipped", "", ""
        if self.ok:
            return "passed", "", ""
        return ("error" if self.own_error else "failed"), self.text, self.message


@dataclass
class _Point:
    indent: int
    ok: bool
    desc: str
    directive: str
    yaml: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return not self.ok and not self.directive

    def text(self) -> str:
        return "\n".join([self.desc, *self.yaml]).strip()

    def message(self) -> str:
        """The diagnostics' `message:` or `error:` (a block's first line), else the point's
        description."""
        for k, line in enumerate(self.yaml):
            match = YAML_MESSAGE.match(line)
            if not match:
                continue
            value = match.group("value").strip().strip("'\"")
            if value in ("|", "|-", ">", ">-", "|+", ">+") and k + 1 < len(self.yaml):
                value = self.yaml[k + 1].strip()
            if value:
                return value
        return self.desc


@dataclass
class _Frame:
    name: str
    body: int  # the indent of its lines
    tests: int = 0  # child tests closed
    failed_tests: int = 0
    asserts: int = 0
    failed_asserts: list[str] = field(default_factory=list)
    message: str = ""  # of its first failed assertion


def tests(data: bytes, *, files_at_top: bool) -> Iterator[TapTest]:
    """The tests of a node-tap or ava TAP stream (`files_at_top`: node-tap's top-level
    subtests are its test files). ValueError when `data` holds no TAP at all."""
    frames: list[_Frame] = []
    seen = False
    for point, line in _points(data):
        if point is None:
            match = SUBTEST.match(line)
            if match:
                seen = True
                indent = len(match.group("indent"))
                while frames and frames[-1].body > indent:
                    frames.pop()  # a subtest that never closed: its process died
                frames.append(_Frame(name=match.group("name") or "", body=indent + 4))
            elif PLAN.match(line) or line.startswith("TAP version"):
                seen = True
            continue
        seen = True
        while frames and frames[-1].body > point.indent + 4:
            frames.pop()
        if frames and frames[-1].body == point.indent + 4:
            frame = frames.pop()
            names = [f.name for f in frames] + [frame.name or point.desc]
            test = _closed(frame, point, names, files_at_top=files_at_top and not frames)
            if frames:
                frames[-1].tests += 1
                frames[-1].failed_tests += point.failed
            if test is not None:
                yield test
        elif frames and frames[-1].body == point.indent and point.directive:
            # A skipped subtest has no `# Subtest` line: a test, not an assertion.
            names = [f.name for f in frames] + [point.desc]
            yield TapTest(path=names, ok=point.ok, directive=point.directive)
        elif frames and frames[-1].body == point.indent:
            frame = frames[-1]
            frame.asserts += 1
            if point.failed and sum(map(len, frame.failed_asserts)) < TEXT_CHARS:
                frame.failed_asserts.append(point.text())
                frame.message = frame.message or point.message()
        elif not frames:
            yield TapTest(
                path=[point.desc],
                ok=point.ok,
                directive=point.directive,
                text=point.text(),
                own_error=files_at_top,  # node-tap: a file that wrote no TAP of its own
                message=point.message(),
            )
    if not seen:
        raise ValueError("not TAP: no test point, subtest or plan in it")


def _closed(
    frame: _Frame, point: _Point, names: list[str], *, files_at_top: bool
) -> TapTest | None:
    """The test a subtest's closing point reports, or None when its outcome is its children's."""
    own = "\n\n".join([*frame.failed_asserts, point.text()])
    message = frame.message or point.message()
    if frame.tests:
        if not point.failed or frame.failed_tests:
            return None  # a parent: its children are the tests
        return TapTest(path=names, ok=False, text=own, own_error=True, message=message)
    if files_at_top:
        if frame.asserts:  # a test file of assertions alone
            path = [*names, TOP_LEVEL]
            return TapTest(
                path=path, ok=point.ok, directive=point.directive, text=own, message=message
            )
        if not point.failed:
            return None  # an empty file
        return TapTest(path=names, ok=False, text=own, own_error=True, message=message)
    return TapTest(path=names, ok=point.ok, directive=point.directive, text=own, message=message)


def tape_tests(data: bytes) -> Iterator[TapTest]:
    """The tests of tape's TAP: each `# name` comment opens one; after the plan, the summary's
    comments (`# tests 5`) are not tests. ValueError when `data` holds no TAP at all."""
    current: TapTest | None = None
    seen = planned = False
    for point, line in _points(data):
        if point is None:
            if PLAN.match(line) or line.startswith("TAP version"):
                seen = True
                planned = planned or bool(PLAN.match(line))
            elif line.startswith("# ") and not planned:
                if current is not None:
                    yield current
                name = line[2:].strip()
                kind = name.split(" ", 1)[0].lower()
                skipped = kind in ("skip", "todo") and " " in name
                current = TapTest(
                    path=[name.split(" ", 1)[1] if skipped else name],
                    ok=True,
                    directive=kind if skipped else "",
                )
            continue
        seen = True
        if current is None:
            current = TapTest(path=[TOP_LEVEL], ok=True)
        if point.failed:
            current.ok = False
            current.message = current.message or point.message()
            if len(current.text) < TEXT_CHARS:
                current.text = "\n\n".join(t for t in (current.text, point.text()) if t)
    if current is not None:
        if not planned and current.ok:  # tape prints its plan last: the process died in it
            current.ok, current.own_error = False, True
            current.text = current.message = (
                "the test process ended inside this test (no plan followed it)"
            )
        yield current
    if not seen:
        raise ValueError("not TAP: no test point or plan in it")


def _points(data: bytes) -> Iterator[tuple[_Point | None, str]]:
    """Each line as (its test point with its YAML block, line), or (None, line)."""
    pending: _Point | None = None
    yaml_indent: int | None = None
    for raw in io.BytesIO(data):
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if pending is not None:
            stripped = line.strip()
            if yaml_indent is None and stripped == "---" and _indent(line) > pending.indent:
                yaml_indent = _indent(line)
                continue
            if yaml_indent is not None:
                if stripped == "..." and _indent(line) == yaml_indent:
                    yaml_indent = None
                    yield pending, ""
                    pending = None
                elif len(pending.yaml) < 400:
                    pending.yaml.append(
                        line[yaml_indent:] if _indent(line) >= yaml_indent else line
                    )
                continue
            yield pending, ""
            pending = None
        match = POINT.match(line)
        if match is None:
            yield None, line
            continue
        rest = match.group("rest") or ""
        directive = DIRECTIVE.search(rest)
        desc = rest[: directive.start()] if directive else re.split(r"(?<!\\) # ", rest)[0]
        pending = _Point(
            indent=len(match.group("indent")),
            ok=match.group("not") is None,
            desc=desc.strip().replace("\\#", "#").replace("\\\\", "\\"),
            directive=directive.group("kind").lower() if directive else "",
        )
    if pending is not None:
        yield pending, ""


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))
