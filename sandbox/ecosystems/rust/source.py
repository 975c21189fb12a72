"""Rust files as a parser sees them (tree-sitter's Rust grammar): their functions, methods and
types (a module's path included: `tests::adds`, `Stack::push`), the calls inside a definition
(grounding.py follows those from a failing test to the code it reaches), and the tests a file
holds (`#[test]` functions and `#[cfg(test)]` modules: guard.py compares them across an edit).

A real parser, not regular expressions: a call in a string or a comment is no call. A macro's
arguments are tokens to the grammar (`assert_eq!(add(2, 2), 4)`), so a name followed by a
parenthesised group inside one is read as a call too. Parsing only, bounded: files over
MAX_FILE_BYTES are not read, one parse stops at PARSE_S. Nothing of the repository runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter
import tree_sitter_rust

from sandbox.source.numbered import numbered
from sandbox.source.statements import ending_line, last_statement
from sandbox.source.treesitter import PARSE_S, ParsedFile, parse_tree

MAX_FILE_BYTES = 512_000  # a larger file is generated code, not one to show
MAX_DEF_LINES = 60  # of one definition shown
MAX_CALLS = 200  # calls read of one definition
_DEFINITIONS = ("function_item", "struct_item", "enum_item", "trait_item", "type_item")


@lru_cache(maxsize=1)  # a pure memo: the grammar is loaded once per process
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_rust.language())


@dataclass(frozen=True)
class RustSource(ParsedFile):
    """One parsed Rust file."""


def parse_rust(rel: str, data: bytes, *, timeout_s: float = PARSE_S) -> RustSource | None:
    """`data` parsed as Rust; None when too large or the parse took longer than `timeout_s`."""
    if len(data) > MAX_FILE_BYTES:
        return None
    tree = parse_tree(_language(), data, timeout_s=timeout_s)
    return RustSource(rel, data, tree) if tree is not None else None


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """`node` and all its named descendants, in source order."""
    stack = [node]
    while stack:
        here = stack.pop()
        yield here
        stack.extend(reversed(here.named_children))


@dataclass(frozen=True)
class RustDefinition:
    """A function, method or type of a Rust file; lines 1-based (its attributes and doc
    comments included)."""

    path: str
    name: str  # its own name: `push`
    owner: str | None  # the module path or impl type it is in: `tests`, `Stack`
    start: int
    end: int
    node: tree_sitter.Node
    attributes: tuple[str, ...] = ()  # `test`, `ignore`, `cfg(test)`, as written inside #[ ]

    @property
    def title(self) -> str:
        return f"{self.owner}::{self.name}" if self.owner else self.name

    @property
    def is_test(self) -> bool:
        return any(a == "test" or a.endswith("::test") for a in self.attributes)

    def render(self, lines: list[str]) -> str:
        last = min(self.end, self.start + MAX_DEF_LINES - 1, len(lines))
        body = numbered(lines, range(self.start, last + 1), width=len(str(self.end)))
        head = f"{self.path}: {self.title}, lines {self.start}-{last} of {len(lines)}"
        if last < self.end:
            head += f" (the definition goes on to line {self.end})"
        return f"{head}\n{body}"


def attributes_of(src: RustSource, node: tree_sitter.Node) -> tuple[list[str], int]:
    """The outer attributes right above `node` (`test`, `ignore`, `cfg(test)`) and the first
    line of it with them and its doc comments."""
    found: list[str] = []
    start = node.start_point.row + 1
    prev = node.prev_named_sibling
    while prev is not None and prev.type in ("attribute_item", "line_comment", "block_comment"):
        if src.text(prev).startswith(("//!", "/*!")):
            break  # the module's own doc, not the item's
        if prev.type == "attribute_item":
            inner = next((c for c in prev.named_children if c.type == "attribute"), None)
            found.append(" ".join(src.text(inner).split()))
        start = prev.start_point.row + 1
        prev = prev.prev_named_sibling
    return found, start


def definitions(src: RustSource) -> list[RustDefinition]:
    """Every function, method and type of the file, in modules and impl blocks too."""
    found: list[RustDefinition] = []

    def visit(container: tree_sitter.Node, owner: str | None) -> None:
        for node in container.named_children:
            if node.type in _DEFINITIONS:
                name = src.text(node.child_by_field_name("name"))
                attrs, start = attributes_of(src, node)
                end = node.end_point.row + 1
                found.append(RustDefinition(src.path, name, owner, start, end, node, tuple(attrs)))
            elif node.type == "mod_item":
                body = node.child_by_field_name("body")
                name = src.text(node.child_by_field_name("name"))
                if body is not None:
                    visit(body, f"{owner}::{name}" if owner else name)
            elif node.type in ("impl_item", "trait_item"):
                body = node.child_by_field_name("body")
                kind = node.child_by_field_name("type") or node.child_by_field_name("name")
                if body is not None:
                    visit(body, _base_type(src.text(kind)))

    visit(src.root, None)
    return found


def _base_type(text: str) -> str:
    return text.split("<", 1)[0].strip().rsplit("::", 1)[-1]


def enclosing(defs: list[RustDefinition], line: int) -> RustDefinition | None:
    """The innermost definition holding `line`, if any."""
    holding = [d for d in defs if d.start <= line <= d.end]
    return min(holding, key=lambda d: d.end - d.start, default=None)


@dataclass(frozen=True)
class Call:
    """A call in a definition: `add(..)` (qualifier None), `calc::add(..)` (qualifier `calc`),
    `s.push(..)` (qualifier "": a method of some value)."""

    qualifier: str | None
    name: str


def calls(src: RustSource, node: tree_sitter.Node) -> list[Call]:
    """The calls inside `node`, macros' arguments included, each once, in order."""
    found: dict[Call, None] = {}
    for here in walk(node):
        if here.type == "call_expression":
            function = here.child_by_field_name("function")
            call = _call_of(src, function)
            if call is not None:
                found[call] = None
        elif here.type == "token_tree":
            kids = here.children
            for one, two in zip(kids, kids[1:], strict=False):
                if one.type == "identifier" and two.type == "token_tree":
                    if src.text(two).startswith("("):
                        before = one.prev_sibling
                        dot = before is not None and src.text(before) == "."
                        found[Call("" if dot else None, src.text(one))] = None
        if len(found) >= MAX_CALLS:
            break
    return list(found)


