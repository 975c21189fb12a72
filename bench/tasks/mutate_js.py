"""Single realistic bugs planted in JavaScript and TypeScript, the families of mutate.py on a real
parser (tree-sitter): a comparison flipped, `+`/`-` swapped, a constant off by one, a condition
negated, `&&`/`||` swapped, a boolean result flipped, a parameter replaced. Each is one line of
one function's body; strings, template text, comments, regular expressions and type annotations
are never touched, and a mutant that no longer parses is dropped.

    >>> src = "function f(a, b) {\\n  if (a < b) return a + 1;\\n  return b;\\n}\\n"
    >>> sorted({m.kind for m in mutants(src, path="m.js")})
    ['binop', 'compare', 'negate', 'off_by_one', 'variable']
    >>> [m.new for m in mutants(src, path="m.js") if m.kind == "compare"]
    ['  if (a <= b) return a + 1;']

Test files are refused: `mutants` raises ValueError for a path `is_test_path` names.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from pathlib import PurePosixPath

from mutate import Mutant  # type: ignore[import-not-found]
from tree_sitter import Language, Node, Parser

COMPARE = {
    "<": "<=", "<=": "<", ">": ">=", ">=": ">",
    "===": "!==", "!==": "===", "==": "!=", "!=": "==",
}  # fmt: skip
BINOP = {"+": "-", "-": "+"}
BOOLOP = {"&&": "||", "||": "&&"}
FUNCTIONS = {
    "function_declaration", "function_expression", "function", "generator_function_declaration",
    "generator_function", "arrow_function", "method_definition",
}  # fmt: skip
# Where the code stops and the types begin: nothing under these is an expression.
TYPES = {
    "type_annotation", "type_arguments", "type_parameters", "type_alias_declaration",
    "interface_declaration", "type_predicate_annotation", "asserts_annotation", "type_identifier",
    "abstract_class_declaration", "ambient_declaration", "opt_type_annotation",
}  # fmt: skip
STRINGS = {"string", "template_string", "regex", "comment", "jsx_text"}
# An identifier in one of these places declares or assigns a name, it does not read one.
BINDING_PARENTS = {
    "variable_declarator", "formal_parameters", "required_parameter", "optional_parameter",
    "assignment_pattern", "object_pattern", "array_pattern", "rest_pattern", "pair_pattern",
    "catch_clause", "function_declaration", "function_expression", "class_declaration",
    "import_specifier", "export_specifier", "labeled_statement", "break_statement",
    "continue_statement", "update_expression",
}  # fmt: skip
SIMPLE = {"identifier", "member_expression", "call_expression", "subscript_expression",
          "parenthesized_expression", "this", "true", "false"}  # fmt: skip
SUFFIXES = {
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
}  # fmt: skip
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|__mocks__|spec|fixtures?)/|[._-](test|spec|bench)\.[cm]?[jt]sx?$"
)

Edit = tuple[str, int, int, int, str]  # kind, line (1-based), start byte, end byte, replacement


def is_test_path(path: str) -> bool:
    """A test file or a file of the tests' folders, never mutated.

    >>> [is_test_path(p) for p in ("src/a.ts", "tests/a.ts", "a.test.js", "src/__tests__/b.js")]
    [False, True, True, True]
    """
    return bool(_TEST_PATH.search(PurePosixPath(path).as_posix()))


@cache
def _parser(language: str) -> Parser:
    if language == "javascript":
        import tree_sitter_javascript as grammar

        return Parser(Language(grammar.language()))
    import tree_sitter_typescript as grammars

    made = grammars.language_tsx() if language == "tsx" else grammars.language_typescript()
    return Parser(Language(made))


def language_of(path: str) -> str:
    """The grammar a file is parsed with, by its suffix (ValueError for any other)."""
    language = SUFFIXES.get(PurePosixPath(path).suffix)
    if language is None:
        raise ValueError(f"{path}: not a JavaScript or TypeScript file")
    return language


def parses(source: str, *, path: str) -> bool:
    """True when `source` parses with no error and no missing token."""
    return not _parser(language_of(path)).parse(source.encode()).root_node.has_error


def mutants(source: str, *, path: str) -> list[Mutant]:
    """Every single-line mutant of the functions in `source` that still parses, in file order."""
    if is_test_path(path):
        raise ValueError(f"{path}: a test file is not mutated")
    language = language_of(path)
    raw = source.encode()
    tree = _parser(language).parse(raw)
    if tree.root_node.has_error:
        raise ValueError(f"{path}: does not parse as {language}")
    lines = source.splitlines()
    found: dict[tuple[int, str], Mutant] = {}
    for func in _functions(tree.root_node):
        params = _params(func)
        for node in _own_nodes(func):
            for kind, line, start, end, text in _edits(node, params):
                old = lines[line - 1]
                old_raw = old.encode()
                new = (old_raw[:start] + text.encode() + old_raw[end:]).decode()
                if new == old or (line, new) in found:
                    continue
                candidate = Mutant(
                    path=path, line=line, old=old, new=new, kind=kind, function=_name(func)
                )
                if parses(candidate.apply(source), path=path):
                    found[(line, new)] = candidate
    return sorted(found.values(), key=lambda m: (m.line, m.new))


def _functions(root: Node) -> Iterator[Node]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in FUNCTIONS and node.child_by_field_name("body") is not None:
            yield node
        if node.type not in TYPES:
            stack.extend(node.children)


def _own_nodes(func: Node) -> Iterator[Node]:
    """The nodes of a function's body, not those of functions nested in it, nor of types."""
    body = func.child_by_field_name("body")
    stack: list[Node] = [body] if body is not None else []
    while stack:
        node = stack.pop()
        if node.type in FUNCTIONS or node.type in TYPES or node.type in STRINGS:
            continue
        if node.type.endswith("_type") or node.type == "class_declaration":
            continue
        yield node
        stack.extend(node.children)


