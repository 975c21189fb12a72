"""`python -m unittest`, run as itself but writing a JUnit report stamped with the run's token.

Staged into the sandbox and run by path in place of `-m unittest` (unittest_command.py); stdlib
only (nothing of the worker, nor pytest, which the project's environment need not have). Before
any of the repository's code is imported it takes out of the environment the run's token
(WORKER_RUN_TOKEN), where to write the report (WORKER_UNITTEST_REPORT) and the file of test ids
to run (WORKER_UNITTEST_IDS, where some are asked for), and the ids to leave out
(WORKER_UNITTEST_DESELECT, shell words: `worker ci`'s flaky tests), each reported skipped.
Then `unittest.main` parses the arguments and loads the tests as `python -m unittest` does, and
a result class of ours records each test's outcome under pytest's id for it
(`tests/test_m.py::TestAdd::test_add`).

What unittest reports apart from a test is given to the tests it concerns, as pytest does: a
module that fails to import is an error of its file (`tests/test_m.py`); a `setUpClass` or
`setUpModule` that fails, an error of each test of its class or module that did not run; a
`tearDownClass` or `tearDownModule` that fails, an error of the last test that ran in it. The
report is written after the last test, so a process that ends earlier (`os._exit(0)`) writes
none: not a pass. A report forged by the code under test lacks the token (sandbox/testrun/
verdict.py); what it can still do from inside the process: docs/architecture.md's test runs.
"""

from __future__ import annotations

import os
import shlex
import sys
import unittest
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the runner's Python may be older than these spellings at run time
    from types import TracebackType

    ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]
    Outcome = tuple[str, str, str]  # outcome, message, traceback

PROPERTY = "worker_run_token"
NODEID = "nodeid"  # the <testcase> attribute sandbox/testrun/junit.py reads
TEXT_CHARS = 20_000  # of each message and traceback kept in the report
_TOKEN = os.environ.pop("WORKER_RUN_TOKEN", "")
_REPORT = os.environ.pop("WORKER_UNITTEST_REPORT", "")
_IDS = os.environ.pop("WORKER_UNITTEST_IDS", "")
_DESELECT = os.environ.pop("WORKER_UNITTEST_DESELECT", "")
DESELECTED = "deselected: left out of the run by the test command (WORKER_UNITTEST_DESELECT)"
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_SETUPS = ("setUpClass", "setUpModule")


def test_id(test: Any, files: dict[int, str]) -> str:
    """pytest's id for a unittest test: its module's file from the working folder, the class,
    the method; a module that failed to load is its file alone; anything else, unittest's id.
    `files`: the file each test was loaded from, by the test's id()."""
    kind = type(test)
    if kind.__name__ == "_FailedTest" and kind.__module__ == "unittest.loader":
        name = test._testMethodName
        return _module_path(name) or name
    method = getattr(test, "_testMethodName", None)
    file = files.get(id(test)) or getattr(sys.modules.get(kind.__module__), "__file__", None)
    if not method or not file or getattr(kind, method, None) is None:
        return str(test.id())
    return "::".join([_relative(file), kind.__name__, method])


def _relative(file: str) -> str:
    rel = os.path.relpath(os.path.abspath(file))
    return rel.replace(os.sep, "/") if not rel.startswith("..") else file


def _module_path(name: str) -> str | None:
    """The file of the module `name` (dotted), found on sys.path as an import would."""
    parts = name.split(".")
    for entry in sys.path:
        base = os.path.join(entry or ".", *parts)
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return _relative(candidate)
    return None


def _flat(suite: Any) -> Iterator[Any]:
    if isinstance(suite, unittest.TestSuite):
        for test in suite:
            yield from _flat(test)
    elif suite is not None:
        yield suite


