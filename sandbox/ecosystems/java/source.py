"""Java files as a parser sees them (tree-sitter's Java grammar): their package and imports,
their classes (nested ones too), methods and constructors, and the calls inside a definition
(sandbox/ecosystems/java/grounding.py follows those from a failing test to the code it reaches).

A real parser, not regular expressions: a call in a string or a comment is no call. Parsing
only, bounded: files over MAX_FILE_BYTES are not read, one parse stops at PARSE_S. Nothing of
the repository runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import tree_sitter
import tree_sitter_java

from sandbox.source.numbered import numbered
from sandbox.source.statements import ending_line
from sandbox.source.treesitter import PARSE_S, ParsedFile, parse_tree

MAX_FILE_BYTES = 512_000  # a larger file is generated code, not one to show
MAX_DEF_LINES = 60  # of one definition shown
MAX_CALLS = 200  # calls read of one definition
MAX_JAVA_FILES = 20_000  # .java files of one repository listed
SKIPPED = frozenset({".git", "target", "build", "node_modules", ".gradle", ".mvn", ".idea"})
TYPES = ("class_declaration", "interface_declaration", "enum_declaration", "record_declaration")
CALLABLES = ("method_declaration", "constructor_declaration", "compact_constructor_declaration")


@lru_cache(maxsize=1)  # a pure memo: the grammar is loaded once per process
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_java.language())


@dataclass(frozen=True)
class JavaSource(ParsedFile):
    """One parsed Java file."""

    def package(self) -> str:
        for node in self.root.named_children:
            if node.type == "package_declaration":
                name = next((c for c in node.named_children if "identifier" in c.type), None)
                return self.text(name)
        return ""

    def imports(self) -> list[str]:
        """The classes its imports name (`com.example.Range`; a `.*` import: its package)."""
        out: list[str] = []
        for node in self.root.named_children:
            if node.type == "import_declaration":
                name = next((c for c in node.named_children if "identifier" in c.type), None)
                if name is not None:
                    out.append(self.text(name))
        return out


def parse_java(rel: str, data: bytes, *, timeout_s: float = PARSE_S) -> JavaSource | None:
    """`data` parsed as Java; None when too large or the parse took longer than `timeout_s`."""
    if len(data) > MAX_FILE_BYTES:
        return None
    tree = parse_tree(_language(), data, timeout_s=timeout_s)
    return JavaSource(rel, data, tree) if tree is not None else None


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """`node` and all its named descendants, in source order."""
    stack = [node]
    while stack:
        here = stack.pop()
        yield here
        stack.extend(reversed(here.named_children))


@dataclass(frozen=True)
class JavaDefinition:
    """A class, method or constructor of a Java file; lines 1-based."""

    path: str
    name: str  # the method's or type's name; a constructor's is its class's
    owner: str | None  # the class a method is in (`Range`; nested: `RangeTest.Outside`)
    kind: str  # "type", "method"
    start: int
    end: int
    node: tree_sitter.Node
    #: A method's or constructor's parameters: how many, and whether the last is varargs
    #: (`String... parts`); None for a type, or where they are not said (a record's compact
    #: constructor).
    params: tuple[int, bool] | None = None

    @property
    def title(self) -> str:
        return f"{self.owner}.{self.name}" if self.owner and self.kind == "method" else self.name

    def accepts(self, arity: int | None) -> bool:
        """Whether a call with `arity` arguments can be to this one (None: not known, any).

        Overloads differ by their parameters; the count alone already tells `put(i, v)` from
        `put(v)`, which Java's own overload resolution starts from."""
        if arity is None or self.params is None:
            return True
        count, varargs = self.params
        return arity >= count - 1 if varargs else arity == count

    def render(self, lines: list[str]) -> str:
        """The definition in read_file's numbered form, headed as the other languages' are."""
        last = min(self.end, self.start + MAX_DEF_LINES - 1, len(lines))
        body = numbered(lines, range(self.start, last + 1), width=len(str(self.end)))
        head = f"{self.path}: {self.title}, lines {self.start}-{last} of {len(lines)}"
        if last < self.end:
            head += f" (the definition goes on to line {self.end})"
        return f"{head}\n{body}"


def definitions(src: JavaSource) -> list[JavaDefinition]:
    """The file's classes (at any depth), methods and constructors, in source order."""
    found: list[JavaDefinition] = []

    def visit(node: tree_sitter.Node, owner: str | None) -> None:
        for child in node.named_children:
            if child.type in TYPES:
                name = src.text(child.child_by_field_name("name"))
                found.append(_definition(src, child, name, owner, "type"))
                inner = f"{owner}.{name}" if owner else name
                body = child.child_by_field_name("body")
                if body is not None:
                    visit(body, inner)
            elif child.type in CALLABLES:
                name = src.text(child.child_by_field_name("name"))
                found.append(_definition(src, child, name, owner, "method"))
            elif child.type in ("class_body", "enum_body_declarations", "interface_body"):
                visit(child, owner)

    visit(src.root, None)
    return found


