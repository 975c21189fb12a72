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
from tree_sitter import Language, Node, Parser

COMPARE = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
BINOP = {"+": "-", "-": "+"}
BOOLOP = {"&&": "||", "||": "&&"}
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

Edit = tuple[str, int, int, int, str]  # kind, line (1-based), start byte, end byte, replacement


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
    data = source.encode()
    tree = _parser().parse(data)
    if tree.root_node.has_error:
        return []  # the grammar does not read the file as rustc does: nothing to trust
    lines = source.splitlines()
    starts = _line_starts(data)
    found: dict[tuple[int, str], Mutant] = {}
    for func in _functions(tree.root_node, data):
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


def _functions(root: Node, data: bytes) -> Iterator[Node]:
    """The `fn` items outside test code, outermost first (a nested one's mutants are its outer
    function's, found first)."""
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
        if sibling.type == "attribute_item" and _TEST_ATTRIBUTE.match(_text(sibling, data)):
            return True
        sibling = sibling.prev_named_sibling
    return False


def _edits(body: Node, data: bytes) -> Iterator[Edit]:
    for node in _expressions(body, data):
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
        elif node.type == "integer_literal" and (match := _INTEGER.match(_text(node, data))):
            parent = node.parent
            if parent is not None and parent.type == "field_expression":
                continue  # `pair.0`: a field's name, not a number
            yield ("off_by_one", row, node.start_byte, node.start_byte + 1,
                   str(int(match[1]) + 1))  # fmt: skip
        elif node.type == "if_expression":
            test = node.child_by_field_name("condition")
            if test is None or test.start_point.row != test.end_point.row:
                continue
            if test.type in ("let_condition", "let_chain"):
                continue  # `if let`: a pattern, not a condition to negate
            text = _text(test, data)
            if test.type == "unary_expression" and text.startswith("!"):
                operand = test.named_children[0] if test.named_children else None
                if operand is not None and operand.type == "parenthesized_expression":
                    operand = operand.named_children[0] if operand.named_children else None
                if operand is not None:
                    yield ("negate", row, test.start_byte, test.end_byte, _text(operand, data))
            else:
                yield ("negate", row, test.start_byte, test.end_byte, f"!({text})")
        elif node.type == "boolean_literal" and _is_result(node):
            flipped = "false" if _text(node, data) == "true" else "true"
            yield ("boolean", row, node.start_byte, node.end_byte, flipped)


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


def _expressions(body: Node, data: bytes) -> Iterator[Node]:
    """The nodes of a body, strings, comments, types, attributes, macros' token trees and test
    items left out."""
    stack = [body]
    while stack:
        node = stack.pop()
        if node.type in STRINGS or node.type in TYPES or node.type in OPAQUE:
            continue
        if _is_test_item(node, data):
            continue
        yield node
        stack.extend(reversed(node.named_children))


def _stringy(node: Node | None) -> bool:
    """`String + &str`: flipping its `+` does not compile, not a realistic bug."""
    return node is not None and node.type in ("string_literal", "raw_string_literal")


def _name(func: Node, data: bytes) -> str:
    """`Type.method` for a method of an `impl` block (its type without generics), the plain
    name for a free function."""
    name = _text(func.child_by_field_name("name"), data)
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
    return f"{_text(owner, data)}.{name}" if owner is not None else name


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
