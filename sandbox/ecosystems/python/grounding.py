"""Facts for the first message: which source files the failing tests point at.

A model of any size spends steps (and tokens) looking for the code under test. The harness
already knows the failing tests; the files named in their tracebacks, and the modules the
failing test files import, are shown up front (through the same read_file tool and policies the
model uses).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.base import FailedRun
from sandbox.ecosystems.python import definitions
from sandbox.source.grounding import Grounding, render_chosen

_FRAME = re.compile(r"([\w./-]+\.py):\d+")
MAX_CLASSES = 8  # classes (a test's and their bases) searched for a method its syntax calls


def implicated_files(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int = 3
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


def implicated_code(
    run: FailedRun, *, workspace: Path, paths: PathPolicy, max_lines: int = 150
) -> Grounding:
    """The definitions the failing tests lead to, numbered as read_file numbers lines; empty
    when none is found (the caller then shows whole files)."""
    if run.summary is None or not run.summary.failures:
        return Grounding()
    failures = run.summary.failures[:5]
    near = implicated_files(run, workspace=workspace, paths=paths, limit=10)
    candidates = _package_files(workspace, near, paths)
    chosen: list[definitions.Definition] = []
    for failure in failures:  # the source frames first: the failure happened there
        for rel, line in definitions.frames(f"{failure.traceback}\n{failure.message}"):
            if rel in candidates:
                found = definitions.enclosing(workspace, rel, line)
                if found is not None:
                    chosen.append(found)
    by_name = definitions.index(workspace, candidates)
    for failure in failures:
        test_file = failure.test_id.split("::")[0]
        if not paths.check(test_file).allowed or not _is_file_inside(workspace, test_file):
            continue
        names = definitions.called_names(workspace / test_file, failure.test_id)
        classes = [d.name for n in names for d in by_name.get(n, []) if d.is_class and d.top]
        for name in names:
            if name.startswith("__"):  # a method the test's syntax calls on its classes
                chosen.extend(_methods(by_name, classes, name))
                continue
            found = _one(by_name.get(name, []), name)
            if found is not None:
                chosen.append(found)
    return _render(workspace, chosen, max_lines=max_lines)


def _methods(
    by_name: dict[str, list[definitions.Definition]], classes: list[str], name: str
) -> list[definitions.Definition]:
    """The method `name` of `classes` and of their bases, nearest first: `FIFOCache()[k] = v`
    runs `FIFOCache.__setitem__`, which may hand on to `Cache.__setitem__`."""
    found: list[definitions.Definition] = []
    queue, seen = list(dict.fromkeys(classes)), set[str]()
    while queue and len(seen) < MAX_CLASSES:
        cls = queue.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        found += [d for d in by_name.get(name, []) if d.owner == cls]
        queue += [b for d in by_name.get(cls, []) if d.is_class for b in d.bases]
    return found


def _package_files(workspace: Path, near: list[str], paths: PathPolicy) -> list[str]:
    """The writable .py files beside the implicated ones (a package's modules), those first."""
    out = list(near)
    for rel in near:
        folder = (workspace / rel).parent
        for path in sorted(folder.rglob("*.py")):
            sub = path.relative_to(workspace).as_posix()
            if len(out) >= definitions.MAX_FILES:
                break
            if paths.check(sub, write=True).allowed and _is_file_inside(workspace, sub):
                out.append(sub)
    return list(dict.fromkeys(out))


def _one(found: list[definitions.Definition], name: str) -> definitions.Definition | None:
    if name.startswith("__") or not found:
        return None
    tops = [d for d in found if d.top]
    if len(tops) == 1:
        return tops[0]
    return found[0] if len(found) == 1 else None


def _render(workspace: Path, chosen: list[definitions.Definition], *, max_lines: int) -> Grounding:
    def lines_of(rel: str) -> list[str]:
        return (workspace / rel).read_text(encoding="utf-8", errors="replace").splitlines()

    return render_chosen(
        chosen, lines_of=lines_of, max_lines=max_lines, whole=lambda d: not d.outline,
        key=lambda d: (d.path, d.start),
    )  # fmt: skip
