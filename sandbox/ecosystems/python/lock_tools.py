"""The lock-file tools (uv, poetry, pdm) at the version a project asks for, as set-up tools
(sandbox/setup/tool.py): installed once per version into a cached layer, each in a venv of its
own, so neither it nor its dependencies are in the environment the tests run in.

The version: the pinned default where the project says nothing or where the default meets what
it says (uv's `required-version` in uv.toml or `[tool.uv]`, poetry's `[tool.poetry]
requires-poetry`; pdm has no such setting); else the version it pins exactly; else the newest
its constraint allows, as pip resolves it when the layer is built.

The defaults were verified by hand (2026, Python 3.11) on small projects locked with each tool:
uv 0.13.9; poetry 2.5.1 with poetry-plugin-export 1.10.1; pdm 2.29.3 from `pdm[locked]` (the
unpinned latest, 2.29.4, failed on import with hishel 2.0.0).
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Mapping
from typing import Any

from sandbox.ecosystems.python.installer import PIP
from sandbox.ecosystems.python.pins import python_satisfies
from sandbox.setup.tool import SetupTool

DEFAULTS = {"uv": "0.13.9", "poetry": "2.5.1", "pdm": "2.29.3"}
#: What pip installs beside each tool, at its default version; `{}`: the tool's requirement.
EXTRAS = {"poetry": ("poetry-plugin-export==1.10.1",)}
#: The distribution that installs each tool (pdm's `locked` extra pins what it was released
#: with).
DISTRIBUTIONS = {"uv": "uv", "poetry": "poetry", "pdm": "pdm[locked]"}
#: The tool's own installs reach PyPI (or the index the user names), as pip's set-up does.
TOOL_INSTALLER = dataclasses.replace(PIP, name="pip (tool)", writes_deps_dir=True)
_CLAUSE = re.compile(r"(\^|~(?!=)|~=|===|==|!=|<=|>=|<|>)?\s*v?(\d+(?:\.\d+)*)(\.\*)?")


def lock_tool(
    name: str, pyproject: Mapping[str, Any], uv_toml: Mapping[str, Any] | None
) -> SetupTool:
    """The set-up tool `name` at the version the project's files ask for (module docstring)."""
    asked = _asked(name, pyproject, uv_toml)
    default = DEFAULTS[name]
    version, why = default, "the pinned default"
    if asked is not None:
        where, constraint = asked
        spec = to_pep440(constraint)
        release = tuple(int(n) for n in default.split("."))
        if spec is None:
            why = f"the pinned default; {where} {constraint} not understood"
        elif python_satisfies(spec, release) is not False:
            why = f"the pinned default, within {where} {constraint}"
        elif exact := re.fullmatch(r"==(\d+(?:\.\d+)*)", spec):
            version, why = exact[1], f"{where} {constraint}"
        else:
            version, why = spec, f"the newest within {where} {constraint}"
    pinned = re.fullmatch(r"\d+(?:\.\d+)*", version) is not None
    wanted = [DISTRIBUTIONS[name] + (f"=={version}" if pinned else version)]
    extras = EXTRAS.get(name, ())
    wanted += extras if version == default else [e.split("==")[0] for e in extras]
    tool = SetupTool(name=name, version=version, why=why, install="", installer=TOOL_INSTALLER)
    home = shlex.quote(tool.home)
    install = (
        f"python -m venv {home} && "  # venv makes the folders above it
        f"{home}/bin/python -m pip install --no-cache-dir {shlex.join(wanted)} && "
        f"{home}/bin/{name} --version"
    )
    return dataclasses.replace(tool, install=install)


def to_pep440(constraint: str) -> str | None:
    """A version constraint as PEP 440 specifiers; poetry's `^` and `~` and a bare version
    understood; None where it cannot be read (an `||`, a pre-release).

    >>> to_pep440("^2.1"), to_pep440("~1.8.3"), to_pep440(">=2.0 <3"), to_pep440("2.4.1")
    ('>=2.1,<3', '>=1.8.3,<1.9', '>=2.0,<3', '==2.4.1')
    >>> to_pep440("^0.4"), to_pep440("*"), to_pep440(">=1 || <0.5")
    ('>=0.4,<0.5', '', None)
    """
    clauses = [c for c in re.split(r"\s*,\s*|\s+(?=[<>=!~^\d])", constraint.strip()) if c]
    out: list[str] = []
    for clause in clauses:
        if clause == "*":
            continue
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            return None
        op, text, star = match.groups()
        parts = [int(n) for n in text.split(".")]
        if op == "^":
            nonzero = next((i for i, n in enumerate(parts) if n), len(parts) - 1)
            upper = [*parts[:nonzero], parts[nonzero] + 1]
            out += [f">={text}", "<" + ".".join(map(str, upper))]
        elif op == "~":
            upper = [parts[0] + 1] if len(parts) == 1 else [parts[0], parts[1] + 1]
            out += [f">={text}", "<" + ".".join(map(str, upper))]
        else:
            out.append(f"{op or '=='}{text}{star or ''}")
    return ",".join(out)


def _asked(
    name: str, pyproject: Mapping[str, Any], uv_toml: Mapping[str, Any] | None
) -> tuple[str, str] | None:
    """Where the project constrains the tool's version, and the constraint as written."""
    tool = pyproject.get("tool")
    tables = tool if isinstance(tool, dict) else {}
    found: list[tuple[str, object]] = []
    if name == "uv":
        found.append(("uv.toml's required-version", (uv_toml or {}).get("required-version")))
        own = tables.get("uv")
        value = own.get("required-version") if isinstance(own, dict) else None
        found.append(("pyproject.toml's [tool.uv] required-version", value))
    elif name == "poetry":
        own = tables.get("poetry")
        value = own.get("requires-poetry") if isinstance(own, dict) else None
        found.append(("pyproject.toml's requires-poetry", value))
    for where, value in found:
        if isinstance(value, str) and value.strip():
            return where, value.strip()
    return None
