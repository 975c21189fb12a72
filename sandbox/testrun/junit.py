"""Parse JUnit XML (as pytest writes it) into a compact, typed test summary."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TRACEBACK_LINES = 25
OUTPUT_LINES = 20  # of what a failing test printed, per section
LINE_CHARS = 300
OUTCOME_OF_TAG = {"failure": "failed", "error": "error", "skipped": "skipped"}
#: The <testcase> attribute our pytest plugin writes each test's own node id to.
NODEID_ATTRIBUTE = "nodeid"
TEXT_SUFFIXES = frozenset({"rst", "txt", "md", "rest", "text", "markdown"})  # of doctest files
FEED_BYTES = 256 * 1024  # of the document parsed at a time: the most its tree ever holds
MAX_DEPTH = 32  # pytest's reports nest five deep; deeper is not JUnit (and all of it stays open)
# A bound on what the summary holds (100 bytes a passing case, 250 a failing one): a report of
# 512 MiB that compresses a thousand to one could otherwise name twenty million. The largest
# suites we know of have a few hundred thousand tests.
MAX_TESTCASES = 1_000_000


@dataclass(frozen=True, kw_only=True)
class TestFailure:
    """One failing or erroring test: its id, the kind, the message and a trimmed traceback."""

    __test__ = False  # not a pytest test class, whatever its name

    test_id: str
    kind: str  # "failure" or "error"
    message: str
    traceback: str
    output: str = ""  # what the test printed and logged (pytest's "Captured ..." sections)


@dataclass(frozen=True, kw_only=True)
class TestSummary:
    """Counts and failures of one test run."""

    __test__ = False  # not a pytest test class, whatever its name

    passed: int
    failed: int
    errors: int
    skipped: int
    failures: tuple[TestFailure, ...]
    #: Every test case by id: "passed", "failed", "error" or "skipped" (the verdict compares them).
    outcomes: Mapping[str, str] = field(default_factory=dict)
    #: The report's global <property> elements (the verdict's stamp is one of them).
    properties: Mapping[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors + self.skipped

    @property
    def all_passed(self) -> bool:
        """At least one test ran and none failed or errored."""
        return self.failed == 0 and self.errors == 0 and self.passed > 0

    def failing_ids(self) -> list[str]:
        return [f.test_id for f in self.failures]

    def outcome_of(self, test_id: str) -> str | None:
        """The outcome of the test `test_id` names, None when the report has none: a test
        whose file failed to collect is an "error"; a file's id (no "::") is "passed" when
        every test of it passed, else the first other outcome.

        >>> s = parse_junit(b'<testsuite><testcase classname="t" name="a" file="t.py"/>'
        ...     b'<testcase name="u.py" file="u.py"><error/></testcase></testsuite>')
        >>> [s.outcome_of(i) for i in ("t.py::a", "t.py", "u.py::b", "v.py::c")]
        ['passed', 'passed', 'error', None]
        """
        if test_id in self.outcomes:
            return self.outcomes[test_id]
        path, _, name = test_id.partition("::")
        if name:
            return "error" if self.outcomes.get(path) in ("failed", "error") else None
        under = [v for k, v in self.outcomes.items() if k.startswith(test_id + "::")]
        return next((v for v in under if v != "passed"), "passed") if under else None


#: A test case's id from its element and the <testsuite> elements around it, outermost first.
TestIdOf = Callable[[ET.Element, Sequence[ET.Element]], str]


def parse_junit(
    xml_bytes: bytes, *, max_testcases: int = MAX_TESTCASES, test_id: TestIdOf | None = None
) -> TestSummary:
    """Summarise a JUnit XML document; ValueError if it is not one, or names more test cases.
    Tests are named as pytest names them, or by `test_id` (other runners' JUnit).

    Read as a stream, each element dropped once read: what stays in memory is the summary, not
    the document's tree (a report can be a hundred megabytes, and written by the code under
    test)."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    reader = _Reader(
        max_testcases=max_testcases, test_id=test_id or (lambda case, _: _test_id(case))
    )
    view = memoryview(xml_bytes)
    try:
        for offset in range(0, len(view), FEED_BYTES):
            parser.feed(view[offset : offset + FEED_BYTES])
            reader.read(parser.read_events())
        parser.close()
    except ET.ParseError as exc:
        raise ValueError(f"not JUnit XML: {exc}") from exc
    reader.read(parser.read_events())
    return reader.summary()


