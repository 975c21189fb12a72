"""A file's syntax as a tree-sitter grammar reads it: the first error, and its code as tokens
(comments and layout set aside), for the languages whose packages parse with tree-sitter. The
edit tools refuse an edit that breaks a file that parsed before, and one that changes no code
(sandbox/ecosystems/base.py: `syntax_error`, `same_code`); Python's own parser does the same for
`.py` files."""

from __future__ import annotations

from collections.abc import Iterator

import tree_sitter

from sandbox.source.treesitter import ParsedFile

MAX_TOKENS = 200_000  # leaves compared of one file, at most; past it the edit counts as code


def first_error(tree: tree_sitter.Tree, data: bytes, *, name: str) -> str | None:
    """`SyntaxError at path:line:col: ...` for the first ERROR or MISSING node, or None."""
    if not tree.root_node.has_error:
        return None
    for node in _walk(tree.root_node):
        if node.is_missing or node.type == "ERROR":
            row, col = node.start_point
            lines = data.splitlines()
            line = lines[row].decode("utf-8", "replace") if row < len(lines) else ""
            what = f"missing `{node.type}`" if node.is_missing else "unexpected text"
            code = f"\n    {line.rstrip()}" if line.strip() else ""
            return f"SyntaxError at {name}:{row + 1}:{col + 1}: {what}{code}"
    return f"SyntaxError in {name}"


def code_tokens(tree: tree_sitter.Tree, data: bytes) -> list[tuple[str, bytes]] | None:
    """The file's leaves, comments left out: two files with the same list differ in layout
    and comments alone. None for a file too large to compare."""
    out: list[tuple[str, bytes]] = []
    for node in _walk(tree.root_node):
        if node.child_count == 0 and "comment" not in node.type:
            out.append((node.type, data[node.start_byte : node.end_byte]))
            if len(out) > MAX_TOKENS:
                return None
    return out


def syntax_error_of(parsed: ParsedFile | None, *, name: str) -> str | None:
    """`first_error` of a parsed file; None when it parsed clean or could not be parsed."""
    return first_error(parsed.tree, parsed.data, name=name) if parsed is not None else None


def same_code_of(one: ParsedFile | None, two: ParsedFile | None) -> bool:
    """Whether two parses of a file both parsed clean and differ in layout and comments
    alone (the same `code_tokens`)."""
    if one is None or two is None or one.root.has_error or two.root.has_error:
        return False
    tokens = code_tokens(one.tree, one.data)
    return tokens is not None and tokens == code_tokens(two.tree, two.data)


def _walk(root: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every node, in document order, without recursion."""
    cursor = root.walk()
    while True:
        node = cursor.node
        assert node is not None
        yield node
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while True:
            if not cursor.goto_parent():
                return
            if cursor.goto_next_sibling():
                break
