"""A pytest plugin for one traced run: which lines of the repository each test ran, counted by
the test's outcome, for fault localisation (sandbox/ecosystems/python/lines_run.py reads what it
writes).

Runs inside the sandbox's pytest (stdlib and pytest only; nothing of the worker), loaded with -p
only for that run. For every test (setup, call and teardown) it records the lines executed in
files under pytest's root folder, outside any site-packages, and at the end writes one JSON
object to the path in WORKER_TRACE_OUT:

    {"failed": F, "passed": P, "lines": {"pkg/mod.py": {"12": [ef, ep], ...}, ...}}

where ef and ep are how many failing and passing tests ran the line. Counts, not per-test sets,
so the file stays as small as the code it covers. What it writes comes from a process that runs
the repository's code: the reader treats it as untrusted.
"""

import json
import os
import sys

import pytest

_OUT = os.environ.pop("WORKER_TRACE_OUT", "")
_root = ""
_keep: dict = {}  # filename -> relative path, or "" for files not traced
_current: dict = {}  # relative path -> set of lines, for the test running now
_counts: dict = {}  # relative path -> {line: [ef, ep]}
_totals = [0, 0]


def _relative(filename):
    rel = _keep.get(filename)
    if rel is None:
        rel = ""
        if filename.startswith(_root) and "site-packages" not in filename:
            rel = filename[len(_root) :].lstrip("/")
        _keep[filename] = rel
    return rel


def _local(frame, event, arg):
    if event == "line":
        rel = _relative(frame.f_code.co_filename)
        lines = _current.get(rel)
        if lines is None:
            lines = _current[rel] = set()
        lines.add(frame.f_lineno)
    return _local


def _global(frame, event, arg):
    return _local if _relative(frame.f_code.co_filename) else None


def pytest_configure(config):
    global _root
    _root = str(config.rootpath).rstrip("/") + "/"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current.clear()
    item._worker_failed = False
    sys.settrace(_global)
    try:
        yield
    finally:
        sys.settrace(None)
    failed = 1 if item._worker_failed else 0
    _totals[1 - failed] += 1
    for rel, lines in _current.items():
        counts = _counts.setdefault(rel, {})
        for line in lines:
            pair = counts.setdefault(line, [0, 0])
            pair[1 - failed] += 1
    _current.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        item._worker_failed = True


def pytest_sessionfinish(session, exitstatus):
    if not _OUT:
        return
    data = {
        "failed": _totals[0],
        "passed": _totals[1],
        "lines": {rel: {str(k): v for k, v in c.items()} for rel, c in _counts.items()},
    }
    with open(_OUT, "w", encoding="utf-8") as f:
        json.dump(data, f)
