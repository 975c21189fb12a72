"""The definitions of a JavaScript or TypeScript file, and the names a test uses, from the
syntax tree (source.py parses): what sandbox/ecosystems/python/definitions.py is for
Python.

A definition is a function (`function f`, `const f = () =>`, `const f = function`), a class
and its methods, an object literal's methods, and what a module exports by assignment
(`module.exports = function`, `exports.f = ...`, `Foo.prototype.f = ...`), and an anonymous
`export default` (named "default"). A test is the callback of the `it`/`test` call around the
line its stack names in the test file, or the one whose title is the test's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import tree_sitter

from sandbox.ecosystems.node.source import Source, exported_name, walk
from sandbox.source.numbered import numbered

MAX_DEF_LINES = 60  # a longer class is shown as an outline: its header and its methods' heads
TOP_LEVEL_AROUND = 5  # lines shown each side of a frame in a file's top-level code
# The calls whose callback is a test (mocha, jest, vitest, node:test, jasmine, ava, tap).
TEST_CALLS = frozenset({"it", "test", "specify", "fit", "xit", "xtest", "serial", "t.test"})
_FUNCTIONS = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_CLASSES = frozenset({"class_declaration", "abstract_class_declaration", "class"})
_DECLARATIONS = frozenset({"function_declaration", "generator_function_declaration"})
_METHODS = frozenset({"method_definition", "public_field_definition", "field_definition"})
_NAMES = frozenset({"identifier", "shorthand_property_identifier"})


@dataclass(frozen=True)
class JsDefinition:
    """One function, class or method of a source file: where it is and how it is shown."""

    path: str
    name: str
    start: int  # 1-based, `export` and decorators included
    end: int
    owner: str = ""  # for a method: its class's (or object's) name
    is_class: bool = False
    bases: tuple[str, ...] = ()  # for a class: what it extends
    heads: tuple[int, ...] = ()  # for a class: its members' first lines (its outline)

    @property
    def top(self) -> bool:
        return not self.owner

    @property
    def outline(self) -> bool:
        """A class too long to show whole: its header and its members' first lines."""
        return self.is_class and self.end - self.start >= MAX_DEF_LINES

    def render(self, lines: list[str]) -> str:
        """The definition in read_file's numbered form (definitions.Definition's layout)."""
        width = len(str(self.end))
        if self.outline:
            body = numbered(lines, [self.start, *self.heads], width=width)
            head = f"{self.path}: class {self.name}, lines {self.start}-{self.end} (outline)"
            return f"{head}\n{body}"
        last = min(self.end, self.start + MAX_DEF_LINES - 1, len(lines))
        body = numbered(lines, range(self.start, last + 1), width=width)
        head = f"{self.path}: {self.name}, lines {self.start}-{last} of {len(lines)}"
        if last < self.end:
            head += f" (the definition goes on to line {self.end})"
        return f"{head}\n{body}"


def definitions(src: Source) -> list[JsDefinition]:
    """The file's top-level functions and classes, their methods, and its exported functions."""
    found: list[JsDefinition] = []
    for statement in src.root.named_children:
        found += _statement(src, statement, outer=statement)
    return found


def enclosing(defs: Sequence[JsDefinition], line: int) -> JsDefinition | None:
    """The innermost definition that holds `line` (a method before its class)."""
    holding = [d for d in defs if d.start <= line <= d.end]
    return max(holding, key=lambda d: (d.start, -d.end), default=None)


def top_level(path: str, line: int, lines: int) -> JsDefinition:
    """The lines around `line` of a file's top-level code (a module that throws as it loads:
    its frame is in no function), TOP_LEVEL_AROUND each side."""
    start, end = max(1, line - TOP_LEVEL_AROUND), min(max(lines, 1), line + TOP_LEVEL_AROUND)
    return JsDefinition(path=path, name="top-level code", start=start, end=end)


def _statement(
    src: Source, node: tree_sitter.Node, *, outer: tree_sitter.Node
) -> list[JsDefinition]:
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        if inner is None:
            return []
        if inner.type in _FUNCTIONS or inner.type == "class" or inner.type == "object":
            return _value(src, "default", inner, outer=outer)
        return _statement(src, inner, outer=outer)
    if node.type in _DECLARATIONS:
        return [_definition(src, src.text(node.child_by_field_name("name")), node, outer)]
    if node.type in _CLASSES:
        return _class(src, src.text(node.child_by_field_name("name")) or "default", node, outer)
    if node.type in ("lexical_declaration", "variable_declaration"):
        found: list[JsDefinition] = []
        declarators = [d for d in node.named_children if d.type == "variable_declarator"]
        for declarator in declarators:
            name, value = (declarator.child_by_field_name(f) for f in ("name", "value"))
            if name is not None and name.type == "identifier" and value is not None:
                alone = len(declarators) == 1  # `export const f = ...`: from `export`
                found += _value(src, src.text(name), value, outer=outer if alone else declarator)
        return found
    if node.type == "expression_statement" and node.named_children:
        return _assignment(src, node.named_children[0], outer=outer)
    return []


