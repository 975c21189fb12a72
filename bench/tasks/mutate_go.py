"""Single realistic bugs planted in Go, the families of mutate.py on a real parser (tree-sitter's
Go grammar): a comparison flipped, `+`/`-` swapped, a constant off by one, a condition negated,
`&&`/`||` swapped, a boolean result flipped. Each is one line of one function's or method's body
(closures in it included); strings, runes, comments and types are never touched, and a mutant
that no longer parses is dropped. Whether it still compiles is the generator's to find out
(generate_go.py keeps only mutants that make some test fail by id).

    >>> src = ("package m\\n\\nfunc f(a, b int) int {\\n\\tif a < b {\\n\\t\\treturn a + 1\\n"
    ...     "\\t}\\n\\treturn b\\n}\\n")
    >>> sorted({m.kind for m in mutants(src, path="m.go")})
    ['binop', 'compare', 'negate', 'off_by_one']
    >>> [m.new for m in mutants(src, path="m.go") if m.kind in ("compare", "negate")]
    ['\\tif a <= b {', '\\tif !(a < b) {']

Test files, testdata/ and vendor/ are refused: `mutants` raises ValueError for a path
`is_test_path` names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

import tree_sitter_go
from mutate import Mutant  # type: ignore[import-not-found]
from tree_sitter import Language, Node, Parser

COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
BINOP = {"+": "-", "-": "+"}
BOOLOP = {"&&": "||", "||": "&&"}
FUNCTIONS = {"function_declaration", "method_declaration"}
STRINGS = {"interpreted_string_literal", "raw_string_literal", "rune_literal", "comment"}
# Where the code stops and the types begin: nothing under these is an expression.
TYPES = {
    "array_type", "slice_type", "map_type", "pointer_type", "struct_type", "interface_type",
    "function_type", "channel_type", "type_identifier", "qualified_type", "generic_type",
    "type_arguments", "parameter_list", "type_parameter_list",
}  # fmt: skip
_TEST_PATH = re.compile(r"(^|/)(testdata|vendor)/|_test\.go$")

Edit = tuple[str, int, int, int, str]  # kind, line (1-based), start byte, end byte, replacement


def is_test_path(path: str) -> bool:
    """A test file, test data or a vendored module, never mutated.

    >>> [is_test_path(p) for p in ("a/b.go", "a/b_test.go", "a/testdata/x.go", "vendor/m/x.go")]
    [False, True, True, True]
    """
    return bool(_TEST_PATH.search(path))


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_go.language()))


def mutants(source: str, *, path: str) -> list[Mutant]:
    """Every single-line mutant of the functions and methods in `source` that still parses, in
    file order."""
    if is_test_path(path):
        raise ValueError(f"{path} is a test file: never mutated")
    data = source.encode()
    tree = _parser().parse(data)
    lines = source.splitlines()
    starts = _line_starts(data)
    found: dict[tuple[int, str], Mutant] = {}
    for func in tree.root_node.named_children:
        if func.type not in FUNCTIONS:
            continue
        body = func.child_by_field_name("body")
        if body is None:
            continue
        name = _name(func, data)
        for kind, line, start, end, text in _edits(body, data):
            old = lines[line - 1]
            raw = old.encode()
            column, stop = start - starts[line - 1], end - starts[line - 1]
            new = (raw[:column] + text.encode() + raw[stop:]).decode()
            if new == old or (line, new) in found:
                continue
            m = Mutant(path=path, line=line, old=old, new=new, kind=kind, function=name)
            if _parses(m.apply(source)):
                found[(line, new)] = m
    return sorted(found.values(), key=lambda m: (m.line, m.kind, m.new))


def _edits(body: Node, data: bytes) -> Iterator[Edit]:
    for node in _expressions(body):
        row = node.start_point.row + 1
        if node.type == "binary_expression":
            op = node.child_by_field_name("operator")
            if op is None or op.start_point.row != op.end_point.row:
                continue
            symbol = _text(op, data)
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if symbol in COMPARE:
                yield ("compare", op.start_point.row + 1, op.start_byte, op.end_byte,
                       COMPARE[symbol])  # fmt: skip
            elif symbol in BINOP and not any(_stringy(side) for side in (left, right)):
                yield ("binop", op.start_point.row + 1, op.start_byte, op.end_byte,
                       BINOP[symbol])  # fmt: skip
            elif symbol in BOOLOP:
                yield ("boolop", op.start_point.row + 1, op.start_byte, op.end_byte,
                       BOOLOP[symbol])  # fmt: skip
        elif node.type == "int_literal" and _text(node, data) in ("0", "1", "2"):
            yield ("off_by_one", row, node.start_byte, node.end_byte,
                   str(int(_text(node, data)) + 1))  # fmt: skip
        elif node.type == "if_statement":
            test = node.child_by_field_name("condition")
            if test is None or test.start_point.row != test.end_point.row:
                continue
            if test.type == "unary_expression" and _text(test, data).startswith("!"):
                operand = test.child_by_field_name("operand")
                if operand is not None and operand.type == "parenthesized_expression":
                    operand = operand.named_children[0] if operand.named_children else None
                inner = _text(operand, data) if operand is not None else ""
                if inner:
                    yield ("negate", test.start_point.row + 1, test.start_byte, test.end_byte,
                           inner)  # fmt: skip
            else:
                yield ("negate", test.start_point.row + 1, test.start_byte, test.end_byte,
                       f"!({_text(test, data)})")  # fmt: skip
        elif node.type == "return_statement":
            values = node.named_children[0].named_children if node.named_children else []
            if len(values) == 1 and values[0].type in ("true", "false"):
                flipped = "false" if values[0].type == "true" else "true"
                yield ("boolean", row, values[0].start_byte, values[0].end_byte, flipped)


def _expressions(body: Node) -> Iterator[Node]:
    """The nodes of a body, strings, comments and types left out."""
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in STRINGS or node.type in TYPES:
            continue
        yield node
        stack.extend(reversed(node.named_children))


def _stringy(node: Node | None) -> bool:
    """String concatenation: flipping its `+` does not compile, not a realistic bug."""
    return node is not None and node.type in ("interpreted_string_literal", "raw_string_literal")


def _name(func: Node, data: bytes) -> str:
    name = _text(func.child_by_field_name("name"), data)
    receiver = func.child_by_field_name("receiver")
    if receiver is None:
        return name
    types = [n for n in _walk(receiver) if n.type == "type_identifier"]
    return f"{_text(types[0], data)}.{name}" if types else name


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        here = stack.pop()
        yield here
        stack.extend(reversed(here.named_children))


def _text(node: Node | None, data: bytes) -> str:
    return "" if node is None else data[node.start_byte : node.end_byte].decode()


def _line_starts(data: bytes) -> list[int]:
    starts = [0]
    for i, byte in enumerate(data):
        if byte == 0x0A:
            starts.append(i + 1)
    return starts


def _parses(source: str) -> bool:
    return not _parser().parse(source.encode()).root_node.has_error
