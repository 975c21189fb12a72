"""The task generator's bug planting in Go (bench/tasks/mutate_go.py): one line of one function
or method, one realistic change, still parsing, never inside a string, a rune, a comment or a
type, never in a test file, and undone exactly by the reference fix; and the public Go tasks
recorded in manifest-go.json are mutants it still makes of the module in go-projects/."""

from __future__ import annotations

import doctest
import json

import pytest

from tests.test_bench_mutate_js import TASKS, changed_lines, load

GO = """\
package clamp

// Clamp keeps v within [lo, hi]: a < b in a comment stays.
func Clamp(v, lo, hi int) int {
\tif v < lo {
\t\treturn lo
\t}
\tlabel := "a < b || 1 + 2"
\t_ = label + "x"
\tvar buf [2]int
\t_ = buf
\tif v > hi && hi != 0 {
\t\treturn hi
\t}
\treturn v + 0
}

type Box struct{ n int }

func (b *Box) Empty() bool {
\tif !(b.n > 0) {
\t\treturn true
\t}
\tr := 'x' + 1
\t_ = r
\treturn false
}
"""


def test_each_go_mutant_changes_one_line_of_a_function_and_still_parses():
    mutate_go = load("mutate_go")
    assert doctest.testmod(mutate_go).failed == 0
    found = mutate_go.mutants(GO, path="clamp/clamp.go")
    assert {m.kind for m in found} == {
        "compare", "negate", "boolop", "off_by_one", "binop", "boolean"
    }  # fmt: skip
    for m in found:
        assert changed_lines(GO, m) == [(m.old, m.new)]
        assert load("mutate_ts").parses(mutate_go._parser(), m.apply(GO))
    news = {m.new.strip() for m in found}
    assert "if v <= lo {" in news and "if !(v < lo) {" in news
    assert "if v > hi || hi != 0 {" in news and "return v - 0" in news and "return v + 1" in news
    assert "if b.n > 0 {" in news and "return false" in news and "return true" in news
    # Strings, comments, runes' own text and types are left alone.
    assert not any(m.line in (3, 8, 9, 10) for m in found), [(m.line, m.new) for m in found]
    assert "r := 'x' - 1" in news  # the rune is an operand; its text is not touched
    assert {m.function for m in found} == {"Clamp", "Box.Empty"}
    with pytest.raises(ValueError):
        mutate_go.mutants(GO, path="clamp/clamp_test.go")


def test_the_recorded_go_tasks_are_mutants_of_the_written_module():
    mutate_go = load("mutate_go")
    manifest = json.loads((TASKS / "manifest-go.json").read_text())
    tasks = [t for p in manifest["projects"] for t in manifest["tasks"][p["name"]]]
    assert len(tasks) >= 8 and len({t["kind"] for t in tasks}) >= 5
    for project in manifest["projects"]:
        root = TASKS / project["path"]
        for task in manifest["tasks"][project["name"]]:
            source = (root / task["path"]).read_text()
            made = {(m.line, m.new) for m in mutate_go.mutants(source, path=task["path"])}
            assert (task["line"], task["new"]) in made, task["id"]
            assert source.splitlines()[task["line"] - 1] == task["old"]
            assert task["fail_to_pass"] and all("::" in t for t in task["fail_to_pass"])