def _assignment(
    src: Source, node: tree_sitter.Node, *, outer: tree_sitter.Node
) -> list[JsDefinition]:
    """`module.exports = ...`, `exports.f = ...`, `Foo.prototype.f = ...` as definitions."""
    if node.type != "assignment_expression":
        return []
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or right is None:
        return []
    name = exported_name(src, left)
    if name == "default":
        own = right.child_by_field_name("name")
        return _value(src, src.text(own) if own is not None else "default", right, outer=outer)
    if name is not None:
        return _value(src, name, right, outer=outer)
    obj, prop = left.child_by_field_name("object"), left.child_by_field_name("property")
    if obj is not None and obj.type == "member_expression":  # Foo.prototype.f = function
        owner, proto = obj.child_by_field_name("object"), obj.child_by_field_name("property")
        if owner is not None and src.text(proto) == "prototype" and right.type in _FUNCTIONS:
            return [_definition(src, src.text(prop), right, outer, owner=src.text(owner))]
    return []


def _value(
    src: Source, name: str, value: tree_sitter.Node, *, outer: tree_sitter.Node
) -> list[JsDefinition]:
    """A named value that is a function, a class, or an object literal with methods."""
    while value.type in ("parenthesized_expression", "as_expression", "satisfies_expression"):
        if not value.named_children:
            return []
        value = value.named_children[0]
    if value.type in _FUNCTIONS:
        return [_definition(src, name, value, outer)]
    if value.type == "class":
        return _class(src, name, value, outer)
    if value.type == "object":
        return _object(src, name, value)
    return []


def _object(src: Source, name: str, obj: tree_sitter.Node) -> list[JsDefinition]:
    """An object literal's methods (`a() {}`, `b: () => ...`), each owned by the object; those
    of `module.exports = {...}` and `export default {...}` are top-level (the module's own)."""
    owner = "" if name == "default" else name
    found = []
    for part in obj.named_children:
        if part.type == "method_definition":
            key = src.text(part.child_by_field_name("name")).strip("'\"")
            found.append(_definition(src, key, part, part, owner=owner))
        elif part.type == "pair":
            value = part.child_by_field_name("value")
            if value is not None and value.type in _FUNCTIONS:
                key = src.text(part.child_by_field_name("key")).strip("'\"")
                found.append(_definition(src, key, value, part, owner=owner))
    return found


def _class(
    src: Source, name: str, node: tree_sitter.Node, outer: tree_sitter.Node
) -> list[JsDefinition]:
    body = node.child_by_field_name("body")
    members = [m for m in body.named_children if m.type in _METHODS] if body else []
    methods = [
        _definition(src, src.text(m.child_by_field_name("name")), m, m, owner=name)
        for m in members
        if m.type == "method_definition" or _is_function(m.child_by_field_name("value"))
    ]
    heritage = next((c for c in node.named_children if c.type == "class_heritage"), None)
    bases = tuple(
        src.text(n)
        for n in (walk(heritage) if heritage is not None else ())
        if n.type in ("identifier", "type_identifier") and n.parent is not None
        and n.parent.type in ("class_heritage", "extends_clause")
    )  # fmt: skip
    cls = _definition(src, name, node, outer, is_class=True, bases=bases)
    heads = tuple(sorted({m.start_point.row + 1 for m in members}))
    return [JsDefinition(**{**cls.__dict__, "heads": heads}), *methods]


def _is_function(node: tree_sitter.Node | None) -> bool:
    return node is not None and node.type in _FUNCTIONS


def _definition(
    src: Source,
    name: str,
    node: tree_sitter.Node,
    outer: tree_sitter.Node,
    *,
    owner: str = "",
    is_class: bool = False,
    bases: tuple[str, ...] = (),
) -> JsDefinition:
    start = min(outer.start_point.row, node.start_point.row) + 1
    return JsDefinition(
        path=src.path, name=name, start=start, end=node.end_point.row + 1,
        owner=owner, is_class=is_class, bases=bases,
    )  # fmt: skip