class _Reader:
    """The events of one document, in order, into counts, failures, outcomes and properties."""

    def __init__(self, *, max_testcases: int, test_id: TestIdOf) -> None:
        self.max_testcases = max_testcases
        self.test_id = test_id
        self.open: list[ET.Element] = []  # the elements started and not yet ended, root first
        self.suites = 0  # of them, <testsuite>s
        self.case: ET.Element | None = None  # the <testcase> being read
        self.outcome: tuple[str, str, str] | None = None  # its first failure/error/skipped
        self.output: list[tuple[str, str]] = []  # its system-out and system-err
        self.counts = dict.fromkeys(("passed", "failed", "error", "skipped"), 0)
        self.failures: list[TestFailure] = []
        self.outcomes: dict[str, str] = {}
        self.properties: dict[str, str] = {}

    def read(self, events: Iterator[tuple[Any, ...]]) -> None:
        """Take in the events parsed so far ("start" and "end" only, each with its element)."""
        for event, element in events:
            if event == "start":
                self._start(element)
            else:
                self._end(element)
        # Every child of an open element has been read, but for the open one among them (the
        # last): drop them, so that the tree never holds more than one fed chunk.
        for depth, element in enumerate(self.open):
            keep = 1 if depth + 1 < len(self.open) else 0
            del element[: len(element) - keep]

    def _start(self, element: ET.Element) -> None:
        if not self.open and element.tag not in ("testsuite", "testsuites"):
            raise ValueError(f"not JUnit XML: root element <{element.tag}>")
        self.open.append(element)
        if len(self.open) > MAX_DEPTH:
            raise ValueError(f"not JUnit XML: elements nested more than {MAX_DEPTH} deep")
        root_child = len(self.open) == 2  # Node's junit puts top-level tests in the root
        if element.tag == "testsuite":
            self.suites += 1
        elif element.tag == "testcase" and self.case is None and (self.suites or root_child):
            self.case, self.outcome, self.output = element, None, []

    def _end(self, element: ET.Element) -> None:
        self.open.pop()
        parent = self.open[-1] if self.open else None
        if element.tag == "testsuite":
            self.suites -= 1
        if element is self.case:
            self._case_read(element)
        elif parent is not None and parent is self.case:
            if element.tag in OUTCOME_OF_TAG and self.outcome is None:
                self.outcome = (element.tag, element.get("message") or "", element.text or "")
            elif element.tag in ("system-out", "system-err"):
                self.output.append((element.tag, element.text or ""))
        elif (
            element.tag == "property"
            and parent is not None
            and parent.tag == "properties"
            and len(self.open) > 1
            and self.open[-2].tag == "testsuite"
        ):
            self.properties[element.get("name") or ""] = element.get("value") or ""

    def _case_read(self, case: ET.Element) -> None:
        self.case = None
        if len(self.outcomes) >= self.max_testcases:
            raise ValueError(f"too large: more than {self.max_testcases:,} test cases")
        test_id = self.test_id(case, [e for e in self.open if e.tag == "testsuite"])
        if self.outcome is None:
            self.outcomes[test_id] = "passed"
            self.counts["passed"] += 1
            return
        tag, message, text = self.outcome
        self.outcomes[test_id] = outcome = OUTCOME_OF_TAG[tag]
        self.counts[outcome] += 1
        if tag != "skipped":
            self.failures.append(
                TestFailure(
                    test_id=test_id,
                    kind=tag,
                    message=message.strip()[:500],
                    traceback=trim(text),
                    output=_captured(self.output),
                )
            )

    def summary(self) -> TestSummary:
        counts = self.counts
        return TestSummary(
            passed=counts["passed"],
            failed=counts["failed"],
            errors=counts["error"],
            skipped=counts["skipped"],
            failures=tuple(self.failures),
            outcomes=self.outcomes,
            properties=self.properties,
        )


