"""The tests inside a Rust source file, kept as they were across an edit.

Rust's unit tests live in the file they test (`#[cfg(test)] mod tests { #[test] fn .. }`), so
the path policy's test globs (tests/, benches/) cannot protect them. An edit of a `.rs` file
is refused (the edit tools roll it back, sandbox/ecosystems/base.py: `weakened_tests`) when,
as tree-sitter's Rust grammar reads both versions, it:

- removes a `#[test]` function, or a `#[cfg(test)]` module (its attribute included);
- changes a `#[test]` function's attributes (`#[ignore]` added, `#[should_panic]`, a `cfg`);
- changes the code of a `#[test]` function or of any item already in a `#[cfg(test)]`
  module (a helper the tests call): layout and comments aside.

New tests and new items in a test module are the model's to add. What it cannot tell: a test
made by a macro (`proptest!`, a `macro_rules!` that writes `#[test]`s), a test module behind
another `cfg`, a `#[path]` module: those are the verdict's to judge (a test that disappears
has no outcome, so it is no pass). With `allow_edit_tests` the user lifts all of it.
"""

from __future__ import annotations

import tree_sitter

from sandbox.ecosystems.rust.source import (
    RustDefinition,
    RustSource,
    definitions,
    parse_rust,
    test_modules,
)

Tokens = tuple[tuple[str, bytes], ...]


def _tokens(src: RustSource, node: tree_sitter.Node) -> Tokens:
    out: list[tuple[str, bytes]] = []
    stack = [node]
    while stack:
        here = stack.pop()
        if here.child_count == 0:
            if "comment" not in here.type:
                out.append((here.type, src.data[here.start_byte : here.end_byte]))
            continue
        if "comment" in here.type:
            continue
        stack.extend(reversed(here.children))
    return tuple(out)


def _tests(src: RustSource) -> dict[str, RustDefinition]:
    return {d.title: d for d in definitions(src) if d.is_test}


def _module_items(src: RustSource, module: tree_sitter.Node) -> dict[str, Tokens]:
    """A test module's items by a key that survives reordering (kind and name, or its text)."""
    body = module.child_by_field_name("body")
    out: dict[str, Tokens] = {}
    if body is None:
        return out
    for node in body.named_children:
        if "comment" in node.type or node.type == "attribute_item":
            continue
        name = node.child_by_field_name("name")
        tokens = _tokens(src, node)
        key = f"{node.type} {src.text(name)}" if name is not None else f"{node.type} {tokens}"
        out[key] = tokens
    return out


def weakened_tests(before: bytes, after: bytes, name: str) -> str | None:
    """Why the edit of `name` from `before` to `after` weakens its tests (the module
    docstring), None where it does not or either version does not parse clean."""
    old, new = parse_rust(name, before), parse_rust(name, after)
    if old is None or new is None or old.root.has_error or new.root.has_error:
        return None
    was, now = _tests(old), _tests(new)
    for title, test in was.items():
        kept = now.get(title)
        if kept is None:
            return f"it removes the test {title} from {name}"
        if sorted(kept.attributes) != sorted(test.attributes):
            added = sorted(set(kept.attributes) - set(test.attributes))
            what = f"adds #[{added[0]}] to" if added else "changes the attributes of"
            return f"it {what} the test {title} in {name}"
        if _tokens(old, test.node) != _tokens(new, kept.node):
            return f"it changes the test {title} in {name}"
    modules_now = dict(test_modules(new))
    for path, module in test_modules(old):
        if path not in modules_now:
            return f"it removes the #[cfg(test)] module {path} from {name}"
        items_now = _module_items(new, modules_now[path])
        for key, tokens in _module_items(old, module).items():
            if items_now.get(key) != tokens:
                return (
                    f"it changes or removes {key.split(' ', 1)[-1][:60]} in the #[cfg(test)] "
                    f"module {path} of {name}"
                )
    return None
