"""Surefire's and Failsafe's XML reports (and Gradle's `build/test-results/**.xml`, the same
format) read into the `TestSummary` the verdict reads (docs/java-tests.md).

Test ids: `<module>::<class>#<name>`, as Go's are `<package folder>::<test>`: the module's
folder (`.` for a single-module project, `core` in a reactor), then the <testcase>'s classname
and name as Surefire writes them, so a parameterised case
(`.::com.example.RangeTest#includesInside(int)[2]`) and a nested class's test
(`.::com.example.RangeTest$Outside#excludesAbove`) are each their own. The module is the
harness's unit of "did not build" (sandbox/testrun/verdict.py reads an id without `::` as a
container whose tests must all run and pass after a fix): a compile error and a forked VM that
ended early are the module's failures. The same test has the same id in every run of the same
tree. A case reported in two files (Surefire repeats a nested class's) is one test, failed if
either says so; so are cases of one id in one file (Surefire 2.22 names every TestNG 6 case of
a class `(com.example.RangeTest)`: one id per class, failed if any of its cases failed).

A run's report is the tar sandbox/ecosystems/java/command.py packs:
`r/<module>/surefire-reports/*.xml` and `r/<module>/failsafe-reports/*.xml`, written by Maven
from the harness's extension, and `maven.log`, the log of the same run, read for what no XML says:

- a compile error (`[ERROR] /workspace/src/main/java/x/Range.java:[14,23] ';' expected`): the
  failure of the module the named files are in (its id the module's folder), its text the
  compiler's lines, `path:line:col: message` with the paths in the repository; none of the
  module's tests is then trusted to have passed;
- Maven's own count of failures (`Tests run: 6, Failures: 2, ...`) where the reports have
  none: a report rewritten after Surefire wrote it; an error of id `.`;
- a forked VM that ended early (`The forked VM terminated without properly saying goodbye`,
  `System.exit` in a test or a static initialiser): the failure of the module whose reports it
  names, the crashed classes (`Crashed tests:`) in its text; none of its passes is trusted.
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence

from sandbox.testrun.junit import (
    MAX_TESTCASES,
    OUTCOME_OF_TAG,
    TestFailure,
    TestIdOf,
    TestSummary,
    parse_junit,
    trim,
)

MAX_FILES = 20_000  # report files of one run read
MAX_FILE_BYTES = 64 * 1024 * 1024
_WORSE = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_COMPILE = re.compile(r"^\[ERROR\] (\S+?\.java):\[(\d+),(\d+)\] (.*)$", re.M)
_CRASH = re.compile(r"The forked VM terminated|There was an error in the forked process")
_COUNTED = re.compile(
    r"^\[(?:ERROR|WARNING|INFO)\] Tests run: (\d+), Failures: (\d+), Errors: (\d+)", re.M
)
_REFER = re.compile(
    r"Please refer to (\S+?)/(surefire|failsafe)-reports for the individual test results"
)
_CRASHED_CLASS = re.compile(r"^\[ERROR\] ([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+)\s*$")


def case_id(module: str) -> TestIdOf:
    """The id of a <testcase> of `module` (its folder, "." for the root)."""
    prefix = f"{module or '.'}::"

    def test_id(case: ET.Element, suites: Sequence[ET.Element]) -> str:
        classname = case.get("classname") or (suites[-1].get("name") or "" if suites else "")
        return f"{prefix}{classname}#{case.get('name') or '?'}"

    return test_id


def read_xml_reports(reports: Iterable[tuple[str, bytes]]) -> TestSummary:
    """(module, XML) pairs merged into one summary; ValueError when none is JUnit XML."""
    outcomes: dict[str, str] = {}
    failures: dict[str, TestFailure] = {}
    read = 0
    for module, data in reports:
        try:
            one = parse_junit(data, test_id=case_id(module))
        except ValueError:
            continue
        read += 1
        for test_id, outcome in one.outcomes.items():
            _worst(outcomes, test_id, outcome)
        for failure in one.failures:  # a case of the same id read later does not hide it
            _worst(outcomes, failure.test_id, OUTCOME_OF_TAG[failure.kind])
            failures.setdefault(failure.test_id, failure)
        if len(outcomes) > MAX_TESTCASES:
            raise ValueError(f"too large: more than {MAX_TESTCASES:,} test cases")
    if not read:
        raise ValueError("no Surefire report in this run")
    return summarise(outcomes, list(failures.values()))


def _worst(outcomes: dict[str, str], test_id: str, outcome: str) -> None:
    if _WORSE[outcome] >= _WORSE.get(outcomes.get(test_id, "passed"), 0):
        outcomes[test_id] = outcome


def summarise(outcomes: dict[str, str], failures: list[TestFailure]) -> TestSummary:
    counts = {k: 0 for k in _WORSE}
    for outcome in outcomes.values():
        counts[outcome] += 1
    return TestSummary(
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["error"],
        skipped=counts["skipped"],
        failures=tuple(f for f in failures if outcomes.get(f.test_id) in ("failed", "error")),
        outcomes=outcomes,
    )


def read_run_report(data: bytes, *, root: str, modules: Sequence[str] = (".",)) -> TestSummary:
    """The tar a Maven run packed (see the module docstring); `root`: where the run saw the
    repository (`/workspace`), `modules`: the reactor's module folders (a compile error's file
    is in the longest that holds it). ValueError when it is not one, or holds neither a report
    nor a failure the log names."""
    xml: list[tuple[str, bytes]] = []
    log = ""
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            for count, member in enumerate(tar):
                if count > MAX_FILES:
                    break
                if not member.isfile() or member.size > MAX_FILE_BYTES:
                    continue
                parts = posixpath.normpath(member.name).split("/")
                handle = tar.extractfile(member)
                if handle is None:
                    continue
                if parts == ["maven.log"]:
                    log = handle.read().decode("utf-8", "replace")
                elif parts[0] == "r" and len(parts) >= 3 and parts[-1].endswith(".xml"):
                    if parts[-2] in ("surefire-reports", "failsafe-reports"):
                        xml.append(("/".join(parts[1:-2]) or ".", handle.read()))
    except tarfile.TarError as exc:
        raise ValueError(f"not a Maven run's reports: {exc}") from exc
    try:
        summary = read_xml_reports(xml)
        outcomes, failures = dict(summary.outcomes), list(summary.failures)
    except ValueError:
        outcomes, failures = {}, []
    found = [*compile_failures(log, root=root, modules=modules), *crash_failures(log)]
    if not any(v in ("failed", "error") for v in outcomes.values()):
        found += unreported_failures(log)
    for failure in found:
        if outcomes.get(failure.test_id) != "error":
            outcomes[failure.test_id] = "error"
            failures.append(failure)
    if not outcomes:
        raise ValueError("no Surefire report in this run, and no failure in its log")
    return summarise(outcomes, failures)


def compile_failures(log: str, *, root: str, modules: Sequence[str] = (".",)) -> list[TestFailure]:
    """One failure per module whose files the compiler's errors name (paths in the
    repository), its text those errors."""
    by_module: dict[str, list[str]] = {}
    prefix = root.rstrip("/") + "/"
    for match in _COMPILE.finditer(log):
        path = match.group(1)
        if not path.startswith(prefix):
            continue
        rel = path[len(prefix) :]
        line = f"{rel}:{match.group(2)}:{match.group(3)}: {match.group(4).strip()}"
        lines = by_module.setdefault(module_of_path(rel, modules), [])
        if line not in lines:
            lines.append(line)
    return [
        TestFailure(
            test_id=module,
            kind="error",
            message=f"compilation failed: {lines[0]}",
            traceback=trim("\n".join(lines)),
        )
        for module, lines in by_module.items()
    ]


def unreported_failures(log: str) -> list[TestFailure]:
    """Maven's own count of failures where the reports have none: a report rewritten after
    Surefire wrote it (docs/java-tests.md). The lines are Maven's; a test that prints one
    makes only its own run fail."""
    counted = [(int(m.group(2)), int(m.group(3)), m.group(0)) for m in _COUNTED.finditer(log)]
    bad = [line for failed, errors, line in counted if failed or errors]
    if not bad:
        return []
    return [
        TestFailure(
            test_id=".",
            kind="error",
            message=f"Maven's log counts failing tests that no report names: {bad[0].strip()}",
            traceback="",
        )
    ]


def module_of_path(rel: str, modules: Sequence[str]) -> str:
    """The folder of the module `rel` is in: the longest of `modules` that holds it, else `.`."""
    holding = [m for m in modules if m != "." and rel.startswith(m.rstrip("/") + "/")]
    return max(holding, key=len) if holding else "."


def crash_failures(log: str) -> list[TestFailure]:
    """The failure of each module whose forked VM ended early (see the module docstring)."""
    if not _CRASH.search(log):
        return []
    crashed: dict[str, list[str]] = {}
    module = "."
    lines = log.splitlines()
    said = next((line for line in lines if "forked VM terminated" in line), "")
    said = said.removeprefix("[ERROR] ").strip() or "the forked VM ended early"
    for n, line in enumerate(lines):
        if (refer := _REFER.search(line)) is not None:
            module = _module(refer.group(1))
        if "forked VM terminated" in line or "error in the forked process" in line:
            crashed.setdefault(module, [])
        if line.strip() != "[ERROR] Crashed tests:":
            continue
        classes = crashed.setdefault(module, [])
        for more in lines[n + 1 : n + 200]:
            match = _CRASHED_CLASS.match(more)
            if match is None:
                break
            if match.group(1) not in classes:
                classes.append(match.group(1))
    return [
        TestFailure(
            test_id=module,
            kind="error",
            message=f"{said} (crashed: {', '.join(classes) or 'not named'})"[:500],
            traceback="",
        )
        for module, classes in crashed.items()
    ]


def _module(reports: str) -> str:
    """`/tmp/worker-maven-x/r/core` -> `core`; the root's `/tmp/.../r/.` -> `.`."""
    _head, sep, tail = reports.partition("/r/")
    return posixpath.normpath(tail) if sep else "."
