"""The task generator's bug planting in Rust (bench/tasks/mutate_rust.py): one line of one `fn`'s
body, one realistic change, still parsing, never inside a string, a char, a comment, a type, an
attribute, a macro's token tree or test code, never in a test, bench or example file, and undone
exactly by the reference fix; and the public Rust tasks recorded in manifest-rust.json are
well formed."""

from __future__ import annotations

import doctest
import json

import pytest

from tests.test_bench_mutate_js import TASKS, changed_lines, load

RUST = """\
//! Clamping: a < b in a comment stays.

/// Keeps `v` within [lo, hi]: `a < b || 1 + 2` in a doc comment stays.
pub fn clamp(v: i64, lo: i64, hi: i64) -> i64 {
    if v < lo {
        return lo;
    }
    let label = "a < b || 1 + 2";
    let buf: [u8; 2] = [0; 2];
    debug_assert!(lo <= hi + 1, "bounds {} < {}", lo, 1);
    if v > hi && hi != 0 {
        return hi;
    }
    let _ = (label, buf.len(), 'x');
    v + 0usize as i64
}

pub struct Boxed<T> {
    n: usize,
    item: Option<T>,
}

impl<T: Clone> Boxed<T> {
    pub fn is_empty(&self) -> bool {
        if !(self.n > 0) {
            return true;
        }
        if let Some(_) = &self.item {
            return false;
        }
        let pair = (self.n, 1);
        pair.0 == pair.1 - 1
    }

    pub fn kind(&self) -> bool {
        match self.item {
            Some(_) => true,
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    fn helper(a: i64) -> bool {
        a < 2 || true
    }

    #[test]
    fn clamps() {
        assert_eq!(super::clamp(5, 0, 3), 3);
    }
}

#[test]
fn stray_test() {
    let x = 1 + 1;
    assert!(x == 2);
}
"""


def test_each_rust_mutant_changes_one_line_of_a_function_and_still_parses():
    mutate_rust = load("mutate_rust")
    assert doctest.testmod(mutate_rust).failed == 0
    found = mutate_rust.mutants(RUST, path="src/lib.rs")
    assert {m.kind for m in found} == {
        "compare", "negate", "boolop", "off_by_one", "binop", "boolean"
    }  # fmt: skip
    for m in found:
        assert changed_lines(RUST, m) == [(m.old, m.new)]
        assert load("mutate_ts").parses(mutate_rust._parser(), m.apply(RUST))
    news = {m.new.strip() for m in found}
    assert "if v <= lo {" in news and "if !(v < lo) {" in news
    assert "if v > hi || hi != 0 {" in news and "v - 0usize as i64" in news
    assert "v + 1usize as i64" in news
    assert "if self.n > 0 {" in news and "return false;" in news and "return true;" in news
    assert "Some(_) => false," in news and "None => true," in news
    assert "pair.0 == pair.1 + 1" in news and "let pair = (self.n, 2);" in news
    # Comments, strings, types, macros' token trees, `if let` and tuple fields are left alone.
    lines = RUST.splitlines()
    untouched = {i + 1 for i, line in enumerate(lines) if any(
        s in line for s in ("//", "let label", "debug_assert", "if let", "let _")
    )}  # fmt: skip
    assert not {m.line for m in found} & untouched, [(m.line, m.new) for m in found]
    assert not any(m.new.strip().startswith(("pair.1 ==", "pair.0 == pair.2", "let buf: [u8; 3]"))
                   for m in found)  # fmt: skip
    assert "let buf: [u8; 2] = [1; 2];" in news
    # Test code is never mutated: the cfg(test) module, a #[test] function.
    first_test = lines.index("#[cfg(test)]") + 1
    assert all(m.line < first_test for m in found)
    assert {m.function for m in found} == {"clamp", "Boxed.is_empty", "Boxed.kind"}
    for path in ("tests/it.rs", "benches/b.rs", "examples/demo.rs", "build.rs"):
        with pytest.raises(ValueError):
            mutate_rust.mutants(RUST, path=path)


def test_the_recorded_rust_tasks_name_failing_tests_by_id():
    manifest = json.loads((TASKS / "manifest-rust.json").read_text())
    tasks = [t for p in manifest["projects"] for t in manifest["tasks"][p["name"]]]
    assert len(tasks) >= 8 and len({t["kind"] for t in tasks}) >= 4
    for task in tasks:
        assert task["old"] != task["new"] and task["path"].startswith("src/"), task["id"]
        assert task["fail_to_pass"] and all("::" in t for t in task["fail_to_pass"])
        assert task["passed"] > 0