class _Loader(unittest.TestLoader):
    """unittest's loader, remembering the module each test was loaded from (a class imported
    into a test module is that module's test, as pytest collects it)."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[int, str] = {}

    def loadTestsFromModule(self, module: Any, *args: Any, **kwargs: Any) -> unittest.TestSuite:
        suite = super().loadTestsFromModule(module, *args, **kwargs)
        file = getattr(module, "__file__", None)
        if file:
            for test in _flat(suite):
                self.files.setdefault(id(test), file)
        return suite


class _Result(unittest.TextTestResult):
    """unittest's own text result, and each test's outcome by id."""

    files: dict[int, str] = {}  # the loader's, set before a run

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, Outcome] = {}
        self.started: list[Any] = []
        # (description, outcome, message, traceback) of what happened outside a test
        self.fixtures: list[tuple[str, str, str, str]] = []

    def _record(self, test: Any, outcome: str, err: ExcInfo | None = None, said: str = "") -> None:
        text = self._text(test, err)
        if err is not None and not said:
            lines = str(err[1]).strip().splitlines()
            said = f"{err[0].__name__}: {lines[0] if lines else ''}"[:500]
        if type(test).__name__ == "_ErrorHolder":
            self.fixtures.append((test.description, outcome, said, text))
            return
        key = test_id(test, self.files)
        old = self.outcomes.get(key)
        if old is None or _RANK[outcome] > _RANK[old[0]]:
            self.outcomes[key] = (outcome, said, text)

    def _text(self, test: Any, err: ExcInfo | None) -> str:
        try:
            if err is None:
                return ""
            return str(self._exc_info_to_string(err, test))  # type: ignore[attr-defined]
        except Exception as exc:  # a test's exception whose str() raises
            return f"(traceback not readable: {exc!r})"

    def startTest(self, test: Any) -> None:
        self.started.append(test)
        super().startTest(test)

    def addSuccess(self, test: Any) -> None:
        super().addSuccess(test)
        self._record(test, "passed")

    def addFailure(self, test: Any, err: Any) -> None:
        super().addFailure(test, err)
        self._record(test, "failed", err)

    def addError(self, test: Any, err: Any) -> None:
        super().addError(test, err)
        self._record(test, "error", err)

    def addSkip(self, test: Any, reason: str) -> None:
        super().addSkip(test, reason)
        self._record(test, "skipped", said=str(reason))

    def addExpectedFailure(self, test: Any, err: Any) -> None:
        super().addExpectedFailure(test, err)
        self._record(test, "skipped", said="expected failure")

    def addUnexpectedSuccess(self, test: Any) -> None:
        super().addUnexpectedSuccess(test)
        self._record(test, "failed", said="unexpected success")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._record(test, "failed" if failed else "error", err)

    def report(self, planned: list[Any]) -> dict[str, Outcome]:
        """Each test's outcome, with what happened outside the tests given to the tests it
        concerns (the module's docstring)."""
        outcomes = dict(self.outcomes)
        started = {id(t) for t in self.started}
        for description, outcome, said, text in self.fixtures:
            method, _, target = description.partition(" (")
            target = target.split(")", 1)[0]
            if method in _SETUPS:
                hit = [t for t in planned if id(t) not in started and _in(t, target)]
            else:
                hit = [t for t in self.started if _in(t, target)][-1:]
            for test in hit or [None]:
                key = test_id(test, self.files) if test is not None else description
                message = said if outcome == "skipped" else f"{method} failed: {said}"
                outcomes[key] = (outcome, message, text)
        return outcomes


class _Runner(unittest.TextTestRunner):
    """unittest's text runner: the tests asked for, then the report."""

    resultclass = _Result  # type: ignore[assignment]
    files: dict[int, str] = {}  # the loader's, set by main()

    deselected: list[Any] = []

    def run(self, test: Any) -> Any:
        wanted = _wanted()
        planned = list(_flat(test))
        if wanted is not None:
            planned = [t for t in planned if _asked(test_id(t, self.files), wanted)]
            test = unittest.TestSuite(planned)
        left_out = set(shlex.split(_DESELECT))
        if left_out:
            self.deselected = [t for t in planned if _asked(test_id(t, self.files), left_out)]
            test = unittest.TestSuite([t for t in planned if t not in self.deselected])
        _Result.files = self.files
        result = super().run(test)
        if _REPORT and isinstance(result, _Result):
            _write_report(_REPORT, result.report(planned))
        return result

    def _makeResult(self) -> Any:
        """unittest's result, the deselected tests in it as skipped before any test runs
        (unittest's own count of skips says them too)."""
        result = super()._makeResult()
        for test in self.deselected:
            result.startTest(test)
            result.addSkip(test, DESELECTED)
            result.stopTest(test)
        return result


def _wanted() -> set[str] | None:
    if not _IDS:
        return None
    with open(_IDS, encoding="utf-8") as ids:
        return {line.rstrip("/") for line in ids.read().splitlines() if line.rstrip("/")}


def _asked(key: str, wanted: set[str]) -> bool:
    """`key` is asked for: by itself, by its file's or its class's id, or by a folder above."""
    parts = key.split("::")
    if any("::".join(parts[:n]) in wanted for n in range(1, len(parts) + 1)):
        return True
    folders = parts[0].split("/")[:-1]
    return any("/".join(folders[:n]) in wanted for n in range(1, len(folders) + 1))


def _in(test: Any, target: str) -> bool:
    kind = type(test)
    return target in (f"{kind.__module__}.{kind.__qualname__}", kind.__module__)


def _write_report(path: str, outcomes: dict[str, Outcome]) -> None:
    suite = ET.Element("testsuite", name="unittest")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name=PROPERTY, value=_TOKEN)
    for key, (outcome, said, text) in outcomes.items():
        file, _, rest = key.partition("::")
        case = ET.SubElement(suite, "testcase", name=rest.rsplit("::", 1)[-1] or key)
        case.set("file", file)
        case.set(NODEID, key)
        if outcome != "passed":
            tag = {"failed": "failure"}.get(outcome, outcome)
            ET.SubElement(case, tag, message=_clean(said)).text = _clean(text)
    counts = [o for o, _s, _t in outcomes.values()]
    for name, outcome in (("failures", "failed"), ("errors", "error"), ("skipped", "skipped")):
        suite.set(name, str(counts.count(outcome)))
    suite.set("tests", str(len(counts)))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _clean(text: str) -> str:
    """Text XML can hold, at most TEXT_CHARS of it (head and tail)."""
    text = "".join(
        c if c in "\t\n\r" or " " <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd" else "?"
        for c in str(text)
    )
    half = TEXT_CHARS // 2
    return text if len(text) <= TEXT_CHARS else text[:half] + "\n[... cut ...]\n" + text[-half:]


def main() -> None:
    """`python -m unittest`, as unittest/__main__.py runs it, with our loader and runner."""
    sys.path[0] = os.getcwd()  # as `-m` puts it, not this file's folder
    sys.argv[0] = "python -m unittest"
    loader = _Loader()
    _Runner.files = loader.files
    unittest.main(module=None, testRunner=_Runner, testLoader=loader)


if __name__ == "__main__":
    main()
