"""Go files as a parser sees them (tree-sitter's Go grammar): their imports, their top-level
functions, methods and types, and the calls inside a definition (sandbox/ecosystems/go/grounding.py
follows those from a failing test to the code it reaches).

A real parser, not regular expressions: a call in a string or a comment is no call, and a
method's receiver is read as Go writes it. Parsing only, bounded: files over MAX_FILE_BYTES are
not read, one parse stops at PARSE_S. Nothing of the repository runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter
import tree_sitter_go

from sandbox.source.numbered import numbered
from sandbox.source.statements import ending_line
from sandbox.source.treesitter import PARSE_S, ParsedFile, parse_tree

MAX_FILE_BYTES = 512_000  # a larger file is generated code, not one to show
MAX_DEF_LINES = 60  # of one definition shown
MAX_CALLS = 200  # calls read of one definition


@lru_cache(maxsize=1)  # a pure memo: the grammar is loaded once per process
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_go.language())


@dataclass(frozen=True)
class GoSource(ParsedFile):
    """One parsed Go file, and the names its imports bind."""

    def imports(self) -> dict[str, str]:
        """The names the file's imports bind -> their import paths (`c "x/calc"`: c; no name:
        the path's last element; `_` and `.` imports bind none here)."""
        out: dict[str, str] = {}
        for spec in walk(self.root):
            if spec.type != "import_spec":
                continue
            path = self.text(spec.child_by_field_name("path")).strip('"`')
            name = self.text(spec.child_by_field_name("name")) or path.rsplit("/", 1)[-1]
            if name not in ("_", ".") and path:
                out[name] = path
        return out


def parse_go(rel: str, data: bytes, *, timeout_s: float = PARSE_S) -> GoSource | None:
    """`data` parsed as Go; None when too large or the parse took longer than `timeout_s`."""
    if len(data) > MAX_FILE_BYTES:
        return None
    tree = parse_tree(_language(), data, timeout_s=timeout_s)
    return GoSource(rel, data, tree) if tree is not None else None


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """`node` and all its named descendants, in source order."""
    stack = [node]
    while stack:
        here = stack.pop()
        yield here
        stack.extend(reversed(here.named_children))


@dataclass(frozen=True)
class GoDefinition:
    """A top-level function, method (`Stack.Push`) or type of a Go file; lines 1-based."""

    path: str
    name: str  # the function's or type's name; a method's own name (`Push`)
    receiver: str | None  # a method's receiver type (`Stack`)
    start: int
    end: int
    node: tree_sitter.Node

    @property
    def title(self) -> str:
        return f"{self.receiver}.{self.name}" if self.receiver else self.name

    def render(self, lines: list[str]) -> str:
        """The definition in read_file's numbered form, headed as the Python grounding heads
        its definitions."""
        last = min(self.end, self.start + MAX_DEF_LINES - 1, len(lines))
        body = numbered(lines, range(self.start, last + 1), width=len(str(self.end)))
        head = f"{self.path}: {self.title}, lines {self.start}-{last} of {len(lines)}"
        if last < self.end:
            head += f" (the definition goes on to line {self.end})"
        return f"{head}\n{body}"


def definitions(src: GoSource) -> list[GoDefinition]:
    """The file's top-level functions, methods and types."""
    found: list[GoDefinition] = []
    for node in src.root.named_children:
        if node.type in ("function_declaration", "method_declaration"):
            name = src.text(node.child_by_field_name("name"))
            receiver = _receiver(src, node) if node.type == "method_declaration" else None
            found.append(_definition(src, node, name, receiver))
        elif node.type == "type_declaration":
            for spec in node.named_children:
                if spec.type == "type_spec":
                    name = src.text(spec.child_by_field_name("name"))
                    found.append(_definition(src, node, name, None))
    return found


def _definition(
    src: GoSource, node: tree_sitter.Node, name: str, receiver: str | None
) -> GoDefinition:
    start = node.start_point.row + 1
    # A doc comment directly above belongs to the definition.
    prev = node.prev_named_sibling
    while prev is not None and prev.type == "comment" and prev.end_point.row + 1 == start - 1:
        start = prev.start_point.row + 1
        prev = prev.prev_named_sibling
    return GoDefinition(src.path, name, receiver, start, node.end_point.row + 1, node)


def _receiver(src: GoSource, method: tree_sitter.Node) -> str | None:
    receiver = method.child_by_field_name("receiver")
    if receiver is None:
        return None
    for node in walk(receiver):
        if node.type == "type_identifier":
            return src.text(node)
    return None


def enclosing(defs: list[GoDefinition], line: int) -> GoDefinition | None:
    """The definition holding `line`, if any."""
    return next((d for d in defs if d.start <= line <= d.end), None)


@dataclass(frozen=True)
class Call:
    """A call in a definition: `Add(..)` (qualifier None), `calc.Add(..)` or `s.Push(..)`
    (qualifier `calc`, `s`: a package's name or a value's, the reader decides)."""

    qualifier: str | None
    name: str


def calls(src: GoSource, node: tree_sitter.Node) -> list[Call]:
    """The calls inside `node` (closures included: a subtest's body), each once, in order."""
    found: dict[Call, None] = {}
    for here in walk(node):
        if here.type != "call_expression":
            continue
        function = here.child_by_field_name("function")
        if function is None:
            continue
        if function.type == "identifier":
            found[Call(None, src.text(function))] = None
        elif function.type == "selector_expression":
            operand = function.child_by_field_name("operand")
            field = src.text(function.child_by_field_name("field"))
            qualifier = (
                src.text(operand) if operand is not None and operand.type == ("identifier") else ""
            )
            found[Call(qualifier, field)] = None
        if len(found) >= MAX_CALLS:
            break
    return list(found)


def guard_line(src: GoSource, line: int) -> int | None:
    """For a `panic(...)` on `line`: the line of the condition that decided it (the `if`
    around it, in the same function), where that is another line; else None."""
    row = line - 1
    call = next(
        (
            n
            for n in walk(src.root)
            if n.type == "call_expression"
            and n.start_point.row == row
            and src.text(n.child_by_field_name("function")) == "panic"
        ),
        None,
    )
    node = call.parent if call is not None else None
    while node is not None and node.type not in (
        "function_declaration", "method_declaration", "func_literal"
    ):  # fmt: skip
        if node.type == "if_statement":
            condition = node.child_by_field_name("condition")
            at = condition.start_point.row + 1 if condition is not None else line
            return at if at != line else None
        node = node.parent
    return None


# What ends a Go function's run where it stands: a line added before it runs first.
_GO_BLOCKS = ("statement_list",)
_GO_EXITS = ("panic", "os.Exit")


def ending_statement(rel: str, data: bytes, line: int) -> int | None:
    """The first line of the statement holding line `line` where it is a `return`, a
    `panic(...)` or an `os.Exit(...)` (sandbox/source/statements.py); else None."""
    return ending_line(parse_go(rel, data), line, blocks=_GO_BLOCKS, ends=_go_ends)


def _go_ends(node: tree_sitter.Node, parsed: ParsedFile) -> bool:
    if node.type == "return_statement":
        return True
    call = node.named_children[0] if node.type == "expression_statement" else None
    return (
        call is not None
        and call.type == "call_expression"
        and parsed.text(call.child_by_field_name("function")) in _GO_EXITS
    )
