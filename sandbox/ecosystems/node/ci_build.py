"""The build a project's CI runs before its Node tests, when the tests import built output.

A TypeScript library's tests often import `dist/` (or `lib/`): CI runs `npm run build` (or
`yarn build`, `pnpm build`, `npm run compile`, `tsc`) before `npm test`, and its files alone do
not say so. The CI jobs (ci_jobs.py) are read, never run: in the first job with a line that
runs the test script, the last such line before it, whose script package.json defines (a bare
`tsc` needs none), is the build. Since the model edits the sources, the build must follow each
edit: it runs before the test script in every test run (runners.py), never once in set-up; what
it writes lands in the working copy, where a run's writes are never part of a patch (only the
files the model edited are). Nothing is added when the test script or `pretest` already runs
it.

>>> [build_in(x) for x in ("npm run build", "yarn compile", "npx tsc -p .", "npm ci")]
['build', 'compile', 'npx tsc -p .', None]
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.repo_files import RepoFiles

_TEST = re.compile(r"^(?:npm|yarn|pnpm)(?:\s+run)?\s+test(?::[\w:-]+)?(?:\s|$)|^npm\s+t(?:\s|$)")
_SCRIPT = re.compile(
    r"(?:npm\s+run|yarn(?:\s+run)?|pnpm(?:\s+run)?)\s+((?:build|compile)(?::[\w-]+)?)"
)
_TSC = re.compile(r"(?:npx\s+)?tsc(?:\s+[\w./=-]+)*")
_SHELL = re.compile(r"[;&|<>`$()\n]")


@dataclass(frozen=True)
class CiNodeBuild:
    """CI's build before its tests: the command a test run starts with, and where it is."""

    command: str
    source: str


def ci_node_build(files: RepoFiles, scripts: Mapping[str, str]) -> CiNodeBuild | None:
    """The build CI runs before its test script (see the module docstring); None when none,
    or when the test script or `pretest` already runs it."""
    for job in ci_jobs(files):
        at = next((i for i, (_n, ln) in enumerate(job.lines) if _TEST.search(ln.strip())), None)
        if at is None:
            continue
        found = None
        for n, line in job.lines[:at]:
            step = build_in(line)
            if step is not None and (step in scripts or _TSC.fullmatch(step)):
                found = (step, n)
        if found is None:
            return None
        step, n = found
        command = f"npm run {step}" if step in scripts else step
        ours = " ".join(scripts.get(k, "") for k in ("test", "pretest"))
        if re.search(rf"(?<![\w-]){re.escape(step)}(?![\w-])", ours):
            return None  # npm runs it already, as part of the test script
        return CiNodeBuild(command, job.where(n))
    return None


def build_in(line: str) -> str | None:
    """The build script a plain CI line runs (its name), or its `tsc` line; None otherwise."""
    line = line.strip()
    if _SHELL.search(line):
        return None
    if (script := _SCRIPT.fullmatch(line)) is not None:
        return script[1]
    if _TSC.fullmatch(line):
        try:
            return shlex.join(shlex.split(line))
        except ValueError:
            return None
    return None
