"""JavaScript and TypeScript modules as a parser sees them: what a file imports and what it
exports (sandbox/ecosystems/node/resolve.py finds the files those name).

A real parser (tree-sitter, with its JavaScript and TypeScript grammars), not regular
expressions: a `require('./x')` inside a template string or a comment is no import, JSX is not
a comparison, and `export { a as b } from './c'` is one re-export, not three names. Parsing
only, bounded: files over MAX_FILE_BYTES are not read and one parse stops at PARSE_S.
Nothing of the repository runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter
import tree_sitter_javascript
import tree_sitter_typescript

from sandbox.source.statements import ending_line
from sandbox.source.treesitter import PARSE_S, parse_tree
from sandbox.source.treesitter import ParsedFile as Source

MAX_FILE_BYTES = 512_000  # a larger file is generated or bundled code, not a module to show


@lru_cache(maxsize=4)  # a pure memo: a grammar is loaded once per process
def _language(kind: str) -> tree_sitter.Language:
    if kind == "tsx":
        return tree_sitter.Language(tree_sitter_typescript.language_tsx())
    if kind == "typescript":
        return tree_sitter.Language(tree_sitter_typescript.language_typescript())
    return tree_sitter.Language(tree_sitter_javascript.language())


def grammar_of(rel: str) -> str:
    """The grammar a file is parsed with: "typescript", "tsx" or "javascript" (JSX included)."""
    if rel.endswith(".tsx"):
        return "tsx"
    return "typescript" if rel.endswith((".ts", ".mts", ".cts")) else "javascript"


def parse_bytes(rel: str, data: bytes, *, timeout_s: float = PARSE_S) -> Source | None:
    """`data` parsed as the file `rel`; None when the parse took longer than `timeout_s`."""
    tree = parse_tree(_language(grammar_of(rel)), data, timeout_s=timeout_s)
    return Source(rel, data, tree) if tree is not None else None


@dataclass(frozen=True)
class Binding:
    """A name an import gives the importing file: `local` stands for the module's export
    `imported` ("default", or "*" for the module object: `import * as m`, `m = require()`)."""

    local: str
    imported: str


@dataclass(frozen=True)
class Import:
    """One `import`, `export ... from`, `require()` or `import()` of a module."""

    specifier: str
    bindings: tuple[Binding, ...] = ()


@dataclass(frozen=True)
class Export:
    """A name a module exports: the local name it stands for, or, re-exported, the name in the
    module `specifier` names ("*" for that module object). `export * from` is name "*"."""

    name: str
    local: str
    specifier: str = ""


def imports(src: Source) -> list[Import]:
    """The modules `src` imports, in order, with the names each import binds."""
    found: list[Import] = []
    for node in walk(src.root):
        if node.type == "import_statement":
            found += _import_statement(src, node)
        elif node.type == "call_expression" and _is_require(src, node):
            spec = _string(src, _first_argument(node))
            if spec is not None:
                found.append(Import(spec, _required_bindings(src, node)))
        elif node.type == "export_statement" and node.child_by_field_name("source") is not None:
            spec = _string(src, node.child_by_field_name("source"))
            if spec is not None:
                found.append(Import(spec))
    return found


def exports(src: Source) -> list[Export]:
    """What `src` exports, ES modules' and CommonJS's (`module.exports = ...`, `exports.a =`);
    an anonymous default (`export default () => ...`) stands for the local name "default"."""
    found: list[Export] = []
    for node in src.root.named_children:
        if node.type == "export_statement":
            found += _export_statement(src, node)
        elif node.type == "expression_statement":
            found += _commonjs_exports(src, node)
    return found


def _import_statement(src: Source, node: tree_sitter.Node) -> list[Import]:
    spec = _string(src, node.child_by_field_name("source"))
    bindings: list[Binding] = []
    for child in node.named_children:
        if child.type == "import_require_clause":  # TypeScript's `import x = require('./x')`
            name = next((c for c in child.named_children if c.type == "identifier"), None)
            spec = _string(src, child.child_by_field_name("source"))
            bindings += [Binding(src.text(name), "*")] if name is not None else []
        if child.type != "import_clause":
            continue
        for part in child.named_children:
            if part.type == "identifier":
                bindings.append(Binding(src.text(part), "default"))
            elif part.type == "namespace_import":
                bindings += [Binding(src.text(n), "*") for n in part.named_children]
            elif part.type == "named_imports":
                for spec_node in part.named_children:
                    if spec_node.type != "import_specifier":
                        continue
                    imported = src.text(spec_node.child_by_field_name("name"))
                    alias = spec_node.child_by_field_name("alias")
                    bindings.append(Binding(src.text(alias) if alias else imported, imported))
    return [Import(spec, tuple(bindings))] if spec is not None else []


def _is_require(src: Source, call: tree_sitter.Node) -> bool:
    function = call.child_by_field_name("function")
    if function is None:
        return False
    return function.type == "import" or (
        function.type == "identifier" and src.text(function) == "require"
    )


def _required_bindings(src: Source, call: tree_sitter.Node) -> tuple[Binding, ...]:
    """`m = require(s)`, `{a, b: c} = require(s)`, `d = require(s).d`: the names bound."""
    parent, imported = call.parent, "*"
    if parent is not None and parent.type == "member_expression":
        imported = src.text(parent.child_by_field_name("property"))
        parent = parent.parent
    if parent is None or parent.type not in ("variable_declarator", "assignment_expression"):
        return ()
    target = parent.child_by_field_name("name") or parent.child_by_field_name("left")
    if target is None:
        return ()
    if target.type == "identifier":
        return (Binding(src.text(target), imported),)
    if target.type != "object_pattern" or imported != "*":
        return ()
    bindings = []
    for part in target.named_children:
        if part.type == "shorthand_property_identifier_pattern":
            bindings.append(Binding(src.text(part), src.text(part)))
        elif part.type == "pair_pattern":
            key, value = part.child_by_field_name("key"), part.child_by_field_name("value")
            if value is not None and value.type == "identifier":
                bindings.append(Binding(src.text(value), src.text(key)))
    return tuple(bindings)


def _export_statement(src: Source, node: tree_sitter.Node) -> list[Export]:
    spec = _string(src, node.child_by_field_name("source")) or ""
    default = any(c.type == "default" for c in node.children)
    declaration = node.child_by_field_name("declaration")
    value = node.child_by_field_name("value")
    if declaration is not None:
        names = declared_names(src, declaration)
        if default:
            return [Export("default", names[0] if names else "default")]
        return [Export(name, name) for name in names]
    if value is not None:
        local = src.text(value) if value.type == "identifier" else "default"
        found = [Export("default", local)]
        if value.type == "object":  # `export default { a, b }`: `m.a` is a
            found += [Export(name, local) for name, local in _object_names(src, value)]
        return found
    if any(c.type == "=" for c in node.children) and node.named_children:  # TS `export = x`
        value = node.named_children[0]
        found = [Export("default", _reference(src, value) or "default")]
        return found + [Export(n, local) for n, local in _object_names(src, value)]
    found = []
    for child in node.named_children:
        if child.type == "export_clause":
            for part in child.named_children:
                name = src.text(part.child_by_field_name("name"))
                alias = part.child_by_field_name("alias")
                found.append(Export(src.text(alias) if alias else name, name, spec))
        elif child.type == "namespace_export":  # `export * as ns from './x'`
            found += [Export(src.text(n), "*", spec) for n in child.named_children]
    if spec and not found:
        found.append(Export("*", "*", spec))
    return found


def declared_names(src: Source, node: tree_sitter.Node) -> list[str]:
    """The names a declaration binds: a function's or class's, each variable's."""
    name = node.child_by_field_name("name")
    if name is not None:
        return [src.text(name)]
    return [
        src.text(d.child_by_field_name("name"))
        for d in node.named_children
        if d.type == "variable_declarator"
        and (d.child_by_field_name("name") or d).type == "identifier"
    ]