def _test_id(case: ET.Element) -> str:
    """pytest's node id: as our plugin recorded it (sandbox/ecosystems/python/junit_stamp.py), else
    rebuilt from
    classname ("pkg.test_mod.TestClass"), name and file, for reports written without it (CI's)."""
    nodeid = case.get(NODEID_ATTRIBUTE)
    if nodeid:
        return nodeid
    classname = case.get("classname") or ""
    name = case.get("name") or "?"
    file = case.get("file")
    if file and not classname:
        return file  # a file that failed to collect: pytest names it by its path alone
    parts = classname.split(".") if classname else []
    # A doctest of a text file, `docs/intro.rst::intro.rst`: classname "docs.intro.rst" (the
    # path, dotted), name "intro.rst"; said by the file attribute where there is one, else by
    # the name and the usual suffixes ("pkg.mod" with name "pkg.mod" is pkg/mod.py's doctest).
    if file and not file.endswith(".py") and classname == file.replace("/", "."):
        return f"{file}::{name}"
    if not file and len(parts) > 1 and parts[-1] in TEXT_SUFFIXES:
        if name == f"{parts[-2]}.{parts[-1]}":
            return "/".join([*parts[:-2], name]) + f"::{name}"
    module_parts = file[:-3].replace("/", ".").split(".") if file and file.endswith(".py") else []
    # The class's module is the file's module, or a tail of it (pytest's default import mode
    # names tests/test_x.py `test_x` when tests/ is not a package).
    for start in range(len(module_parts)):
        tail = module_parts[start:]
        if parts[: len(tail)] == tail:
            return "::".join([file or "", *parts[len(tail) :], name])
    # Without a file attribute, or with one that is not the class's module (a method inherited
    # from a mixin is reported where it is written, and pytest cannot select it there): take
    # the longest prefix of lowercase names as the module path.
    split = len(parts)
    while split > 0 and parts[split - 1][:1].isupper():
        split -= 1
    module = "/".join(parts[:split]) + ".py" if split else ""
    return "::".join([p for p in [module, *parts[split:], name] if p])


CAPTURED = re.compile(r"^-{3,} (Captured [A-Za-z]+) -{3,}$", re.M)


def _captured(sections: list[tuple[str, str]]) -> str:
    """The non-empty "Captured Out/Err/Log" sections of a test case's system-out and
    system-err (`(tag, text)` pairs), trimmed."""
    kept = []
    for tag, text in sections:
        parts = CAPTURED.split(text)
        if len(parts) == 1 and parts[0].strip():  # no section headers: the text as it is
            kept.append(f"{tag}:\n{trim(parts[0], lines=OUTPUT_LINES)}")
        for title, body in zip(parts[1::2], parts[2::2], strict=True):
            if body.strip():
                kept.append(f"{title.lower()}:\n{trim(body, lines=OUTPUT_LINES)}")
    return "\n".join(kept)


def trim(text: str, *, lines: int | None = None) -> str:
    """`text` cut to `lines` lines (TRACEBACK_LINES by default), the head and the tail kept,
    each line to LINE_CHARS."""
    limit = lines or TRACEBACK_LINES
    rows = [row[:LINE_CHARS] for row in text.strip("\n").splitlines()]
    if len(rows) <= limit:
        return "\n".join(rows)
    head, tail = rows[:5], rows[-(limit - 6) :]
    return "\n".join([*head, f"[... {len(rows) - len(head) - len(tail)} lines cut ...]", *tail])