def calls(src: Source, d: JsDefinition) -> list[tuple[str, bool]]:
    """The functions `d`'s code calls by name, in order, each once: (name, False) for `f()`
    and `new F()`, (name, True) for `this.m()`."""
    found: list[tuple[str, bool]] = []
    for node in walk(src.root):
        if node.type not in ("call_expression", "new_expression"):
            continue
        if not d.start - 1 <= node.start_point.row <= d.end - 1:
            continue
        callee = node.child_by_field_name("function") or node.child_by_field_name("constructor")
        if callee is not None and callee.type == "identifier":
            found.append((src.text(callee), False))
        elif callee is not None and callee.type == "member_expression":
            obj, prop = callee.child_by_field_name("object"), callee.child_by_field_name("property")
            if obj is not None and obj.type == "this" and prop is not None:
                found.append((src.text(prop), True))
    return list(dict.fromkeys(found))


def failing_test_code(
    src: Source, *, line: int | None = None, title: str | None = None
) -> tree_sitter.Node | None:
    """The failing test's code in its file: the callback of the innermost test call around
    `line` (else the innermost function there: a helper the test called), else of a test call
    whose title is `title`; None when neither is found."""
    calls = [n for n in walk(src.root) if n.type == "call_expression" and _test_callee(src, n)]
    if line is not None:
        row = line - 1
        around = [c for c in calls if c.start_point.row <= row <= c.end_point.row]
        callback = _callback(around[-1]) if around else None
        if callback is not None:
            return callback
        functions = [
            n for n in walk(src.root)
            if (n.type in _FUNCTIONS or n.type in _DECLARATIONS or n.type == "method_definition")
            and n.start_point.row <= row <= n.end_point.row
        ]  # fmt: skip
        if functions:
            return functions[-1]
    if title:
        for call in calls:
            if _title(src, call) == title:
                return _callback(call)
    return None


def _test_callee(src: Source, call: tree_sitter.Node) -> bool:
    """`it(...)`, `test.only(...)`, `it.each(table)(...)`, `t.test(...)`."""
    function = call.child_by_field_name("function")
    while function is not None and function.type == "call_expression":
        function = function.child_by_field_name("function")
    if function is None:
        return False
    text = src.text(function).replace(" ", "")
    return text in TEST_CALLS or text.split(".")[0] in TEST_CALLS - {"t.test"}


def _callback(call: tree_sitter.Node) -> tree_sitter.Node | None:
    arguments = call.child_by_field_name("arguments")
    found = [a for a in (arguments.named_children if arguments else []) if a.type in _FUNCTIONS]
    return found[-1] if found else None


def _title(src: Source, call: tree_sitter.Node) -> str | None:
    arguments = call.child_by_field_name("arguments")
    first = arguments.named_children[0] if arguments and arguments.named_children else None
    if first is None or first.type not in ("string", "template_string"):
        return None
    return src.text(first)[1:-1]


@dataclass(frozen=True)
class Uses:
    """What a test's code names: identifiers in order, and `object.member` pairs."""

    names: tuple[str, ...] = ()
    members: tuple[tuple[str, str], ...] = ()

    @property
    def properties(self) -> tuple[str, ...]:
        """Every member name used (`q.pop()` -> pop), in order, each once."""
        return tuple(dict.fromkeys(m for _, m in self.members))


def uses(src: Source, node: tree_sitter.Node) -> Uses:
    """The names `node` uses, in order of appearance, each once; a member's object may be
    any expression (`new Range(0, 10).clamp(12)`: its member is `clamp`, its object "")."""
    names: list[str] = []
    members: list[tuple[str, str]] = []
    for sub in walk(node):
        if sub.type in _NAMES:
            names.append(src.text(sub))
        elif sub.type == "jsx_opening_element" or sub.type == "jsx_self_closing_element":
            tag = sub.child_by_field_name("name")
            names += [src.text(tag)] if tag is not None else []
        elif sub.type == "member_expression":
            obj, prop = sub.child_by_field_name("object"), sub.child_by_field_name("property")
            if prop is not None:
                what = src.text(obj) if obj is not None and obj.type == "identifier" else ""
                members.append((what, src.text(prop)))
    return Uses(tuple(dict.fromkeys(names)), tuple(dict.fromkeys(members)))


def helpers(src: Source) -> dict[str, tree_sitter.Node]:
    """The test file's own top-level functions by name (a test's helpers)."""
    return {d.name: n for d, n in _top_functions(src)}


def _top_functions(src: Source) -> list[tuple[JsDefinition, tree_sitter.Node]]:
    out = []
    for statement in src.root.named_children:
        if statement.type in _DECLARATIONS:
            name = src.text(statement.child_by_field_name("name"))
            out.append((_definition(src, name, statement, statement), statement))
        elif statement.type in ("lexical_declaration", "variable_declaration"):
            for declarator in statement.named_children:
                value = declarator.child_by_field_name("value")
                named = declarator.child_by_field_name("name")
                if value is not None and value.type in _FUNCTIONS and named is not None:
                    out.append((_definition(src, src.text(named), value, statement), value))
    return out
