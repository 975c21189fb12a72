r"""The environment CI gives its test step, as the sandbox's test runs take it.

A project's tests may need what its CI sets around them (`TZ: UTC`, `MY_FEATURE: 1`,
`NODE_OPTIONS: --max-old-space-size=4096`): a GitHub workflow's `env:` (the workflow's, the
test job's, the test step's) or GitLab's `variables:` (the file's, the job's). The test step
is the first line of a CI job (in ci_jobs.py's order) that the project's runner runs (the
ecosystem's `runs`) and that names a test and installs nothing. Its plain literal values are
taken, each with its file and line; left out, and said: a value with a `${{ }}` expression (a
secret among them), a `$VAR` reference, one that is not one literal, and the names in DENIED,
whose value is the sandbox's own contract, not the project's.

The values travel as tox's `set_env` does: `NAME=value` words before the test command, which
every language's runner reads (sandbox/testrun/run.py runs it as one command); a name the
command sets already keeps its value.

>>> judge("TZ", "UTC"), judge("TOKEN", "${{ secrets.TOKEN }}"), judge("https_proxy", "x")
('', 'a secret', "the sandbox's network fence")
>>> with_env("python -m pytest", (CiVar("TZ", "UTC", "ci.yml:3"), CiVar("A", "two words", "")))
"TZ=UTC A='two words' python -m pytest"
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.repo_files import RepoFiles

MAX_VARS = 30
MAX_VALUE = 1000
#: Names whose value is the sandbox's, never a CI file's, and why.
DENIED = {
    **dict.fromkeys(
        ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "TMPDIR", "TMP", "TEMP", "HOSTNAME"),
        "the sandbox's own: where programs and home are",
    ),
    **dict.fromkeys(
        ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV"),
        "loads code into every program the run starts",
    ),
    # The harness's pytest plugin (the stamped report) is found through PYTHONPATH; a CI value
    # would replace it. The others say which Python and packages run: set-up's.
    **dict.fromkeys(
        ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV"),
        "which Python and packages run: set-up's",
    ),
    **dict.fromkeys(
        ("GOROOT", "GOPATH", "GOCACHE", "GOMODCACHE", "GOPROXY", "CARGO_TARGET_DIR"),
        "where the toolchain and its caches are: the sandbox's",
    ),
    # CI colours its logs; the run's output is read as text (by the model, by the harness).
    **dict.fromkeys(("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "TERM"), "CI's log colours"),
    # Options CI gives pytest this way (`--cov`, `-n auto`) need plugins set-up may not have
    # installed; the test command's own options are read and kept where they count.
    "PYTEST_ADDOPTS": "pytest's options: the test command's are read instead",
    **dict.fromkeys(
        ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"),
        "which git repository and configuration git reads",
    ),
}
#: Families of names, by pattern, and why.
DENIED_PATTERNS = (
    (re.compile(r"(?i).*_proxy|no_proxy"), "the sandbox's network fence"),
    (re.compile(r"(?i)npm_config_.*|pip_.*|uv_.*|.*_index_url"), "where packages come from"),
    (re.compile(r".*_HOME"), "a folder on CI's machine (a toolchain's home)"),
    (re.compile(r"DYLD_.*"), "loads code into every program the run starts"),
    (re.compile(r"WORKER_.*"), "the worker's own"),
    (re.compile(r"GITHUB_.*|RUNNER_.*|CI_.*|ACTIONS_.*"), "CI's own"),
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
#: A CI line that names a test run (`npm test`, `go test`, `pytest`, `mvn verify`, `tox`).
_TEST_WORD = re.compile(r"\b(?:test|tests|pytest|py\.test|tox|nox|unittest|verify)\b")
#: A CI line that installs (`npm ci`, `pip install pytest`, `go mod download`): whole words.
_INSTALLS = re.compile(r"(?:^|\s)(?:install|i|ci|add|download)(?:\s|$)")
#: What makes a test command more than one command: a prefix would cover its first only.
_SHELL = re.compile(r"[;&|()<>`\n]")


@dataclass(frozen=True)
class CiVar:
    """One variable taken: its name, its value, and where CI sets it (`ci.yml:12`)."""

    name: str
    value: str
    source: str

    def describe(self) -> str:
        return f"{self.name}={self.value} ({self.source})"


@dataclass(frozen=True)
class CiTestEnv:
    """The variables CI gives its test step that the test runs take, and those left out (each
    `NAME (why, file:line)`)."""

    taken: tuple[CiVar, ...] = ()
    left_out: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for the user ("" when CI sets nothing for its tests)."""
        if not self.taken and not self.left_out:
            return ""
        said = ", ".join(v.describe() for v in self.taken) or "nothing"
        left = f"; left out: {', '.join(self.left_out)}" if self.left_out else ""
        return f"CI's environment for the tests: {said}{left}"


def ci_test_env(files: RepoFiles, runs: Callable[[str], bool]) -> CiTestEnv:
    """What CI sets for the first test step of its jobs (`runs`: whether a line is the
    project's runner's); empty when no job runs the tests."""
    for job in ci_jobs(files):
        at = next((n for n, line in job.lines if _is_test_line(line, runs)), None)
        if at is None:
            continue
        taken: list[CiVar] = []
        left: list[str] = []
        for entry in job.env_at(at).values():
            where = job.where(entry.line)
            why = entry.unreadable or judge(entry.name, entry.value)
            if why:
                left.append(f"{entry.name} ({why}, {where})")
            elif len(taken) < MAX_VARS:
                taken.append(CiVar(entry.name, entry.value, where))
        return CiTestEnv(tuple(taken), tuple(left))
    return CiTestEnv()


def judge(name: str, value: str) -> str:
    """Why a variable is left out of the test runs; "" when it is taken."""
    if not _NAME.fullmatch(name):
        return "not a variable's name"
    if "${{" in value:
        return "a secret" if re.search(r"\$\{\{[^}]*\bsecrets\.", value) else "an expression"
    if "$" in value:
        return "a variable's value"
    if "\n" in value or "\0" in value or len(value) > MAX_VALUE:
        return "not one short literal"
    if name in DENIED:
        return DENIED[name]
    return next((why for pattern, why in DENIED_PATTERNS if pattern.fullmatch(name)), "")


def with_env(command: str, taken: tuple[CiVar, ...]) -> str:
    """`command` with the variables before it, but those it sets itself; as it is when it is
    more than one command (a prefix would reach its first only)."""
    if not taken or _SHELL.search(command):
        return command
    own = set(_ASSIGNMENT.findall(" ".join(_leading_assignments(command))))
    words = [f"{v.name}={shlex.quote(v.value)}" for v in taken if v.name not in own]
    return " ".join([*words, command])


def _leading_assignments(command: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    out = []
    for word in words:
        if not _ASSIGNMENT.match(word):
            break
        out.append(word)
    return out


def _is_test_line(line: str, runs: Callable[[str], bool]) -> bool:
    try:
        ran = runs(line)
    except ValueError:
        return False
    return ran and bool(_TEST_WORD.search(line)) and not _INSTALLS.search(line)
