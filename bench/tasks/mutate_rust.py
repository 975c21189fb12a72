"""Single realistic bugs planted in Rust, the families of mutate.py on a real parser
(tree-sitter's Rust grammar): a comparison flipped, `+`/`-` swapped, a small integer off by one,
an `if` condition negated, `&&`/`||` swapped, a returned or tail `true`/`false` flipped. Each is
one line of one `fn`'s body (methods of `impl` blocks and closures in it included); strings,
characters, comments, types, attributes and macros' token trees (`assert!(a < b)`,
`format!`) are never touched, nor test code: a `#[cfg(test)]` module, a `#[test]` function,
and tests/, benches/, examples/ and build.rs, which `mutants` refuses. A mutant that no longer
parses is dropped; whether it still compiles is the generator's to find out
(generate_rust.py keeps only mutants that make some test fail by id).

    >>> src = ("impl M {\\n    fn f(&self, a: u32, b: u32) -> u32 {\\n        if a < b {\\n"
    ...     "            return a + 1;\\n        }\\n        assert!(a < 2);\\n        b\\n"
    ...     "    }\\n}\\n#[cfg(test)]\\nmod tests {\\n    fn g() -> bool { 1 < 2 }\\n}\\n")
    >>> found = mutants(src, path="src/lib.rs")
    >>> sorted({m.kind for m in found}), {m.function for m in found}
    (['binop', 'compare', 'negate', 'off_by_one'], {'M.f'})
    >>> [m.new for m in found if m.kind in ("compare", "negate")]
    ['        if a <= b {', '        if !(a < b) {']
    >>> [m.line for m in found if m.line > 5]
    []
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

import tree_sitter_rust
from mutate import Mutant  # type: ignore[import-not-found]
from mutate_ts import Edit, expressions, negate, plant, swap_operator, text
from tree_sitter import Language, Node, Parser

STRINGS = {
    "string_literal", "raw_string_literal", "char_literal", "line_comment", "block_comment",
}  # fmt: skip
TYPES = {
    "type_identifier", "primitive_type", "generic_type", "scoped_type_identifier",
    "reference_type", "pointer_type", "array_type", "tuple_type", "function_type",
    "type_arguments", "type_parameters", "abstract_type", "dynamic_type", "bounded_type",
    "qualified_type", "unit_type", "never_type", "parameters", "closure_parameters",
}  # fmt: skip
OPAQUE = {"token_tree", "attribute_item", "inner_attribute_item", "macro_definition"}
_INTEGER = re.compile(r"^([012])((?:[ui](?:8|16|32|64|128|size))?)$")
_TEST_PATH = re.compile(r"(^|/)(tests|benches|examples)/|(^|/)build\.rs$")
_TEST_ATTRIBUTE = re.compile(r"^#\[\s*(?:test|bench|cfg\s*\(.*\btest\b.*\))\s*\]$", re.S)


def is_test_path(path: str) -> bool:
    """A test, bench or example target, or a build script: never mutated.

    >>> [is_test_path(p) for p in ("src/lib.rs", "tests/it.rs", "core/benches/b.rs",
    ...                            "examples/demo.rs", "build.rs")]
    [False, True, True, True, True]
    """
    return bool(_TEST_PATH.search(path))


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_rust.language()))


def mutants(source: str, *, path: str) -> list[Mutant]:
    """Every single-line mutant of the functions in `source` that still parses, in file order."""
    if is_test_path(path):
        raise ValueError(f"{path} is a test file: never mutated")
    return plant(source, path=path, parser=_parser(), functions=_functions, edits=_edits,
                 name=_name)  # fmt: skip


def _functions(root: Node, data: bytes) -> Iterator[Node]:
    """The `fn` items outside test code, outermost first (a nested one's mutants are its outer
    function's, found first); none where the file does not parse."""
    if root.has_error:
        return  # the grammar does not read the file as rustc does: nothing to trust
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in OPAQUE or _is_test_item(node, data):
            continue
        if node.type == "function_item":
            yield node
        stack.extend(reversed(node.named_children))


def _is_test_item(node: Node, data: bytes) -> bool:
    """An item under `#[test]`, `#[bench]` or a `#[cfg(...test...)]` (`cfg(not(test))` too:
    never mutated, a harmless loss): its attributes are the siblings before it."""
    sibling = node.prev_named_sibling
    while sibling is not None and sibling.type in ("attribute_item", "line_comment",
                                                   "block_comment"):  # fmt: skip
        if sibling.type == "attribute_item" and _TEST_ATTRIBUTE.match(text(sibling, data)):
            return True
        sibling = sibling.prev_named_sibling
    return False


def _edits(body: Node, data: bytes) -> Iterator[Edit]:
    skip = STRINGS | TYPES | OPAQUE
    for node in expressions(body, skip=skip, keep_out=lambda n: _is_test_item(n, data)):
        row = node.start_point.row + 1
        edit: Edit | None = None
        if node.type == "binary_expression":
            edit = swap_operator(node, data, strings={"string_literal", "raw_string_literal"})
        elif node.type == "integer_literal" and (match := _INTEGER.match(text(node, data))):
            parent = node.parent
            if parent is not None and parent.type == "field_expression":
                continue  # `pair.0`: a field's name, not a number
            edit = ("off_by_one", row, node.start_byte, node.start_byte + 1,
                    str(int(match[1]) + 1))  # fmt: skip
        elif node.type == "if_expression":
            test = node.child_by_field_name("condition")
            one_line = test is not None and test.start_point.row == test.end_point.row
            # `if let`: a pattern, not a condition to negate
            if test is not None and one_line and test.type not in ("let_condition", "let_chain"):
                operand = test.named_children[0] if test.named_children else None
                edit = negate(test, operand, data, line=row)
        elif node.type == "boolean_literal" and _is_result(node):
            flipped = "false" if text(node, data) == "true" else "true"
            edit = ("boolean", row, node.start_byte, node.end_byte, flipped)
        if edit is not None:
            yield edit


def _is_result(node: Node) -> bool:
    """A value the function or a block hands back: `return true`, a block's tail expression,
    a `match` arm's value."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "return_expression":
        return True
    if parent.type == "match_arm":
        return parent.child_by_field_name("value") == node
    return parent.type == "block" and parent.named_children[-1] == node


def _name(func: Node, data: bytes) -> str:
    """`Type.method` for a method of an `impl` block (its type without generics), the plain
    name for a free function."""
    name = text(func.child_by_field_name("name"), data)
    parent = func.parent
    while parent is not None and parent.type not in ("impl_item", "function_item"):
        parent = parent.parent
    if parent is None or parent.type != "impl_item":
        return name
    owner = parent.child_by_field_name("type")
    while owner is not None and owner.type in ("generic_type", "scoped_type_identifier"):
        inner = owner.child_by_field_name("type") or owner.child_by_field_name("name")
        if inner is None:
            break
        owner = inner
    return f"{text(owner, data)}.{name}" if owner is not None else name
