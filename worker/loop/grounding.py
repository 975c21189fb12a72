"""Facts for the first message: which source files the failing tests point at.

Small models lose steps looking for the code under test. The harness already knows the failing
tests; the files named in their tracebacks, and the modules the failing test files import, are
shown up front (through the same read_file tool and policies the model uses).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.testrun import TestRun

_FRAME = re.compile(r"([\w./-]+\.py):\d+")


def implicated_files(
    run: TestRun, *, workspace: Path, paths: PathPolicy, limit: int = 3
) -> list[str]:
    """Writable source files the failures name or their test files import, most relevant first."""
    if run.summary is None:
        return []
    found: list[str] = []
    test_files: list[str] = []
    for failure in run.summary.failures:
        test_files.append(failure.test_id.split("::")[0])
        for rel in _FRAME.findall(f"{failure.traceback}\n{failure.message}"):
            found.append(rel)
    for test_file in dict.fromkeys(test_files):
        found.extend(_imported_modules(workspace, test_file, paths))
    keep: list[str] = []
    for rel in dict.fromkeys(p.lstrip("./") for p in found):
        if len(keep) >= limit:
            break
        if paths.check(rel, write=True).allowed and _is_file_inside(workspace, rel):
            keep.append(rel)
    return keep


def _imported_modules(workspace: Path, test_file: str, paths: PathPolicy) -> list[str]:
    if not paths.check(test_file).allowed or not _is_file_inside(workspace, test_file):
        return []
    try:
        tree = ast.parse((workspace / test_file).read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
    out = []
    for name in names:
        base = name.replace(".", "/")
        for candidate in (
            f"{base}.py",
            f"{base}/__init__.py",
            f"src/{base}.py",
            f"src/{base}/__init__.py",
        ):
            if _is_file_inside(workspace, candidate):
                out.append(candidate)
                break
    return out


def _is_file_inside(workspace: Path, rel: str) -> bool:
    path = workspace / rel
    try:
        return (
            path.is_file()
            and not path.is_symlink()
            and path.resolve().is_relative_to(workspace.resolve())
        )
    except (OSError, ValueError):
        return False
