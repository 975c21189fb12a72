"""pytest as the harness runs it: the flags that make it write a JUnit report stamped by our
plugin (sandbox/ecosystems/python/junit_stamp.py), and a command narrowed to the tests asked for."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from pathlib import Path

DEFAULT_TEST_CMD = "python -m pytest"
# JUnit with what failing tests printed and logged (not passing ones: the report stays small).
PYTEST_FLAGS = (
    "-q -p no:cacheprovider -o junit_family=xunit1 -o junit_logging=all "
    "-o junit_log_passing_tests=false"
)
STAMP_MODULE = "worker_junit_stamp"


def is_pytest(test_cmd: str) -> bool:
    """True for commands that run pytest, so JUnit XML can be asked for."""
    words = shlex.split(test_cmd)
    return any(Path(w).name in ("pytest", "py.test") for w in words) or "pytest" in words


_SHELL = re.compile(r"[;&|$`()<>\n]")


def narrowed(command: str, test_ids: Sequence[str]) -> str:
    """`command` without the paths it names that hold every test asked for: with `pytest
    tests` and the id `tests/test_a.py::test_x`, only that test runs, not the folder besides.

    >>> narrowed("python -m pytest toolz/tests -q", ["toolz/tests/test_a.py::test_x"])
    'python -m pytest -q'
    >>> narrowed("python -m pytest tests", ["other/test_b.py::test_y"])
    'python -m pytest tests'
    >>> narrowed("python -m pytest pytest", ["pytest/test_c.py"])
    'python -m pytest'

    A command with shell syntax in it is left as it is."""
    if _SHELL.search(command):
        return command
    words = shlex.split(command)

    def holds(path: str) -> bool:
        folder = path.rstrip("/") + "/"
        return all(t == path or t.startswith((folder, path + "::")) for t in test_ids)

    runner = next((i for i, w in enumerate(words) if Path(w).name in ("pytest", "py.test")), None)
    if runner is None:
        return command
    rest = [w for w in words[runner + 1 :] if w.startswith("-") or not holds(w)]
    kept = words[: runner + 1] + rest
    return command if len(kept) == len(words) else shlex.join(kept)
