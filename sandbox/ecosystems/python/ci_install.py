"""Packages a project's CI installs for its tests that no project file names.

Some projects name part of what their tests import only in the workflow that runs them
(`pip install pytest numpy pandas` before `pytest`; mypy, pinned, for tests that run it): the
tests then skip or fail in a set-up made from the files alone. The CI jobs (GitHub's or
GitLab's, ci_jobs.py) are read, never run: in each job that runs the tests (a `pytest`, `tox`,
`nox` or `unittest` line), the
requirements its `pip install` lines name (a name with its extras and version) join the
set-up's install, each said with its file and line. What is left out: paths and `.` (the
project: the files' install covers it), requirement files and index options (the files' rules
read those), anything with a `$` in it (a matrix value, a variable), and the tools that only
build, publish, lint or upload (LEFT_OUT), which the notes name.

>>> ci_requirements_in("python -m pip install -U pip pytest 'numpy>=2' -r req.txt -e .[x] tox")
(['pytest', 'numpy>=2'], ['pip', 'tox'])

A requirement with an environment marker is kept whole (pip evaluates the marker, so of two
pins for two Python versions the one for the set-up's Python is installed):

>>> ci_requirements_in('''python -m pip install "mypy==1.20.1; python_version >= '3.10'"''')
(["mypy==1.20.1; python_version >= '3.10'"], [])
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.repo_files import RepoFiles

#: Installed by CI for what it does besides the tests: packaging, uploading, linting, running
#: the tests some other way (tox and nox install the same requirements themselves).
LEFT_OUT = frozenset(
    {
        *("pip", "setuptools", "wheel", "build", "twine", "uv", "virtualenv", "pipx"),
        *("tox", "nox", "tox-gh-actions", "tox-gh", "tox-uv", "pre-commit", "codecov", "coveralls"),
        *("flake8", "black", "isort", "ruff", "pylint", "bandit", "check-manifest"),
    }
)
MAX_PACKAGES = 40
#: A CI line that runs the tests, or installs their runner.
TESTS = re.compile(r"\b(?:pytest|py\.test|tox|nox|unittest)\b")
_PIP = re.compile(
    r"(?:^|[;&|(]\s*)(?:(?:python3?(?:\.\d+)?|py)\s+-m\s+pip|pip3?|uv\s+pip)\s+install\s+"
    r"((?:'[^']*'|\"[^\"]*\"|[^;&|)'\"])*)"  # a quoted word may hold `;` (a marker)
)
_WITH_VALUE = frozenset(
    {"-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-i", "--index-url"}
    | {"--extra-index-url", "-f", "--find-links", "--trusted-host", "--target", "-t", "--prefix"}
)
_FILES = (".txt", ".in", ".whl", ".gz", ".zip", ".cfg", ".toml", ".py")
_REQUIREMENT = re.compile(r"[A-Za-z0-9][\w.-]*(\[[\w,.-]+\])?\s*(?:[<>=!~]=?\s*[\w.*+!-]+,?)*")
#: An environment marker after a requirement's `;` (PEP 508), which pip evaluates itself:
#: `python_version >= '3.10'`, `sys_platform != "win32" and extra == "x"`.
_MARKER = re.compile(r"""[\w\s.'"<>=!~()-]+""")


@dataclass(frozen=True)
class CiRequirements:
    """What CI's test jobs install beyond the files: the requirements, where each line is
    (`.github/workflows/ci.yml:23`), and the tools left out."""

    requirements: tuple[str, ...]
    sources: tuple[str, ...]
    left_out: tuple[str, ...]


def ci_requirements(files: RepoFiles) -> CiRequirements | None:
    """The requirements the repository's test jobs install; None when they install none."""
    found: list[str] = []
    sources: list[str] = []
    left: list[str] = []
    for job in ci_jobs(files):
        if not any(TESTS.search(line) for _n, line in job.lines):
            continue
        for n, line in job.lines:
            kept, dropped = ci_requirements_in(line)
            new = [r for r in kept if r not in found]
            if new:
                found += new
                sources.append(job.where(n))
            left += [d for d in dropped if d not in left]
    if not found:
        return None
    return CiRequirements(tuple(found[:MAX_PACKAGES]), tuple(sources), tuple(left))


def ci_requirements_in(line: str) -> tuple[list[str], list[str]]:
    """The requirements `line`'s pip installs name, and the LEFT_OUT tools among them."""
    kept: list[str] = []
    dropped: list[str] = []
    for match in _PIP.finditer(line):
        try:
            words = shlex.split(match[1])
        except ValueError:
            continue
        skip_next = False
        for word in words:
            if skip_next:
                skip_next = False
                continue
            if word.startswith("-"):
                skip_next = word in _WITH_VALUE
                continue
            requirement, _, marker = word.partition(";")
            if "$" in word or word.endswith(_FILES) or not _REQUIREMENT.fullmatch(requirement):
                continue  # a path, `.`, a URL, a file, a matrix value
            if marker and not _MARKER.fullmatch(marker):
                continue
            word = f"{requirement.strip()}; {marker.strip()}" if marker else word
            name = re.split(r"[\[<>=!~\s]", word, maxsplit=1)[0].lower().replace("_", "-")
            (dropped if name in LEFT_OUT else kept).append(word)
    return kept, dropped