def _commonjs_exports(src: Source, statement: tree_sitter.Node) -> list[Export]:
    node = statement.named_children[0] if statement.named_children else None
    if node is None or node.type != "assignment_expression":
        return []
    target = exported_name(src, node.child_by_field_name("left"))
    right = node.child_by_field_name("right")
    if target is None or right is None:
        return []
    if target != "default":
        return [Export(target, _reference(src, right) or target)]
    if _reference(src, right):
        return [Export("default", _reference(src, right))]
    name = right.child_by_field_name("name")
    found = [Export("default", src.text(name) if name is not None else "default")]
    if right.type == "object":
        found += [Export(n, local) for n, local in _object_names(src, right)]
        for pair in right.named_children:  # `b: require('./b')`
            value = pair.child_by_field_name("value")
            if pair.type == "pair" and value is not None and value.type == "call_expression":
                spec = _string(src, _first_argument(value)) if _is_require(src, value) else None
                if spec is not None:
                    found.append(Export(src.text(pair.child_by_field_name("key")), "*", spec))
    return found


def exported_name(src: Source, left: tree_sitter.Node | None) -> str | None:
    """What an assignment's target exports: "default" for `module.exports`, `a` for
    `exports.a` and `module.exports.a`; None for any other target."""
    if left is None or left.type != "member_expression":
        return None
    text = src.text(left).replace(" ", "")
    if text == "module.exports":
        return "default"
    obj, prop = left.child_by_field_name("object"), left.child_by_field_name("property")
    if obj is not None and src.text(obj).replace(" ", "") in ("exports", "module.exports"):
        return src.text(prop)
    return None


