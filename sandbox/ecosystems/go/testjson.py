"""`go test -json` read into the `TestSummary` the verdict reads (docs/go-tests.md).

Test ids: `<package folder>::<test name>`, the folder relative to the module's root (`.` for the
root package), the name as Go prints it, subtests included (`pkg/calc::TestAdd/two_digits`:
Go has already turned a subtest name's spaces into underscores). A package outside the module
keeps its import path. The same test has the same id in every run of the same tree.

Events (cmd/test2json): `run`, `pass`, `fail`, `skip` with a `Test` are a test's; without one,
the package's. A test that ever failed in the report failed, whatever else was reported for it
after (a line forged to look like Go's own `--- PASS` cannot turn it). Go 1.24 and later also
write the build into the report (`build-output`, `build-fail`, and the package's `fail` names
its `FailedBuild`): a package that does not build is one failure, id its folder, outcome
"error", with the compiler's `file:line:col: message` lines as its text; the verdict counts
every test id under that folder as "error" (TestSummary.outcome_of). A package whose test
binary failed with no failing test (a panic outside a test, `os.Exit` in TestMain, a timeout)
is the same kind of failure, and none of its tests' passes is trusted: each is "error".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sandbox.testrun.junit import MAX_TESTCASES, TestFailure, TestSummary

if TYPE_CHECKING:
    from sandbox.ecosystems.go.modules import GoModules

OUTPUT_LINES = 40  # of a failing test's output, kept (the first and last halves)
LINE_CHARS = 300
MAX_EVENTS = 10_000_000
_OUTCOME = {"pass": "passed", "fail": "failed", "skip": "skipped"}


@dataclass
class _Test:
    outcome: str = "running"
    failed_once: bool = False
    output: list[str] = field(default_factory=list)


@dataclass
class _Package:
    outcome: str = ""
    failed_build: str = ""
    output: list[str] = field(default_factory=list)
    tests: dict[str, _Test] = field(default_factory=dict)


def package_folder(module: str | None, *, modules: GoModules | None = None) -> Callable[[str], str]:
    """Import path -> the id's folder: relative to `module`'s root, `.` for the root itself;
    with `modules` (a repository of several), relative to the repository's root."""
    if modules is not None:
        several = modules
        return lambda import_path: several.folder_of(import_path) or import_path

    def folder(import_path: str) -> str:
        if module and import_path == module:
            return "."
        if module and import_path.startswith(module + "/"):
            return import_path[len(module) + 1 :]
        return import_path

    return folder


def parse_go_test_json(
    data: bytes, *, module: str | None = None, modules: GoModules | None = None
) -> TestSummary:
    """The report `go test -json` wrote (one module's, or several modules' one after the other);
    ValueError when it holds no test2json event."""
    folder = package_folder(module, modules=modules)
    packages: dict[str, _Package] = {}
    builds: dict[str, list[str]] = {}
    events = 0
    for raw in data.splitlines():
        if not raw.startswith(b"{"):
            continue
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        action = event.get("Action")
        if not isinstance(action, str):
            continue
        events += 1
        if events > MAX_EVENTS:
            raise ValueError(f"the go test -json report holds over {MAX_EVENTS} events")
        if action in ("build-output", "build-fail"):
            path = str(event.get("ImportPath", ""))
            if action == "build-output":
                _keep(builds.setdefault(path, []), str(event.get("Output", "")))
            continue
        name = event.get("Package")
        if not isinstance(name, str):
            continue
        package = packages.setdefault(name, _Package())
        test = event.get("Test")
        output = event.get("Output")
        if isinstance(test, str) and test:
            state = package.tests.get(test)
            if state is None:
                if len(package.tests) >= MAX_TESTCASES:
                    raise ValueError(f"the report names over {MAX_TESTCASES} tests")
                state = package.tests[test] = _Test()
            if action == "output" and isinstance(output, str):
                _keep(state.output, output)
            elif action in _OUTCOME:
                state.failed_once |= action == "fail"
                state.outcome = "failed" if state.failed_once else _OUTCOME[action]
            continue
        if action == "output" and isinstance(output, str):
            _keep(package.output, output)
        elif action in _OUTCOME:
            package.outcome = _OUTCOME[action]
            if isinstance(failed := event.get("FailedBuild"), str):
                package.failed_build = failed
    if not events:
        raise ValueError("not a go test -json report: no test2json event in it")
    return _summary(packages, builds, folder)


def _summary(
    packages: dict[str, _Package], builds: dict[str, list[str]], folder: Callable[[str], str]
) -> TestSummary:
    outcomes: dict[str, str] = {}
    failures: list[TestFailure] = []
    for name, package in packages.items():
        where = folder(name)
        tests = package.tests
        aborted = package.outcome == "failed" and not any(
            t.outcome == "failed" for t in tests.values()
        )
        for test, state in tests.items():
            outcome = "failed" if state.outcome == "running" else state.outcome
            if aborted and outcome == "passed":
                outcome = "error"
            test_id = f"{where}::{test}"
            outcomes[test_id] = outcome
            if outcome == "failed":
                failures.append(_failure(test_id, state.output))
        if package.failed_build or aborted:
            outcomes[where] = "error"
            failures.append(_package_failure(where, name, package, builds))
    counts = {k: sum(v == k for v in outcomes.values()) for k in ("passed", "failed", "error")}
    return TestSummary(
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["error"],
        skipped=sum(v == "skipped" for v in outcomes.values()),
        failures=tuple(failures),
        outcomes=outcomes,
    )


def _failure(test_id: str, output: list[str]) -> TestFailure:
    lines = [line for line in output if not line.lstrip().startswith(("=== ", "--- FAIL"))]
    said = [line.strip() for line in lines if line.strip()]
    message = next((s for s in said if ".go:" in s), said[0] if said else "failed")
    return TestFailure(
        test_id=test_id, kind="failure", message=message, traceback="\n".join(_trim(lines))
    )


def _package_failure(
    where: str, name: str, package: _Package, builds: dict[str, list[str]]
) -> TestFailure:
    if package.failed_build:
        lines = [line for line in builds.get(package.failed_build, []) if not line.startswith("# ")]
        first = lines[0].strip() if lines else "(see the test command's output)"
        return TestFailure(
            test_id=where,
            kind="error",
            message=f"package {name} does not build: {first}",
            traceback="\n".join(_trim(lines)),
        )
    lines = package.output
    return TestFailure(
        test_id=where,
        kind="error",
        message=f"the tests of package {name} did not finish (its test binary failed "
        "outside any test); none of its results is trusted",
        traceback="\n".join(_trim(lines)),
    )


def _keep(lines: list[str], text: str) -> None:
    """Append `text`'s lines (capped in length), keeping at most a bounded number."""
    for line in text.splitlines():
        if len(lines) >= 4 * OUTPUT_LINES:
            del lines[OUTPUT_LINES // 2 : OUTPUT_LINES // 2 + 2 * OUTPUT_LINES]
        lines.append(line[:LINE_CHARS].rstrip())


def _trim(lines: list[str]) -> list[str]:
    if len(lines) <= OUTPUT_LINES:
        return lines
    half = OUTPUT_LINES // 2
    return [*lines[:half], "[... cut ...]", *lines[-half:]]
