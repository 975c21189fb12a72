"""Which statement a line of a Python file belongs to, by Python's own `ast`: the first line of a
`return` or `raise` that holds a line, where the search adds a line before it
(`Ecosystem.ending_statement`; worker/search/moves.py). The tree-sitter languages answer the
same question in sandbox/source/statements.py."""

from __future__ import annotations

import ast


def ending_statement(data: bytes, line: int) -> int | None:
    """The first line of the innermost statement holding line `line` where it is a `return` or
    a `raise` that starts its own line (`if x: return y` has none of its own); else None, or
    when the file does not parse."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: tuple[int, ast.stmt] | None = None  # (depth, statement): the deepest holding `line`
    stack: list[tuple[int, ast.AST]] = [(0, tree)]
    while stack:
        depth, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.stmt):
                stack.append((depth, child))  # a handler, a match case: its body's statements
                continue
            if child.lineno <= line <= (child.end_lineno or child.lineno):
                if found is None or depth + 1 > found[0]:
                    found = (depth + 1, child)
                stack.append((depth + 1, child))
    if found is None or not isinstance(found[1], ast.Return | ast.Raise):
        return None
    statement = found[1]
    lines = data.decode("utf-8", "replace").splitlines()
    first = lines[statement.lineno - 1] if statement.lineno <= len(lines) else ""
    own = len(first) - len(first.lstrip())
    return statement.lineno if statement.col_offset == own else None