def _call_of(src: RustSource, function: tree_sitter.Node | None) -> Call | None:
    if function is None:
        return None
    if function.type == "identifier":
        return Call(None, src.text(function))
    if function.type == "scoped_identifier":
        path = function.child_by_field_name("path")
        return Call(
            src.text(path).rsplit("::", 1)[-1], src.text(function.child_by_field_name("name"))
        )
    if function.type == "field_expression":
        return Call("", src.text(function.child_by_field_name("field")))
    if function.type == "generic_function":
        return _call_of(src, function.child_by_field_name("function"))
    return None


def test_modules(src: RustSource) -> list[tuple[str, tree_sitter.Node]]:
    """The `#[cfg(test)]` modules of the file, by their path (`tests`, `a::tests`)."""
    out: list[tuple[str, tree_sitter.Node]] = []

    def visit(container: tree_sitter.Node, owner: str | None) -> None:
        for node in container.named_children:
            if node.type != "mod_item":
                continue
            name = src.text(node.child_by_field_name("name"))
            path = f"{owner}::{name}" if owner else name
            attrs, _ = attributes_of(src, node)
            if any(a.replace(" ", "") in ("cfg(test)",) for a in attrs):
                out.append((path, node))
            elif (body := node.child_by_field_name("body")) is not None:
                visit(body, path)

    visit(src.root, None)
    return out


# What ends a Rust function's run where it stands: a line added before it runs first.
_RUST_BLOCKS = ("block",)
_RUST_EXITS = ("panic", "unreachable", "todo", "unimplemented")
_RUST_NOT_TAIL = ("expression_statement", "let_declaration", "empty_statement", "macro_definition")


def ending_statement(rel: str, data: bytes, line: int) -> int | None:
    """The first line of the statement holding line `line` where it is a `return`, a `panic!`
    (or `unreachable!`, `todo!`, `unimplemented!`), or a function body's value: its last
    expression, with no `;` (sandbox/source/statements.py); else None."""
    return ending_line(parse_rust(rel, data), line, blocks=_RUST_BLOCKS, ends=_rust_ends)


def _rust_ends(node: tree_sitter.Node, parsed: ParsedFile) -> bool:
    inner = node.named_children[0] if node.type == "expression_statement" else node
    if inner.type == "return_expression":
        return True
    if inner.type == "macro_invocation":
        name = parsed.text(inner.child_by_field_name("macro"))
        if name in _RUST_EXITS:
            return True
    body = node.parent
    return (
        node.type not in _RUST_NOT_TAIL
        and not node.type.endswith("_item")
        and body is not None
        and body.parent is not None
        and body.parent.type in ("function_item", "closure_expression")
        and last_statement(node)
    )
