"""What the tree-sitter mutators of Go, Java and Rust (mutate_go.py, mutate_java.py,
mutate_rust.py) share: the walk of each function's body, the edit of one line, the parse check,
and the rules that read the same in the three grammars (an operator swapped, a condition
negated). Each language gives its node types, which functions count, their names, and its own
rules for constants and boolean results.

mutate_js.py stays apart: it walks every child (not the named ones), edits by column, keeps
nested functions out of their parent's body, plants `variable` mutants and orders its mutants
by (line, new), so a mutant list of its own is what it gives today.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from mutate import Mutant  # type: ignore[import-not-found]
from tree_sitter import Node, Parser

COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
BINOP = {"+": "-", "-": "+"}
BOOLOP = {"&&": "||", "||": "&&"}

Edit = tuple[str, int, int, int, str]  # kind, line (1-based), start byte, end byte, replacement


def plant(
    source: str,
    *,
    path: str,
    parser: Parser,
    functions: Callable[[Node, bytes], Iterable[Node]],
    edits: Callable[[Node, bytes], Iterator[Edit]],
    name: Callable[[Node, bytes], str],
) -> list[Mutant]:
    """Every single-line mutant that `edits` finds in the bodies of `functions` of `source`'s
    tree, that still parses, one per (line, new text), in file order."""
    data = source.encode()
    tree = parser.parse(data)
    lines = source.splitlines()
    starts = _line_starts(data)
    found: dict[tuple[int, str], Mutant] = {}
    for func in functions(tree.root_node, data):
        body = func.child_by_field_name("body")
        if body is None:
            continue
        function = name(func, data)
        for kind, line, start, end, replacement in edits(body, data):
            old = lines[line - 1]
            raw = old.encode()
            column, stop = start - starts[line - 1], end - starts[line - 1]
            new = (raw[:column] + replacement.encode() + raw[stop:]).decode()
            if new == old or (line, new) in found:
                continue
            m = Mutant(path=path, line=line, old=old, new=new, kind=kind, function=function)
            if parses(parser, m.apply(source)):
                found[(line, new)] = m
    return sorted(found.values(), key=lambda m: (m.line, m.kind, m.new))


def parses(parser: Parser, source: str) -> bool:
    """True when `source` parses with no error and no missing token."""
    return not parser.parse(source.encode()).root_node.has_error


def swap_operator(node: Node, data: bytes, *, strings: set[str]) -> Edit | None:
    """A binary expression's one-line operator swapped: a comparison flipped, `+`/`-` (not
    between strings: that does not compile, not a realistic bug), `&&`/`||`."""
    op = node.child_by_field_name("operator")
    if op is None or op.start_point.row != op.end_point.row:
        return None
    symbol = text(op, data)
    sides = (node.child_by_field_name("left"), node.child_by_field_name("right"))
    stringy = any(side is not None and side.type in strings for side in sides)
    line = op.start_point.row + 1
    if symbol in COMPARE:
        return ("compare", line, op.start_byte, op.end_byte, COMPARE[symbol])
    if symbol in BINOP and not stringy:
        return ("binop", line, op.start_byte, op.end_byte, BINOP[symbol])
    if symbol in BOOLOP:
        return ("boolop", line, op.start_byte, op.end_byte, BOOLOP[symbol])
    return None


def negate(test: Node, operand: Node | None, data: bytes, *, line: int) -> Edit | None:
    """The condition `test` negated: `!(test)`, or, for a `!x` test whose operand is given, `x`
    (its parentheses dropped)."""
    if test.type == "unary_expression" and text(test, data).startswith("!"):
        if operand is not None and operand.type == "parenthesized_expression":
            operand = operand.named_children[0] if operand.named_children else None
        inner = text(operand, data)
        return ("negate", line, test.start_byte, test.end_byte, inner) if inner else None
    return ("negate", line, test.start_byte, test.end_byte, f"!({text(test, data)})")


def expressions(
    body: Node, *, skip: set[str], keep_out: Callable[[Node], bool] | None = None
) -> Iterator[Node]:
    """The named nodes of a body, those of a type in `skip` (strings, comments, types) and
    those `keep_out` names left out with all below them."""
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in skip or (keep_out is not None and keep_out(node)):
            continue
        yield node
        stack.extend(reversed(node.named_children))


def walk(node: Node) -> Iterator[Node]:
    """`node` and every named node below it, in source order."""
    stack = [node]
    while stack:
        here = stack.pop()
        yield here
        stack.extend(reversed(here.named_children))


def text(node: Node | None, data: bytes) -> str:
    """A node's source text ("" for none)."""
    return "" if node is None else data[node.start_byte : node.end_byte].decode()


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    for i, byte in enumerate(data):
        if byte == 0x0A:
            starts.append(i + 1)
    return starts
