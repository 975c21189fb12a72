"""Single realistic bugs planted in Java, the families of mutate.py on a real parser
(tree-sitter's Java grammar): a comparison flipped, `+`/`-` swapped, a constant off by one, a
condition negated, `&&`/`||` swapped, a boolean result flipped. Each is one line of one method's
or constructor's body (lambdas and anonymous classes in it included); strings, characters,
comments and types are never touched, and a mutant that no longer parses is dropped. Whether
it still compiles is the generator's to find out (generate_java.py keeps only mutants that make
some test fail by id).

    >>> src = ("class M {\\n  int f(int a, int b) {\\n    if (a < b) {\\n      return a + 1;\\n"
    ...     "    }\\n    return b;\\n  }\\n}\\n")
    >>> found = mutants(src, path="src/main/java/M.java")
    >>> sorted({m.kind for m in found})
    ['binop', 'compare', 'negate', 'off_by_one']
    >>> [m.new for m in found if m.kind in ("compare", "negate")]
    ['    if (a <= b) {', '    if (!(a < b)) {']

Test sources (src/test/, any `test` folder) are refused: `mutants` raises ValueError for a path
`is_test_path` names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

import tree_sitter_java
from mutate import Mutant  # type: ignore[import-not-found]
from tree_sitter import Language, Node, Parser

COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
BINOP = {"+": "-", "-": "+"}
BOOLOP = {"&&": "||", "||": "&&"}
FUNCTIONS = {"method_declaration", "constructor_declaration"}
STRINGS = {"string_literal", "character_literal", "line_comment", "block_comment"}
TYPES = {
    "type_identifier", "generic_type", "array_type", "scoped_type_identifier", "type_arguments",
    "formal_parameters", "integral_type", "floating_point_type", "boolean_type", "void_type",
    "annotation", "marker_annotation",
}  # fmt: skip
INTEGERS = {"decimal_integer_literal"}
_TEST_PATH = re.compile(r"(^|/)src/test/|(^|/)tests?/")

Edit = tuple[str, int, int, int, str]  # kind, line (1-based), start byte, end byte, replacement


def is_test_path(path: str) -> bool:
    """A test source, never mutated.

    >>> [is_test_path(p) for p in ("src/main/java/A.java", "src/test/java/ATest.java")]
    [False, True]
    """
    return bool(_TEST_PATH.search(path))


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_java.language()))


def mutants(source: str, *, path: str) -> list[Mutant]:
    """Every single-line mutant of the methods and constructors in `source` that still parses,
    in file order."""
    if is_test_path(path):
        raise ValueError(f"{path} is a test file: never mutated")
    data = source.encode()
    tree = _parser().parse(data)
    lines = source.splitlines()
    starts = _line_starts(data)
    found: dict[tuple[int, str], Mutant] = {}
    for func in _walk(tree.root_node):
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
        elif node.type in INTEGERS and _text(node, data) in ("0", "1", "2"):
            yield ("off_by_one", row, node.start_byte, node.end_byte,
                   str(int(_text(node, data)) + 1))  # fmt: skip
        elif node.type == "if_statement":
            test = node.child_by_field_name("condition")
            if test is None or test.start_point.row != test.end_point.row:
                continue
            inner = test.named_children[0] if test.named_children else None
            if inner is None:
                continue
            text = _text(inner, data)
            if inner.type == "unary_expression" and text.startswith("!"):
                operand = inner.child_by_field_name("operand")
                if operand is not None and operand.type == "parenthesized_expression":
                    operand = operand.named_children[0] if operand.named_children else None
                if operand is not None:
                    yield ("negate", row, inner.start_byte, inner.end_byte, _text(operand, data))
            else:
                yield ("negate", row, inner.start_byte, inner.end_byte, f"!({text})")
        elif node.type == "return_statement":
            values = node.named_children
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
    return node is not None and node.type in ("string_literal", "character_literal")


def _name(func: Node, data: bytes) -> str:
    """`Class.method`: the method's name after its nearest enclosing class's."""
    name = _text(func.child_by_field_name("name"), data)
    parent = func.parent
    while parent is not None and parent.type not in ("class_declaration", "enum_declaration",
                                                     "record_declaration"):  # fmt: skip
        parent = parent.parent
    owner = _text(parent.child_by_field_name("name"), data) if parent is not None else ""
    return f"{owner}.{name}" if owner else name


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
