"""Set-up commands for projects that pin what they test with in a lock file.

A lock file wins over unpinned sources: its tool exports the pinned requirements (the test and dev
groups and extras that exist, never the project itself) and pip installs them; the project then
goes in editable with `--no-deps`. The tool lives in a throwaway venv under /tmp (a tmpfs, never
committed into the set-up image), so neither it nor its own dependencies end up in the
environment the tests run in.

Verified by hand (2026, Python 3.11) on small projects locked with each tool: uv 0.13.9;
poetry 2.5.1 with poetry-plugin-export 1.10.1; pdm 2.29.3 from `pdm[locked]` (the unpinned latest,
2.29.4, failed on import with hishel 2.0.0). `uv export` and `poetry export` refuse a group or
extra that does not exist, hence only the ones the pyproject names are asked for; `pdm export`
exports every locked group unless told otherwise, hence `--prod` when no test group exists.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEST_NAMES = ("test", "tests", "testing", "dev")
TOOL_VENV = "/tmp/worker-lock-tool"
LOCKED_REQUIREMENTS = "/tmp/worker-lock-requirements.txt"


@dataclass(frozen=True, kw_only=True)
class LockPlan:
    """The pinned install a lock file gives, and the names it was read from."""

    command: str
    source: str


def normalize(name: str) -> str:
    """A PEP 503/685 normalized group or extra name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def table(data: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The nested table at `keys`, or {} where any level is missing or not a table."""
    node: Any = data
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def wanted_names(*names: object) -> list[str]:
    """Those of `names` that are test/dev names, each once, in TEST_NAMES order."""
    by_norm = {normalize(n): n for n in names if isinstance(n, str)}
    return [by_norm[t] for t in TEST_NAMES if t in by_norm]


def lock_plan(*, root: Path, pyproject: Mapping[str, Any], installable: bool) -> LockPlan | None:
    """The pinned set-up for the first of uv.lock, poetry.lock, pdm.lock present, else None."""
    groups_735 = table(pyproject, "dependency-groups")
    extras_621 = table(pyproject, "project", "optional-dependencies")
    for lock in ("uv.lock", "poetry.lock", "pdm.lock"):
        path = root / lock
        if not path.is_file() or path.is_symlink():
            continue
        if lock == "uv.lock":
            groups, extras = wanted_names(*groups_735), wanted_names(*extras_621)
            tool = "uv"
            export = "uv export --frozen --no-hashes --no-emit-project --format requirements.txt"
            flags = [*(f"--group {shlex.quote(g)}" for g in groups)]
            flags += [f"--extra {shlex.quote(e)}" for e in extras]
        elif lock == "poetry.lock":
            poetry = table(pyproject, "tool", "poetry")
            legacy_dev = ["dev"] if "dev-dependencies" in poetry else []
            groups = wanted_names(*table(poetry, "group"), *groups_735, *legacy_dev)
            extras = wanted_names(*table(poetry, "extras"), *extras_621)
            tool = "poetry poetry-plugin-export"
            export = "poetry export --without-hashes -f requirements.txt"
            flags = [f"--with {shlex.quote(g)}" for g in groups]
            flags += [f"--extras {shlex.quote(e)}" for e in extras]
        else:
            pdm_dev = table(pyproject, "tool", "pdm", "dev-dependencies")
            groups = wanted_names(*groups_735, *pdm_dev, *extras_621)
            extras = []
            tool = "'pdm[locked]'"
            export = "pdm export --without-hashes -f requirements"
            flags = [f"-G {shlex.quote(g)}" for g in groups] or ["--prod"]
        steps = [
            f"python -m venv {TOOL_VENV}",
            f"{TOOL_VENV}/bin/python -m pip install --no-cache-dir {tool}",
            f"{TOOL_VENV}/bin/{' '.join([export, *flags])} -o {LOCKED_REQUIREMENTS}",
            f"rm -rf {TOOL_VENV}",
            f"python -m pip install -r {LOCKED_REQUIREMENTS}",
        ]
        if installable:
            steps.append("python -m pip install --no-deps -e .")
        named = ", ".join([*groups, *(f"[{e}]" for e in extras)])
        return LockPlan(command=" && ".join(steps), source=f"{lock} {named}".strip())
    return None