def _params(func: Node) -> list[str]:
    """The names of a function's plain parameters (`a`, `b = 1`, `c?: T`), in order."""
    params = func.child_by_field_name("parameters") or func.child_by_field_name("parameter")
    if params is None:
        return []
    if params.type == "identifier":  # `x => ...`
        return [_text(params)]
    names = []
    for child in params.named_children:
        node = child
        if node.type in ("required_parameter", "optional_parameter"):
            node = node.child_by_field_name("pattern") or node
        if node.type == "assignment_pattern":
            node = node.child_by_field_name("left") or node
        if node.type == "identifier" and _text(node) != "this":
            names.append(_text(node))
    return names


def _name(func: Node) -> str:
    """The function's name: its own, its method's, or the variable or property it is assigned
    to; for a callback, the name of the function around it."""
    node: Node | None = func
    while node is not None:
        if node.type in FUNCTIONS:
            named = node.child_by_field_name("name")
            if named is not None:
                return _text(named)
            parent = node.parent
            if parent is not None and parent.type in ("variable_declarator", "pair"):
                key = parent.child_by_field_name("name") or parent.child_by_field_name("key")
                if key is not None:
                    return _text(key).strip("'\"")
            if parent is not None and parent.type == "assignment_expression":
                left = parent.child_by_field_name("left")
                if left is not None:
                    return _text(left).rsplit(".", 1)[-1]
        node = node.parent
    return "anonymous"


def _edits(node: Node, params: list[str]) -> Iterator[Edit]:
    kind = node.type
    if kind == "binary_expression":
        operator = node.child_by_field_name("operator")
        op = _text(operator) if operator is not None else ""
        if op in COMPARE:
            yield from _operator("compare", node, COMPARE[op])
        elif op in BINOP and not _textual(node):
            yield from _operator("binop", node, BINOP[op])
        elif op in BOOLOP:
            yield from _operator("boolop", node, BOOLOP[op])
    elif kind in ("if_statement", "while_statement", "do_statement", "ternary_expression"):
        condition = node.child_by_field_name("condition")
        if condition is not None and condition.type == "parenthesized_expression":
            inner = condition.named_children
            condition = inner[0] if len(inner) == 1 else None
        if condition is not None and _one_line(condition):
            yield _negate(condition)
    elif kind == "number" and _text(node) in ("0", "1", "2") and _one_line(node):
        yield ("off_by_one", *_span(node), str(int(_text(node)) + 1))
    elif kind == "return_statement":
        value = next(iter(node.named_children), None)
        if value is not None and value.type in ("true", "false"):
            yield ("boolean", *_span(value), "false" if value.type == "true" else "true")
    elif kind == "identifier" and _text(node) in params and _reads(node):
        other = next((p for p in params if p != _text(node)), None)
        if other is not None:
            yield ("variable", *_span(node), other)


def _operator(kind: str, node: Node, replacement: str) -> Iterator[Edit]:
    """The operator between two operands on one line replaced, when the gap holds only it (no
    comment)."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    operator = node.child_by_field_name("operator")
    if left is None or right is None or operator is None:
        return
    if not (_one_line(left) and _one_line(right)) or left.end_point[0] != right.start_point[0]:
        return
    gap = node.text[left.end_byte - node.start_byte : right.start_byte - node.start_byte]  # type: ignore[index]
    if gap.decode(errors="replace").strip() != _text(operator):
        return
    yield (kind, *_span(operator), replacement)


def _negate(condition: Node) -> Edit:
    """`!x` for a simple condition, `!(a < b)` for a compound one; `!x` becomes `x`."""
    if condition.type == "unary_expression" and _text(condition.child(0)) == "!":
        operand = condition.child_by_field_name("argument")
        if operand is not None:
            text = _text(operand)
            if operand.type == "parenthesized_expression":
                text = text[1:-1]
            return ("negate", *_span(condition), text)
    shown = _text(condition)
    return ("negate", *_span(condition), f"!{shown}" if condition.type in SIMPLE else f"!({shown})")


def _reads(node: Node) -> bool:
    """An identifier that reads a variable: not a declaration, a parameter, an assignment's
    target, nor a shorthand property (whose key it also is)."""
    parent = node.parent
    if parent is None or parent.type in BINDING_PARENTS:
        return False
    if parent.type in ("assignment_expression", "augmented_assignment_expression"):
        return parent.child_by_field_name("left") != node
    if parent.type in ("for_in_statement",):
        return parent.child_by_field_name("left") != node
    return True


def _textual(node: Node) -> bool:
    """String concatenation: flipping its `+` is a NaN or a TypeError, not a realistic bug."""
    sides = (node.child_by_field_name("left"), node.child_by_field_name("right"))
    return any(side is not None and side.type in ("string", "template_string") for side in sides)


def _one_line(node: Node) -> bool:
    return node.start_point[0] == node.end_point[0]


def _span(node: Node) -> tuple[int, int, int]:
    """Line (1-based), start and end byte within that line, of a one-line node."""
    return node.start_point[0] + 1, node.start_point[1], node.end_point[1]


def _text(node: Node | None) -> str:
    return node.text.decode() if node is not None and node.text is not None else ""
