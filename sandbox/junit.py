"""Parse JUnit XML (as pytest writes it) into a compact, typed test summary."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field

TRACEBACK_LINES = 25
OUTPUT_LINES = 20  # of what a failing test printed, per section
LINE_CHARS = 300
OUTCOME_OF_TAG = {"failure": "failed", "error": "error", "skipped": "skipped"}


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


def parse_junit(xml_bytes: bytes) -> TestSummary:
    """Summarise a JUnit XML document; ValueError if it is not one."""
    try:
        root = ET.fromstring(xml_bytes)
    except ET.ParseError as exc:
        raise ValueError(f"not JUnit XML: {exc}") from exc
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if root.tag not in ("testsuite", "testsuites"):
        raise ValueError(f"not JUnit XML: root element <{root.tag}>")
    passed = failed = errors = skipped = 0
    failures: list[TestFailure] = []
    outcomes: dict[str, str] = {}
    properties: dict[str, str] = {}
    for suite in suites:
        for prop in suite.findall("./properties/property"):
            properties[prop.get("name") or ""] = prop.get("value") or ""
        for case in suite.iter("testcase"):
            test_id = _test_id(case)
            outcome = None
            for child in case:
                if child.tag in ("failure", "error", "skipped"):
                    outcome = child
                    break
            outcomes[test_id] = "passed" if outcome is None else OUTCOME_OF_TAG[outcome.tag]
            if outcome is None:
                passed += 1
            elif outcome.tag == "skipped":
                skipped += 1
            else:
                if outcome.tag == "failure":
                    failed += 1
                else:
                    errors += 1
                failures.append(
                    TestFailure(
                        test_id=test_id,
                        kind=outcome.tag,
                        message=(outcome.get("message") or "").strip()[:500],
                        traceback=_trim(outcome.text or ""),
                        output=_captured(case),
                    )
                )
    return TestSummary(
        passed=passed,
        failed=failed,
        errors=errors,
        skipped=skipped,
        failures=tuple(failures),
        outcomes=outcomes,
        properties=properties,
    )


def _test_id(case: ET.Element) -> str:
    """pytest's node id rebuilt from classname ("pkg.test_mod.TestClass") and name."""
    classname = case.get("classname") or ""
    name = case.get("name") or "?"
    file = case.get("file")
    if file and not classname:
        return file  # a file that failed to collect: pytest names it by its path alone
    parts = classname.split(".") if classname else []
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


def _captured(case: ET.Element) -> str:
    """The non-empty "Captured Out/Err/Log" sections of a test case, trimmed."""
    kept = []
    for element in (e for e in case if e.tag in ("system-out", "system-err")):
        parts = CAPTURED.split(element.text or "")
        if len(parts) == 1 and parts[0].strip():  # no section headers: the text as it is
            kept.append(f"{element.tag}:\n{_trim(parts[0], lines=OUTPUT_LINES)}")
        for title, body in zip(parts[1::2], parts[2::2], strict=True):
            if body.strip():
                kept.append(f"{title.lower()}:\n{_trim(body, lines=OUTPUT_LINES)}")
    return "\n".join(kept)


def _trim(text: str, *, lines: int | None = None) -> str:
    limit = lines or TRACEBACK_LINES
    rows = [row[:LINE_CHARS] for row in text.strip("\n").splitlines()]
    if len(rows) <= limit:
        return "\n".join(rows)
    head, tail = rows[:5], rows[-(limit - 6) :]
    return "\n".join([*head, f"[... {len(rows) - len(head) - len(tail)} lines cut ...]", *tail])
