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
from collections.abc import Iterable, Iterator
from functools import cache

import tree_sitter_go
from mutate import Mutant  # type: ignore[import-not-found]
from mutate_ts import Edit, expressions, negate, plant, swap_operator, text, walk
from tree_sitter import Language, Node, Parser

FUNCTIONS = {"function_declaration", "method_declaration"}
STRINGS = {"interpreted_string_literal", "raw_string_literal", "rune_literal", "comment"}
# Where the code stops and the types begin: nothing under these is an expression.
TYPES = {
    "array_type", "slice_type", "map_type", "pointer_type", "struct_type", "interface_type",
    "function_type", "channel_type", "type_identifier", "qualified_type", "generic_type",
    "type_arguments", "parameter_list", "type_parameter_list",
}  # fmt: skip
_TEST_PATH = re.compile(r"(^|/)(testdata|vendor)/|_test\.go$")


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
    return plant(source, path=path, parser=_parser(), functions=_functions, edits=_edits,
                 name=_name)  # fmt: skip


def _functions(root: Node, data: bytes) -> Iterable[Node]:
    """The top-level functions and methods (a closure's mutants are its function's)."""
    return [node for node in root.named_children if node.type in FUNCTIONS]


def _edits(body: Node, data: bytes) -> Iterator[Edit]:
    for node in expressions(body, skip=STRINGS | TYPES):
        row = node.start_point.row + 1
        edit: Edit | None = None
        if node.type == "binary_expression":
            edit = swap_operator(node, data, strings={"interpreted_string_literal",
                                                      "raw_string_literal"})  # fmt: skip
        elif node.type == "int_literal" and text(node, data) in ("0", "1", "2"):
            edit = ("off_by_one", row, node.start_byte, node.end_byte,
                    str(int(text(node, data)) + 1))  # fmt: skip
        elif node.type == "if_statement":
            test = node.child_by_field_name("condition")
            if test is not None and test.start_point.row == test.end_point.row:
                operand = test.child_by_field_name("operand")
                edit = negate(test, operand, data, line=test.start_point.row + 1)
        elif node.type == "return_statement":
            values = node.named_children[0].named_children if node.named_children else []
            if len(values) == 1 and values[0].type in ("true", "false"):
                flipped = "false" if values[0].type == "true" else "true"
                edit = ("boolean", row, values[0].start_byte, values[0].end_byte, flipped)
        if edit is not None:
            yield edit


def _name(func: Node, data: bytes) -> str:
    name = text(func.child_by_field_name("name"), data)
    receiver = func.child_by_field_name("receiver")
    if receiver is None:
        return name
    types = [n for n in walk(receiver) if n.type == "type_identifier"]
    return f"{text(types[0], data)}.{name}" if types else name
