"""The flags a project's CI gives its npm install, when they change what npm resolves.

A project whose peer dependencies conflict installs in CI with `npm install --legacy-peer-deps`
(or `--force`); its files alone do not say so, and a plain install ends in `ERESOLVE`. The CI
jobs' lines (GitHub's `run:`, GitLab's `script:`) are read (never run) for npm's own install
(`npm ci`, `npm install`, `npm i`, through corepack or not) with no package named and no
`-g`: the first such line with one of FLAGS gives them, and the set-up says where it took them
from (file and line). Other flags (a cache folder, a log level) are the set-up's own to
choose, and are not taken.

>>> ci_flags_in("npm ci --legacy-peer-deps --prefer-offline && npm test")
('--legacy-peer-deps',)
>>> ci_flags_in("npm install -g --force npm@8"), ci_flags_in("npm i left-pad --force")
((), ())
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.repo_files import RepoFiles

#: What CI may add: each changes which tree npm accepts or what it runs, never where it goes.
FLAGS = ("--legacy-peer-deps", "--strict-peer-deps", "--force", "--ignore-scripts")
_INSTALL = re.compile(r"(?:^|[;&|(]\s*)(?:corepack\s+)?npm\s+(?:ci|install|i)(?=\s|$)([^;&|)]*)")


@dataclass(frozen=True)
class CiFlags:
    """npm install flags the CI gives, and where (`.github/workflows/ci.yml:23`)."""

    flags: tuple[str, ...]
    source: str


def ci_npm_flags(files: RepoFiles) -> CiFlags | None:
    """The first install line of the repository's workflows that gives one of FLAGS."""
    for job in ci_jobs(files):
        for line_no, line in job.lines:
            if flags := ci_flags_in(line):
                return CiFlags(flags, job.where(line_no))
    return None


def ci_flags_in(line: str) -> tuple[str, ...]:
    """FLAGS that an npm install of the project in `line` gives, in FLAGS' order."""
    found: list[str] = []
    for match in _INSTALL.finditer(line):
        try:
            words = shlex.split(match[1])
        except ValueError:
            continue
        if any(not w.startswith("-") for w in words) or {"-g", "--global"} & set(words):
            continue  # installs a named package, or a global tool: not the project's install
        given = {w.split("=", 1)[0] for w in words if not w.endswith("=false")}
        found += [f for f in FLAGS if f in given and f not in found]
    return tuple(f for f in FLAGS if f in found)
