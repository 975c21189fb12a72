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
from collections.abc import Iterable, Iterator
from functools import cache

import tree_sitter_java
from mutate import Mutant  # type: ignore[import-not-found]
from mutate_ts import Edit, expressions, negate, plant, swap_operator, text, walk
from tree_sitter import Language, Node, Parser

FUNCTIONS = {"method_declaration", "constructor_declaration"}
STRINGS = {"string_literal", "character_literal", "line_comment", "block_comment"}
TYPES = {
    "type_identifier", "generic_type", "array_type", "scoped_type_identifier", "type_arguments",
    "formal_parameters", "integral_type", "floating_point_type", "boolean_type", "void_type",
    "annotation", "marker_annotation",
}  # fmt: skip
INTEGERS = {"decimal_integer_literal"}
_TEST_PATH = re.compile(r"(^|/)src/test/|(^|/)tests?/")


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
    return plant(source, path=path, parser=_parser(), functions=_functions, edits=_edits,
                 name=_name)  # fmt: skip


def _functions(root: Node, data: bytes) -> Iterable[Node]:
    """Every method and constructor, those of nested and anonymous classes too."""
    return (node for node in walk(root) if node.type in FUNCTIONS)


def _edits(body: Node, data: bytes) -> Iterator[Edit]:
    for node in expressions(body, skip=STRINGS | TYPES):
        row = node.start_point.row + 1
        edit: Edit | None = None
        if node.type == "binary_expression":
            edit = swap_operator(node, data, strings={"string_literal", "character_literal"})
        elif node.type in INTEGERS and text(node, data) in ("0", "1", "2"):
            edit = ("off_by_one", row, node.start_byte, node.end_byte,
                    str(int(text(node, data)) + 1))  # fmt: skip
        elif node.type == "if_statement":
            test = node.child_by_field_name("condition")  # `(...)`: its one child is the test
            if test is not None and test.start_point.row == test.end_point.row:
                inner = test.named_children[0] if test.named_children else None
                if inner is not None:
                    edit = negate(inner, inner.child_by_field_name("operand"), data, line=row)
        elif node.type == "return_statement":
            values = node.named_children
            if len(values) == 1 and values[0].type in ("true", "false"):
                flipped = "false" if values[0].type == "true" else "true"
                edit = ("boolean", row, values[0].start_byte, values[0].end_byte, flipped)
        if edit is not None:
            yield edit


def _name(func: Node, data: bytes) -> str:
    """`Class.method`: the method's name after its nearest enclosing class's."""
    name = text(func.child_by_field_name("name"), data)
    parent = func.parent
    while parent is not None and parent.type not in ("class_declaration", "enum_declaration",
                                                     "record_declaration"):  # fmt: skip
        parent = parent.parent
    owner = text(parent.child_by_field_name("name"), data) if parent is not None else ""
    return f"{owner}.{name}" if owner else name
