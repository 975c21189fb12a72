"""Which statement a line of a file belongs to, as a tree-sitter grammar reads it: what the
languages that parse with tree-sitter share for `Ecosystem.ending_statement` (the search adds a
line before a `return`: worker/search/moves.py). Python's answer is its own `ast`'s
(sandbox/ecosystems/python/statements.py).

A statement is the node a block holds directly (`{ ... }`'s children; Go's `statement_list`'s).
A line is taken at its first non-blank column, so the statement is the one the line starts, or
the one it continues (the second line of a `return f(\\n  x)`); a nested function's statements
are their own (the `foo();` inside a callback passed by a `return` is not the `return`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

import tree_sitter

from sandbox.source.treesitter import ParsedFile


def statement_at(
    parsed: ParsedFile | None, line: int, *, blocks: Collection[str]
) -> tree_sitter.Node | None:
    """The statement (a direct child of a node of a type in `blocks`) that line `line` (1-based)
    starts or continues; None for a blank line, a line outside any block, a statement that does
    not start its own line (`if (x) return y;` has no `return` of its own line), or no parse."""
    if parsed is None:
        return None
    lines = parsed.data.split(b"\n")
    if not 0 < line <= len(lines) or not lines[line - 1].strip():
        return None
    text = lines[line - 1]
    column = len(text) - len(text.lstrip())
    node: tree_sitter.Node | None = parsed.root.named_descendant_for_point_range(
        (line - 1, column), (line - 1, column)
    )
    while node is not None and (node.parent is None or node.parent.type not in blocks):
        node = node.parent
    if node is None:
        return None
    row, col = node.start_point
    first = lines[row]
    return node if col == len(first) - len(first.lstrip()) else None


def ending_line(
    parsed: ParsedFile | None,
    line: int,
    *,
    blocks: Collection[str],
    ends: Callable[[tree_sitter.Node, ParsedFile], bool],
) -> int | None:
    """The first line (1-based) of the statement holding line `line` where `ends` says that
    statement ends its function's run (a `return`, a `throw`); None where it does not."""
    node = statement_at(parsed, line, blocks=blocks)
    if node is None or parsed is None or not ends(node, parsed):
        return None
    return node.start_point[0] + 1


def last_statement(node: tree_sitter.Node) -> bool:
    """Whether `node` is the last statement of its block, comments aside."""
    parent = node.parent
    if parent is None:
        return False
    rest = [c for c in parent.named_children if "comment" not in c.type]
    return bool(rest) and rest[-1].id == node.id
