"""`python -m unittest ...` as the harness runs it: our staged runner (unittest_report.py) in
place of `-m unittest`, the command's own arguments kept, so that unittest's own parsing and
discovery decide which tests there are, and a JUnit report by pytest's ids comes back.

>>> is_unittest("python -m unittest discover -s tests -v"), is_unittest("python -m pytest")
(True, False)
>>> with_runner("CI=1 python3 -W error -m unittest -v", "/s/r.py")
'CI=1 python3 -W error /s/r.py -v'
>>> with_deselected("make && python -m unittest", ["t.py::T::a", "t.py::T::b"])
"make && WORKER_UNITTEST_DESELECT='t.py::T::a t.py::T::b' python -m unittest"
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Sequence
from importlib import resources

from sandbox.ecosystems.base import Instrumented, Stage
from sandbox.testrun.junit import parse_junit

RUNNER_FILE = "worker_unittest_report.py"
REPORT_VARIABLE = "WORKER_UNITTEST_REPORT"
IDS_VARIABLE = "WORKER_UNITTEST_IDS"
TOKEN_VARIABLE = "WORKER_RUN_TOKEN"
#: Ids the runner leaves out, each reported skipped: set in the test command itself, since a
#: deselected command (`worker ci`'s flaky tests) is a string the run's configuration carries.
DESELECT_VARIABLE = "WORKER_UNITTEST_DESELECT"
#: A Python (`python`, `python3.12`, a path to one, tox's `{envpython}`) or `coverage run`, its
#: own options, then `-m unittest` as a whole word.
_UNITTEST = re.compile(
    r"(?P<python>(?:^|(?<=[\s;&|(]))(?:[\w./-]*/)?"
    r"(?:python(?:\d+(?:\.\d+)?)?|\{envpython\}|coverage\s+run)"
    r"(?:\s+(?!-m)-\S+(?:\s+(?!-)\S+)?)*?)\s+-m\s*unittest(?=\s|$|[;&|)])"
)

_SHELL_WORD = r"""(?:[^\s'"\\]|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+"""


def is_unittest(test_cmd: str) -> bool:
    """True for a command that runs `python -m unittest` (and not pytest)."""
    from sandbox.ecosystems.python.pytest_command import is_pytest

    try:
        return _UNITTEST.search(test_cmd) is not None and not is_pytest(test_cmd)
    except ValueError:  # unbalanced quotes
        return False


def with_runner(test_cmd: str, runner: str) -> str:
    """`test_cmd` with its first `-m unittest` replaced by the runner at `runner` (a path)."""
    return _UNITTEST.sub(lambda m: f"{m['python']} {shlex.quote(runner)}", test_cmd, count=1)


def with_deselected(test_cmd: str, ids: Sequence[str]) -> str:
    """`test_cmd` with `ids` (pytest's ids, a file's or a class's too) left out by our runner,
    which reports each skipped: the ids (shell words) in DESELECT_VARIABLE, set for the
    unittest command alone. Ids already deselected there stay deselected."""
    match = _UNITTEST.search(test_cmd)
    if match is None:
        raise ValueError(f"not a unittest command: {test_cmd!r}")
    before, python = test_cmd[: match.start()], test_cmd[match.start() :]
    earlier = re.search(rf"(?:^|\s){DESELECT_VARIABLE}=({_SHELL_WORD})\s+$", before)
    words: list[str] = []
    if earlier is not None:
        words = shlex.split(shlex.split(earlier.group(1))[0])
        before = before[: earlier.start()] + (" " if earlier.start() else "")
    value = " ".join(shlex.quote(t) for t in dict.fromkeys([*words, *ids]))
    return f"{before}{DESELECT_VARIABLE}={shlex.quote(value)} {python}"


def instrument_unittest(test_cmd: str, ids: Sequence[str], *, stage: Stage) -> Instrumented:
    """The command that runs `test_cmd`'s tests (those of `ids` alone, when some are given)
    through our runner, its report's path, and the token it must carry."""
    report = f"/tmp/worker-junit-{secrets.token_hex(4)}.xml"
    token = secrets.token_hex(16)
    runner = stage(RUNNER_FILE, _runner())
    env = {TOKEN_VARIABLE: token, REPORT_VARIABLE: report, "PYTHONHASHSEED": "0"}
    if ids:
        # The runner loads the tests as the command says and keeps those asked for by id: an
        # id is a path and names, which unittest's dotted names give back only once the
        # discovery's top-level folder is known.
        name = f"worker-unittest-ids-{secrets.token_hex(4)}.txt"
        env[IDS_VARIABLE] = stage(name, "".join(f"{t}\n" for t in ids).encode())
    return Instrumented(
        command=f"rm -f {report}; {with_runner(test_cmd, runner)}",
        env=env,
        report_path=report,
        token=token,
        read_report=parse_junit,
    )


def _runner() -> bytes:
    return resources.files("sandbox.ecosystems.python").joinpath("unittest_report.py").read_bytes()
