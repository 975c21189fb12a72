"""Single realistic bugs planted by AST mutation, each on one line of one function: an operator
flipped, a bound off by one, a condition negated, a wrong variable, a boolean result flipped.

    >>> src = "def f(a, b):\\n    if a < b:\\n        return a + 1\\n    return b\\n"
    >>> sorted({m.kind for m in mutants(src, path="m.py")})
    ['binop', 'compare', 'negate', 'off_by_one', 'variable']
    >>> [m.new for m in mutants(src, path="m.py") if m.kind == "compare"]
    ['    if a <= b:']
"""

from __future__ import annotations

import ast
import random
from collections.abc import Iterator
from dataclasses import dataclass

COMPARE = {
    ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"), ast.Gt: (">", ">="), ast.GtE: (">=", ">"),
    ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.In: ("in", "not in"),
    ast.NotIn: ("not in", "in"), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
}  # fmt: skip
BINOP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.FloorDiv: ("//", "/")}
BOOLOP = {ast.And: ("and", "or"), ast.Or: ("or", "and")}


@dataclass(frozen=True, kw_only=True)
class Mutant:
    """One planted bug: `old` (the line as it was) becomes `new` at `line` (1-based) of `path`."""

    path: str
    line: int
    old: str
    new: str
    kind: str
    function: str

    def apply(self, source: str) -> str:
        lines = source.splitlines(keepends=True)
        ending = lines[self.line - 1][len(self.old) :]
        lines[self.line - 1] = self.new + ending
        return "".join(lines)


def mutants(source: str, *, path: str) -> list[Mutant]:
    """Every single-line mutant of the functions in `source` that still parses, in file order."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found: dict[tuple[int, str], Mutant] = {}
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in (*func.args.posonlyargs, *func.args.args) if a.arg != "self"]
        for node in _own_nodes(func):
            for kind, line, start, end, text in _edits(node, lines, params):
                old = lines[line - 1]
                raw = old.encode()
                new = (raw[:start] + text.encode() + raw[end:]).decode()
                if new == old or (line, new) in found:
                    continue
                candidate = Mutant(
                    path=path, line=line, old=old, new=new, kind=kind, function=func.name
                )
                try:
                    ast.parse(candidate.apply(source))
                except SyntaxError:
                    continue
                found[(line, new)] = candidate
    return sorted(found.values(), key=lambda m: (m.line, m.new))


def balanced(pool: list[Mutant], rng: random.Random) -> list[Mutant]:
    """`pool` shuffled by `rng` within each kind, then taken one kind after another, so that the
    first mutants tried are spread over the kinds."""
    by_kind: dict[str, list[Mutant]] = {}
    for m in pool:
        by_kind.setdefault(m.kind, []).append(m)
    for group in by_kind.values():
        rng.shuffle(group)
    order: list[Mutant] = []
    while any(by_kind.values()):
        for kind in sorted(by_kind):
            if by_kind[kind]:
                order.append(by_kind[kind].pop())
    return order


def _own_nodes(func: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions nested in it."""
    stack: list[ast.AST] = list(getattr(func, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


Edit = tuple[str, int, int, int, str]  # kind, line, start byte, end byte, replacement


def _edits(node: ast.AST, lines: list[str], params: list[str]) -> Iterator[Edit]:
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        pair = COMPARE.get(type(node.ops[0]))
        if pair:
            yield from _operator("compare", node.left, node.comparators[0], pair, lines)
    elif isinstance(node, ast.BinOp) and type(node.op) in BINOP and not _text(node):
        yield from _operator("binop", node.left, node.right, BINOP[type(node.op)], lines)
    elif isinstance(node, ast.BoolOp) and len(node.values) == 2:
        yield from _operator("boolop", node.values[0], node.values[1], BOOLOP[type(node.op)], lines)
    elif isinstance(node, (ast.If, ast.While, ast.IfExp)) and _one_line(node.test):
        test = node.test
        seg = _segment(test, lines)
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = _segment(test.operand, lines)
            yield ("negate", test.lineno, test.col_offset, _end(test), inner)
        elif seg is not None:
            yield ("negate", test.lineno, test.col_offset, _end(test), f"not ({seg})")
    elif isinstance(node, ast.Constant) and type(node.value) is int and 0 <= node.value <= 2:
        if _one_line(node):
            text = str(node.value + 1)
            yield ("off_by_one", node.lineno, node.col_offset, _end(node), text)
    elif isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
        if type(node.value.value) is bool:
            flipped = str(not node.value.value)
            yield ("boolean", node.lineno, node.value.col_offset, _end(node.value), flipped)
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in params:
        other = next((p for p in params if p != node.id), None)
        if other is not None:
            yield ("variable", node.lineno, node.col_offset, _end(node), other)


def _operator(
    kind: str, left: ast.AST, right: ast.AST, pair: tuple[str, str], lines: list[str]
) -> Iterator[Edit]:
    """Replace the operator between two operands on one line, when the gap holds only it."""
    if not (_one_line(left) and _one_line(right)) or left.end_lineno != right.lineno:  # type: ignore[attr-defined]
        return
    raw = lines[right.lineno - 1].encode()  # type: ignore[attr-defined]
    start, end = _end(left), right.col_offset  # type: ignore[attr-defined]
    gap = raw[start:end].decode(errors="replace")
    if " ".join(gap.split()) != pair[0]:
        return
    yield (kind, right.lineno, start, end, gap.replace(gap.strip(), pair[1]))  # type: ignore[attr-defined]


def _text(node: ast.BinOp) -> bool:
    """String concatenation: flipping its `+` is a TypeError, not a realistic bug."""
    return any(
        isinstance(side, ast.JoinedStr)
        or (isinstance(side, ast.Constant) and isinstance(side.value, str))
        for side in (node.left, node.right)
    )


def _one_line(node: ast.AST) -> bool:
    return getattr(node, "lineno", None) is not None and node.lineno == node.end_lineno  # type: ignore[attr-defined]


def _end(node: ast.AST) -> int:
    return int(node.end_col_offset)  # type: ignore[attr-defined]


def _segment(node: ast.AST, lines: list[str]) -> str | None:
    if not _one_line(node):
        return None
    raw = lines[node.lineno - 1].encode()  # type: ignore[attr-defined]
    return raw[node.col_offset : _end(node)].decode()  # type: ignore[attr-defined]
