"""A broken environment told from a bug: the tests before any change fail to import a module the
repository does not provide (or provides but never installed: a `src/` layout with no set-up).

No edit of the code can mend that, so the run stops before the first model call. A module the
repository defines at its root (`pkg/`, `pkg.py`) is the code's business: `No module named
'pkg.helpers'` there is a bug the model may fix, and is not reported here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox.ecosystems.base import FailedRun

NO_MODULE = re.compile(r"No module named '([A-Za-z_][\w.]*)'")
CANNOT_IMPORT = re.compile(r"cannot import name '\w+' from '([A-Za-z_][\w.]*)'")
_DYNAMIC = re.compile(r"(\b__import__|\bimport_module)\s*\(")
_RAISED_AT = re.compile(r"^(\S+?):\d+: \w*(Error|Exception)$")
_FRAME_AT = re.compile(r"^(\S+?):\d+: in \S+$")
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".tox", ".venv", "venv", "build"})
_SEARCH_DEPTH = 4


@dataclass(frozen=True, kw_only=True)
class MissingModule:
    """A module the tests could not import, and where the repository has it, if anywhere."""

    module: str  # as the error named it
    where: str  # the first test (or "the test command") that failed on it
    ours: str | None = None  # the repository's own copy, not importable (not installed)
    how: str = "no module"  # or "cannot import from": an installed version without the name

    @property
    def top(self) -> str:
        return self.module.split(".")[0]

    def describe(self) -> str:
        """One line: what is missing, and why no edit of the code mends it."""
        if self.ours is not None:
            return (
                f"the tests cannot import {self.module!r} ({self.where}): the repository has it "
                f"in {self.ours}, but the project is not installed in the sandbox"
            )
        if self.how == "cannot import from":
            return (
                f"the tests fail to import from {self.module!r} ({self.where}): the installed "
                "version lacks a name they need"
            )
        return f"the tests cannot import {self.module!r} ({self.where}): it is not installed"


def missing_modules(run: FailedRun, tree: Path) -> list[MissingModule]:
    """Modules the failing tests (or the whole command, without a report) could not import and
    that the repository does not define at its root; one entry per top-level package. A name
    the repository's own code imports by a computed name (`__import__(name)`,
    `importlib.import_module(name)`) is left out: which name it computes is the code's business
    (a planted `PY3` flipped in six asks for Python 2's `cStringIO`)."""
    found: dict[str, MissingModule] = {}
    for where, text in run.failure_texts():
        computed = _computed_by_the_code(text, tree)
        for how, pattern in (("no module", NO_MODULE), ("cannot import from", CANNOT_IMPORT)):
            for name in pattern.findall(text):
                top = name.split(".")[0]
                if top in found or name in computed or _at_root(tree, top):
                    continue
                found[top] = MissingModule(
                    module=name, where=where, ours=_elsewhere(tree, top), how=how
                )
    return list(found.values())


def _computed_by_the_code(text: str, tree: Path) -> set[str]:
    """Module names a traceback shows failing in a dynamic import (`__import__(...)`,
    `import_module(...)`) on a line of a file of the repository."""
    lines = text.splitlines()
    names: set[str] = set()
    for i, line in enumerate(lines):
        match = NO_MODULE.search(line)
        if not match or not line.startswith("E ") or i == 0:
            continue
        if not _DYNAMIC.search(lines[i - 1].lstrip("> ")):
            continue
        # Where the raising line is: `path:N: ModuleNotFoundError` after it (--tb=long), or
        # `path:N: in function` before its code line (--tb=short).
        after = (_RAISED_AT.match(ln) for ln in lines[i + 1 : i + 4])
        before = (_FRAME_AT.match(ln) for ln in reversed(lines[max(0, i - 3) : i - 1]))
        at = next((m for m in (*after, *before) if m), None)
        if at is not None and _in_tree(tree, at.group(1)):
            names.add(match.group(1))
    return names


def _in_tree(tree: Path, rel: str) -> bool:
    path = Path(rel)
    if path.is_absolute() or ".." in path.parts:
        return False
    return (tree / path).is_file()


def _at_root(tree: Path, top: str) -> bool:
    return (tree / f"{top}.py").is_file() or (tree / top).is_dir() or any(tree.glob(f"{top}.*.so"))


def _elsewhere(tree: Path, top: str) -> str | None:
    """The repository's own package `top` below the root (`src/top`), if it has one."""
    for folder, dirs, names in os.walk(tree):
        depth = Path(folder).relative_to(tree).parts
        if len(depth) >= _SEARCH_DEPTH:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        rel = Path(folder).relative_to(tree)
        if top in dirs and (Path(folder) / top / "__init__.py").is_file():
            return (rel / top).as_posix()
        if f"{top}.py" in names and rel.parts and rel.parts[0] not in ("tests", "test"):
            return (rel / f"{top}.py").as_posix()
    return None
