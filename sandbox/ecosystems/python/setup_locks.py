"""Set-up commands for projects that pin what they test with in a lock file.

A lock file wins over unpinned sources: its tool exports the pinned requirements (the test and dev
groups and extras that exist, never the project itself) and pip installs them; the project then
goes in editable with `--no-deps`. The tool comes from its cached layer (lock_tools.py,
sandbox/setup/tool_layer.py), a venv of its own, so neither it nor its own dependencies end up
in the environment the tests run in, and a project's set-up installs only the project's own.

`uv export` and `poetry export` refuse a group or extra that does not exist, hence only the ones
the pyproject names are asked for; `pdm export` exports every locked group unless told
otherwise, hence `--prod` when no test group exists.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.ecosystems.python.lock_tools import lock_tool
from sandbox.setup.tool import SetupTool

TEST_NAMES = ("test", "tests", "testing", "dev")
LOCKED_REQUIREMENTS = "/tmp/worker-lock-requirements.txt"


@dataclass(frozen=True, kw_only=True)
class LockPlan:
    """The pinned install a lock file gives, and the names it was read from."""

    command: str
    source: str
    tool: SetupTool


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


def lock_plan(
    *,
    root: Path,
    pyproject: Mapping[str, Any],
    installable: bool,
    uv_toml: Mapping[str, Any] | None = None,
) -> LockPlan | None:
    """The pinned set-up for the first of uv.lock, poetry.lock, pdm.lock present, else None
    (`uv_toml`: the root's uv.toml, where uv's required version may be)."""
    groups_735 = table(pyproject, "dependency-groups")
    extras_621 = table(pyproject, "project", "optional-dependencies")
    for lock in ("uv.lock", "poetry.lock", "pdm.lock"):
        path = root / lock
        if not path.is_file() or path.is_symlink():
            continue
        if lock == "uv.lock":
            groups, extras = wanted_names(*groups_735), wanted_names(*extras_621)
            name = "uv"
            export = "uv export --frozen --no-hashes --no-emit-project --format requirements.txt"
            flags = [*(f"--group {shlex.quote(g)}" for g in groups)]
            flags += [f"--extra {shlex.quote(e)}" for e in extras]
        elif lock == "poetry.lock":
            poetry = table(pyproject, "tool", "poetry")
            legacy_dev = ["dev"] if "dev-dependencies" in poetry else []
            groups = wanted_names(*table(poetry, "group"), *groups_735, *legacy_dev)
            extras = wanted_names(*table(poetry, "extras"), *extras_621)
            name = "poetry"
            export = "poetry export --without-hashes -f requirements.txt"
            flags = [f"--with {shlex.quote(g)}" for g in groups]
            flags += [f"--extras {shlex.quote(e)}" for e in extras]
        else:
            pdm_dev = table(pyproject, "tool", "pdm", "dev-dependencies")
            groups = wanted_names(*groups_735, *pdm_dev, *extras_621)
            extras = []
            name = "pdm"
            export = "pdm export --without-hashes -f requirements"
            flags = [f"-G {shlex.quote(g)}" for g in groups] or ["--prod"]
        tool = lock_tool(name, pyproject, uv_toml)
        steps = [
            f"{shlex.quote(tool.home)}/bin/{' '.join([export, *flags])} -o {LOCKED_REQUIREMENTS}",
            f"python -m pip install -r {LOCKED_REQUIREMENTS}",
        ]
        if installable:
            steps.append("python -m pip install --no-deps -e .")
        named = ", ".join([*groups, *(f"[{e}]" for e in extras)])
        source = f"{lock} {named}".strip()
        return LockPlan(command=" && ".join(steps), source=source, tool=tool)
    return None
