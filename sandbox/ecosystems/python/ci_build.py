r"""The build steps a project's CI runs before its tests, when its files alone do not say them.

A project whose C source is generated (msgpack's `make cython` turns a `.pyx` into the `.c` its
setup.py compiles) cannot be installed from its files alone: its CI runs the step first. The CI
jobs (ci_jobs.py: GitHub's and GitLab's) are read, never run on the host: in a job that runs the
tests, each `make TARGET` line before the first test line whose targets the repository's
Makefile defines and that only build (not LEFT_OUT: tests, lint, docs, packaging, cleaning)
is taken, with its file and line. Set-up runs them inside its fence, after the requirements
and before the project's own install, in CI's order.

>>> make_targets("make -j2 cython"), make_targets("make test"), make_targets("make X=$(pwd) all")
(['cython'], ['test'], [])
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from sandbox.ecosystems.python.ci_install import TESTS
from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.repo_files import RepoFiles

MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
#: Targets that do something besides building what the tests import.
LEFT_OUT = frozenset(
    {"test", "tests", "check", "pytest", "coverage", "cov", "lint", "format", "fmt", "style"}
    | {"doc", "docs", "html", "clean", "distclean", "install", "dist", "sdist", "wheel"}
    | {"upload", "release", "publish", "deploy", "serve", "bench", "benchmark", "venv"}
)
MAX_STEPS = 5
_TARGET = re.compile(r"[A-Za-z_][\w.-]*")
_RULE = re.compile(r"(?m)^([A-Za-z_][\w.-]*(?:[ \t]+[A-Za-z_][\w.-]*)*)[ \t]*:(?!=)")
_INSTALL = re.compile(r"\b(?:pip3?|pipx|conda|mamba|apt-get|apt|brew)\s+install\b")


@dataclass(frozen=True)
class CiBuild:
    """CI's build steps (`make cython`), each with where it is (`.github/workflows/ci.yml:23`)."""

    steps: tuple[str, ...]
    sources: tuple[str, ...]


def ci_build_steps(files: RepoFiles) -> CiBuild | None:
    """The `make` steps of the first test job that has any; None when none has."""
    defined = _makefile_targets(files)
    if not defined:
        return None
    for job in ci_jobs(files):
        first_test = next((i for i, (_n, ln) in enumerate(job.lines) if _runs_tests(ln)), None)
        if first_test is None:
            continue
        steps, sources = [], []
        for n, line in job.lines[:first_test]:
            targets = make_targets(line)
            if targets and all(t in defined and t not in LEFT_OUT for t in targets):
                steps.append(shlex.join(["make", *targets]))
                sources.append(job.where(n))
        if steps:
            return CiBuild(tuple(steps[:MAX_STEPS]), tuple(sources[:MAX_STEPS]))
    return None


def make_targets(line: str) -> list[str]:
    """The targets of a plain `make` line (options such as `-j2` dropped); [] for any other
    line, or a make line with a variable, a redirection or a second command."""
    try:
        words = shlex.split(line)
    except ValueError:
        return []
    if not words or words[0] != "make" or any(c in line for c in "$`;&|<>="):
        return []
    targets = []
    for word in words[1:]:
        if word.startswith("-"):
            if word in ("-C", "-f", "--directory", "--file"):
                return []  # another folder or Makefile: not the one read here
            continue
        if not _TARGET.fullmatch(word):
            return []
        targets.append(word)
    return targets


def _runs_tests(line: str) -> bool:
    """Whether a CI line runs the tests (`pytest -v`, `tox -e py`), not installs a runner."""
    return bool(TESTS.search(line)) and not _INSTALL.search(line)


def _makefile_targets(files: RepoFiles) -> set[str]:
    """The targets the repository's top-level Makefile defines (`name:` at a line's start)."""
    for name in MAKEFILES:
        if (text := files.read(name)) is not None:
            found = _RULE.findall(text)
            return {t for group in found for t in group.split()}
    return set()
