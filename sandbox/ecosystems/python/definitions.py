"""The code under test, found from the failing tests: the definitions their names lead to.

An assertion failure's traceback ends in the test, not in the function that is wrong, and a
test usually reaches that function through a package's `__init__`. So the harness follows the
names a failing test uses (`mi.all_equal(...)` -> `all_equal`), and the source frames of its
traceback, to their `def`/`class` in the repository's writable source files, and shows those
definitions, numbered as read_file numbers them. Parsing only: nothing of the repository runs.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from sandbox.source.numbered import numbered

MAX_FILES = 60
MAX_FILE_BYTES = 1_000_000
MAX_DEF_LINES = 60
_FRAME = re.compile(r"([\w./-]+\.py):(\d+)")
_SKIP = set(dir(builtins)) | {"self", "cls", "pytest", "mock", "assert_", "fail", "raises"}


@dataclass(frozen=True)
class Definition:
    """One function or class of a source file: where it is and its lines."""

    path: str
    name: str
    start: int  # 1-based, decorators included
    end: int
    outline: bool = False  # a class too long to show: its header and method lines only
    owner: str = ""  # for a method: its class's name
    bases: tuple[str, ...] = ()  # for a class: its bases' names (`abc.Mapping` -> `Mapping`)
    is_class: bool = False

    @property
    def top(self) -> bool:
        """A module-level function or class, not a method."""
        return not self.owner

    def render(self, lines: list[str]) -> str:
        """The definition in read_file's numbered form."""
        width = len(str(self.end))
        if self.outline:
            heads = [
                n
                for n in range(self.start, self.end + 1)
                if n == self.start or lines[n - 1].lstrip().startswith(("def ", "async def "))
            ]
            body = numbered(lines, heads, width=width)
            head = f"{self.path}: class {self.name}, lines {self.start}-{self.end} (outline)"
            return "\n".join([head, body])
        last = min(self.end, self.start + MAX_DEF_LINES - 1)
        body = numbered(lines, range(self.start, last + 1), width=width)
        head = f"{self.path}: {self.name}, lines {self.start}-{last} of {len(lines)}"
        if last < self.end:
            head += f" (the definition goes on to line {self.end})"
        return "\n".join([head, body])


def called_names(test_file: Path, test_id: str) -> list[str]:
    """Names the test `test_id` uses, in order of appearance, following helper functions of the
    test file one level down; [] when the file does not parse or the test is not found.

    Syntax that calls a method counts as that method's name: `c[k] = v` is `__setitem__`,
    `k in c` is `__contains__`, `len(c)` is `__len__` (see SYNTAX_METHODS)."""
    tree = _parse(test_file)
    if tree is None:
        return []
    parts = [re.sub(r"\[.*$", "", p) for p in test_id.split("::")[1:]]
    func = _find(tree, parts)
    if func is None and len(parts) == 2:
        # A test class that inherits its tests (a mixin in a sibling module): the method by name
        # in any class of the test file's folder.
        func, tree = _inherited(test_file, parts[1]) or (None, tree)
    if func is None:
        return []
    helpers = {
        node.name: node
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    names = _names(func)
    for name in list(names):
        if name in helpers and helpers[name] is not func:
            names += _names(helpers[name])
    return [n for n in dict.fromkeys(names) if n not in _SKIP and not n.startswith("assert")]


def _inherited(test_file: Path, name: str) -> tuple[ast.AST, ast.Module] | None:
    for sibling in sorted(test_file.parent.glob("*.py"))[:MAX_FILES]:
        tree = _parse(sibling)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                found = _find(ast.Module(body=node.body, type_ignores=[]), [name])
                if found is not None:
                    return found, tree
    return None


def frames(text: str) -> list[tuple[str, int]]:
    """(path, line) of each `path.py:N` in a traceback."""
    return [(path.lstrip("./"), int(line)) for path, line in _FRAME.findall(text)]


def index(workspace: Path, files: Iterable[str]) -> dict[str, list[Definition]]:
    """Top-level functions and classes, and methods, of `files` by name."""
    out: dict[str, list[Definition]] = {}
    for rel in list(dict.fromkeys(files))[:MAX_FILES]:
        tree = _parse(workspace / rel)
        if tree is None:
            continue
        for node, owner in _defs(tree):
            d = _definition(rel, node, owner=owner)
            out.setdefault(d.name, []).append(d)
    return out


def enclosing(workspace: Path, rel: str, line: int) -> Definition | None:
    """The innermost function (or else class) of `rel` that holds `line`."""
    tree = _parse(workspace / rel)
    if tree is None:
        return None
    best: Definition | None = None
    for node, owner in _defs(tree):
        d = _definition(rel, node, owner=owner)
        if d.start <= line <= d.end and (best is None or d.start >= best.start):
            best = d
    return best


def _definition(rel: str, node: ast.AST, *, owner: str) -> Definition:
    assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    end = node.end_lineno or node.lineno
    is_class = isinstance(node, ast.ClassDef)
    bases: tuple[str, ...] = ()
    if isinstance(node, ast.ClassDef):
        bases = tuple(
            b.id if isinstance(b, ast.Name) else b.attr
            for b in node.bases
            if isinstance(b, (ast.Name, ast.Attribute))
        )
    return Definition(
        path=rel, name=node.name, start=start, end=end,
        outline=is_class and end - start >= MAX_DEF_LINES,
        owner=owner, bases=bases, is_class=is_class,
    )  # fmt: skip


def _defs(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """Top-level functions and classes (owner "") and the classes' methods (owner: the class)."""
    found: list[tuple[ast.AST, str]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append((node, ""))
        if isinstance(node, ast.ClassDef):
            found += [
                (m, node.name)
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
    return found


def _find(tree: ast.Module, parts: list[str]) -> ast.AST | None:
    body: list[ast.stmt] = tree.body
    node: ast.AST | None = None
    for part in parts:
        node = next(
            (
                n
                for n in body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.name == part
            ),
            None,
        )
        if node is None:
            return None
        body = node.body  # type: ignore[attr-defined]
    return node


# The methods a test's syntax calls: a bug planted in `__setitem__` is reached by `c[k] = v`,
# which names nothing.
SYNTAX_METHODS = {
    ast.Store: "__setitem__",
    ast.Load: "__getitem__",
    ast.Del: "__delitem__",
    "len": "__len__",
    "iter": "__iter__",
    "repr": "__repr__",
    "str": "__str__",
    "hash": "__hash__",
    "bool": "__bool__",
}


def _names(node: ast.AST) -> list[str]:
    found: list[tuple[int, int, str]] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
            found.append((sub.lineno, sub.col_offset, sub.id))
        elif isinstance(sub, ast.Attribute):
            found.append((sub.end_lineno or sub.lineno, sub.end_col_offset or 0, sub.attr))
        implied = _syntax_method(sub)
        if implied and isinstance(sub, ast.expr):
            found.append((sub.lineno, sub.col_offset, implied))
    return [name for _, _, name in sorted(found)]


def _syntax_method(node: ast.AST) -> str | None:
    if isinstance(node, ast.Subscript):
        return SYNTAX_METHODS.get(type(node.ctx))
    if isinstance(node, ast.Compare) and any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops):
        return "__contains__"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return SYNTAX_METHODS.get(node.func.id)
    return None


def _parse(path: Path) -> ast.Module | None:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None
