"""Our unittest runner (unittest_report.py), traced: which lines of the repository each test ran,
counted by the test's outcome, for fault localisation. The unittest counterpart of the pytest
plugin line_trace.py, writing the same JSON to the path in WORKER_TRACE_OUT (lines_run.py reads
it):

    {"failed": F, "passed": P, "lines": {"pkg/mod.py": {"12": [ef, ep], ...}, ...}}

Staged beside the runner (as worker_unittest_report.py) and run by path in place of
`-m unittest`; stdlib only. The runner is imported first, so it takes its variables out of the
environment before any of the repository's code loads. Each test is traced from its start to
its stop (setUp, the test, tearDown), in files under the working folder outside any
site-packages; a skipped test is not counted. What it writes comes from a process that runs the
repository's code: the reader treats it as untrusted.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

RUNNER_MODULE = "worker_unittest_report"  # unittest_report.py, as staged beside this file
_OUT = os.environ.pop("WORKER_TRACE_OUT", "")


class LineCounts:
    """The lines each test ran, summed by outcome: [ran by failing tests, by passing tests]."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/") + "/"
        self.keep: dict[str, str] = {}  # filename -> relative path, "" for files not traced
        self.current: dict[str, set[int]] = {}  # the running test's lines
        self.counts: dict[str, dict[int, list[int]]] = {}
        self.totals = [0, 0]

    def relative(self, filename: str) -> str:
        rel = self.keep.get(filename)
        if rel is None:
            rel = ""
            if filename.startswith(self.root) and "site-packages" not in filename:
                rel = filename[len(self.root) :]
            self.keep[filename] = rel
        return rel

    def local(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            self.current.setdefault(self.relative(frame.f_code.co_filename), set()).add(
                frame.f_lineno
            )
        return self.local

    def enter(self, frame: Any, event: str, arg: Any) -> Any:
        return self.local if self.relative(frame.f_code.co_filename) else None

    def start(self) -> None:
        self.current.clear()
        sys.settrace(self.enter)

    def stop(self, *, failed: bool | None) -> None:
        """End the running test's trace; `failed` None: a skip, not counted."""
        sys.settrace(None)
        if failed is not None:
            column = 0 if failed else 1
            self.totals[column] += 1
            for rel, lines in self.current.items():
                counts = self.counts.setdefault(rel, {})
                for line in lines:
                    counts.setdefault(line, [0, 0])[column] += 1
        self.current.clear()

    def write(self, path: str) -> None:
        data = {
            "failed": self.totals[0],
            "passed": self.totals[1],
            "lines": {rel: {str(k): v for k, v in c.items()} for rel, c in self.counts.items()},
        }
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)


def traced(result_class: Any, counter: LineCounts) -> Any:
    """`result_class` (the runner's) with each test traced into `counter`."""

    class Traced(result_class):  # type: ignore[misc, valid-type]
        def _bad(self) -> int:
            return len(self.failures) + len(self.errors) + len(self.unexpectedSuccesses)

        def startTest(self, test: Any) -> None:
            self._worker_marks = (self._bad(), len(self.skipped))
            super().startTest(test)
            counter.start()

        def stopTest(self, test: Any) -> None:
            bad, skipped = getattr(self, "_worker_marks", (0, 0))
            failed = None if len(self.skipped) > skipped else self._bad() > bad
            counter.stop(failed=failed)
            super().stopTest(test)

    return Traced


def main() -> None:
    """The runner's main, its result class traced; the counts written when it ends."""
    runner = importlib.import_module(RUNNER_MODULE)
    counter = LineCounts(os.getcwd())
    runner._Runner.resultclass = traced(runner._Result, counter)
    try:
        runner.main()
    finally:
        if _OUT:
            counter.write(_OUT)


if __name__ == "__main__":
    main()
