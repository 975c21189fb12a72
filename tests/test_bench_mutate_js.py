"""The task generator's bug planting in JavaScript and TypeScript (bench/tasks/mutate_js.py): one
line of one function, one realistic change, still parsing, never inside a string, a comment, a
regular expression or a type, never in a test file, and undone exactly by the reference fix."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TASKS = Path(__file__).resolve().parent.parent / "bench" / "tasks"
JS = """\
// Keep value within [lo, hi]: a < b in a comment stays.
export function clamp(value, lo, hi) {
  if (value < lo) return lo;
  if (value > hi && hi !== undefined) {
    return hi;
  }
  const label = "a < b || 1 + 2";
  const pattern = /x<y|1/;
  return value + 0;
}

export const tag = (name, n) => `<${name}>` + n;

export function isEmpty(list) {
  if (list.length === 0) return true;
  return false;
}
"""
TS = """\
export class Box<T extends number = 0> {
  size(width: number, height?: number): 0 | 1 | number {
    const kind: "a" | "b" = width > 1 ? "a" : "b";
    if (!height) return width * 2;
    return (width - height) as number;
  }
}

export function ready(flag: boolean): boolean {
  return true;
}
"""


def load(name: str):
    """A bench module by file name (bench/tasks is a folder of scripts, not a package)."""
    if str(TASKS) not in sys.path:
        sys.path.insert(0, str(TASKS))  # mutate_js imports mutate's Mutant as its scripts do
    spec = importlib.util.spec_from_file_location(name, TASKS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def changed_lines(source: str, mutant) -> list[tuple[str, str]]:
    after = mutant.apply(source)
    pairs = zip(source.splitlines(), after.splitlines(), strict=True)
    return [(a, b) for a, b in pairs if a != b]


def test_each_js_mutant_changes_one_line_of_a_function_and_still_parses():
    mutate_js = load("mutate_js")
    found = mutate_js.mutants(JS, path="src/clamp.js")
    kinds = {m.kind for m in found}
    assert {"compare", "negate", "variable", "boolop", "off_by_one", "binop", "boolean"} <= kinds
    for m in found:
        assert changed_lines(JS, m) == [(m.old, m.new)]
        assert mutate_js.parses(m.apply(JS), path="src/clamp.js")
    news = {m.new.strip() for m in found}
    assert "if (value <= lo) return lo;" in news and "if (!(value < lo)) return lo;" in news
    assert "if (value > hi || hi !== undefined) {" in news
    assert "if (list.length === 0) return false;" in news and "return true;" in news
    assert "if (list.length === 1) return true;" in news
    assert {m.function for m in found} >= {"clamp", "isEmpty"}


def test_strings_comments_regexes_and_concatenation_are_never_mutated():
    found = load("mutate_js").mutants(JS, path="src/clamp.js")
    lines = JS.splitlines()
    marks = ('"', "/x<", "//")
    untouched = [i + 1 for i, line in enumerate(lines) if any(c in line for c in marks)]
    assert untouched and not any(m.line in untouched for m in found)
    # The template's `+`: flipping a string concatenation is a NaN, not a realistic bug.
    assert not any(m.line == 12 and m.kind == "binop" for m in found)


def test_typescript_types_are_left_alone_and_code_is_mutated():
    mutate_js = load("mutate_js")
    found = mutate_js.mutants(TS, path="src/box.ts")
    for m in found:
        assert changed_lines(TS, m) == [(m.old, m.new)]
        assert mutate_js.parses(m.apply(TS), path="src/box.ts")
    news = {m.new.strip() for m in found}
    assert 'const kind: "a" | "b" = width >= 1 ? "a" : "b";' in news
    assert "if (height) return width * 2;" in news
    assert "return (width + height) as number;" in news
    assert "return false;" in news
    assert "if (!height) return height * 2;" in news  # a parameter read, replaced
    # `0 | 1` in the return type and `= 0` in the type parameters are types, not constants.
    assert not any(m.line in (1, 2) for m in found)


def test_test_files_and_other_languages_are_refused():
    mutate_js = load("mutate_js")
    for path in ("tests/clamp.js", "src/clamp.test.ts", "src/__tests__/clamp.js", "a.spec.mjs"):
        with pytest.raises(ValueError, match="test file"):
            mutate_js.mutants(JS, path=path)
    with pytest.raises(ValueError, match="not a JavaScript"):
        mutate_js.mutants(JS, path="src/clamp.py")
    with pytest.raises(ValueError, match="does not parse"):
        mutate_js.mutants("function f( {", path="src/broken.js")


def test_tsx_is_parsed_with_its_grammar():
    source = "export function Item(props) {\n  return <li>{props.n > 1 ? 'a' : 'b'}</li>;\n}\n"
    found = load("mutate_js").mutants(source, path="src/item.tsx")
    assert "  return <li>{props.n >= 1 ? 'a' : 'b'}</li>;" in {m.new for m in found}