def _definition(
    src: JavaSource, node: tree_sitter.Node, name: str, owner: str | None, kind: str
) -> JavaDefinition:
    start = node.start_point.row + 1
    # A Javadoc or comment directly above belongs to the definition.
    prev = node.prev_named_sibling
    while prev is not None and "comment" in prev.type and prev.end_point.row + 1 == start - 1:
        start = prev.start_point.row + 1
        prev = prev.prev_named_sibling
    end = node.end_point.row + 1
    return JavaDefinition(src.path, name, owner, kind, start, end, node, _params(node))


def _params(node: tree_sitter.Node) -> tuple[int, bool] | None:
    """A method's or constructor's (count, varargs); None when it has no parameter list."""
    formal = node.child_by_field_name("parameters")
    if formal is None or formal.type != "formal_parameters":
        return None
    params = [
        c for c in formal.named_children if c.type in ("formal_parameter", "spread_parameter")
    ]
    return len(params), bool(params) and params[-1].type == "spread_parameter"


def _arity(node: tree_sitter.Node) -> int | None:
    """The number of arguments of a call node (comments not counted); None with no list."""
    args = node.child_by_field_name("arguments")
    if args is None:
        return None
    return sum(1 for c in args.named_children if "comment" not in c.type)


def enclosing(defs: list[JavaDefinition], line: int) -> JavaDefinition | None:
    """The innermost method holding `line`, else the innermost class."""
    holding = [d for d in defs if d.start <= line <= d.end]
    methods = [d for d in holding if d.kind == "method"]
    pool = methods or holding
    return min(pool, key=lambda d: d.end - d.start) if pool else None


@dataclass(frozen=True)
class Call:
    """A call in a definition: `contains(..)` (qualifier None), `range.contains(..)`,
    `Range.of(..)` (qualifier the text before the dot), or `new Range(..)` (name `Range`,
    constructor True); `arity` its number of arguments."""

    qualifier: str | None
    name: str
    constructor: bool = False
    arity: int | None = None


def calls(src: JavaSource, node: tree_sitter.Node) -> list[Call]:
    """The calls inside `node`, each once, in order."""
    found: dict[Call, None] = {}
    for here in walk(node):
        if here.type == "method_invocation":
            target = here.child_by_field_name("object")
            name = src.text(here.child_by_field_name("name"))
            qualifier = src.text(target) if target is not None else None
            found[Call(qualifier, name, arity=_arity(here))] = None
        elif here.type == "object_creation_expression":
            kind = here.child_by_field_name("type")
            name = src.text(kind).split("<")[0].rsplit(".", 1)[-1]
            if name:
                found[Call(None, name, constructor=True, arity=_arity(here))] = None
        if len(found) >= MAX_CALLS:
            break
    return list(found)


def java_files(root: Path) -> list[str]:
    """The repository's .java files (relative, sorted), build output and hidden folders left
    out, the walk bounded."""
    out: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith("."))
        rel = Path(folder).relative_to(root).as_posix()
        for name in files:
            if name.endswith(".java"):
                out.append(name if rel == "." else f"{rel}/{name}")
                if len(out) >= MAX_JAVA_FILES:
                    return sorted(out)
    return sorted(out)


def is_test_file(rel: str) -> bool:
    """A file of the tests (Maven's and Gradle's src/test/, src/it/ layouts)."""
    return rel.startswith(("src/test/", "src/it/")) or "/src/test/" in rel or "/src/it/" in rel


def file_of_class(files: list[str], class_name: str, *, hint: str = "") -> str | None:
    """The file a class (`com.example.Range`, `com.example.RangeTest$Outside`) is declared in:
    `<source root>/com/example/Range.java`, a module's own (`hint`, its folder) first."""
    outer = class_name.split("$")[0]
    tail = outer.replace(".", "/") + ".java"
    found = [f for f in files if f == tail or f.endswith("/" + tail)]
    if hint:
        found.sort(key=lambda f: not f.startswith(hint.rstrip("/") + "/"))
    return found[0] if found else None


# What ends a Java method's run where it stands: a line added before it runs first.
_JAVA_BLOCKS = ("block", "constructor_body", "switch_block_statement_group")
_JAVA_EXITS = ("return_statement", "throw_statement")


def ending_statement(rel: str, data: bytes, line: int) -> int | None:
    """The first line of the statement holding line `line` where it is a `return` or a `throw`
    (sandbox/source/statements.py); else None."""
    return ending_line(
        parse_java(rel, data), line, blocks=_JAVA_BLOCKS, ends=lambda n, _: n.type in _JAVA_EXITS
    )