def _object_names(src: Source, obj: tree_sitter.Node) -> list[tuple[str, str]]:
    """(key, local name) of an object literal's `a`, `b: c` and `d() {}` members."""
    out = []
    for part in obj.named_children:
        if part.type == "shorthand_property_identifier":
            out.append((src.text(part), src.text(part)))
        elif part.type in ("pair", "method_definition"):
            key = part.child_by_field_name("key") or part.child_by_field_name("name")
            value = part.child_by_field_name("value")
            local = _reference(src, value)
            out.append((src.text(key).strip("'\""), local or src.text(key).strip("'\"")))
    return out


def _reference(src: Source, node: tree_sitter.Node | None) -> str:
    """`a` or `a.b` (an import's member: `format: money.format`), else ""."""
    if node is None:
        return ""
    if node.type == "identifier":
        return src.text(node)
    obj = node.child_by_field_name("object")
    if node.type == "member_expression" and obj is not None and obj.type == "identifier":
        return src.text(node).replace(" ", "")
    return ""


def _first_argument(call: tree_sitter.Node) -> tree_sitter.Node | None:
    arguments = call.child_by_field_name("arguments")
    if arguments is None or not arguments.named_children:
        return None
    return arguments.named_children[0]


def _string(src: Source, node: tree_sitter.Node | None) -> str | None:
    """A plain string literal's value (`'./a'`, "./a", or a template with no substitution)."""
    if node is None or node.type not in ("string", "template_string"):
        return None
    if any(c.type == "template_substitution" for c in node.named_children):
        return None
    return src.text(node)[1:-1]


def walk(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """`node` and every node under it, in the order they are written."""
    cursor = node.walk()
    while True:
        current = cursor.node
        if current is not None:
            yield current
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while cursor.goto_parent():
            if cursor.goto_next_sibling():
                break
        else:
            return


# What ends a JS/TS function's run where it stands: a line added before it runs first.
_JS_BLOCKS = ("statement_block", "switch_case", "switch_default")
_JS_EXITS = ("return_statement", "throw_statement")


def ending_statement(rel: str, data: bytes, line: int) -> int | None:
    """The first line of the statement holding line `line` where it is a `return` or a `throw`
    (sandbox/source/statements.py); else None."""
    return ending_line(
        parse_bytes(rel, data), line, blocks=_JS_BLOCKS, ends=lambda n, _: n.type in _JS_EXITS
    )
