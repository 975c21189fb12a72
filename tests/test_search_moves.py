"""The search's two moves beside the pointed line (worker/search/moves.py): a small function
rewritten whole where the ranking is flat, and a line added after a suspect line; in-process,
through `Agent.run` with the doubles of tests/loop_doubles.py (a scripted model that answers
only what a json_schema endpoint could, files whose tests run as real Python). The same moves
through `worker fix`, the real wire and sandbox, are in test_search_aids.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sandbox.ecosystems import ecosystem_of_source
from tests.loop_doubles import MemoryEnvironment, ScriptedModel, call, make_agent, repo, start
from worker.llm.types import ToolCall
from worker.loop.endings import SamplesSpent
from worker.search.moves import (
    Function,
    Insertion,
    flat,
    function_of,
    inserted,
    insertion,
    small_functions,
    with_endings,
)
from worker.search.sampling import FirstEdits
from worker.search.suspects import Anchor, Suspect, indent_after

EDITS = ("replace", "apply_patch")
# A straight-line function: every test runs every line, so the ranking ties them all.
AREA = '''\
def area(w, h):
    """The area of a w by h rectangle."""
    width = abs(w)
    height = abs(w)
    return width * height
'''
AREA_TESTS = """\
from calc import area


def test_area():
    assert area(2, 3) == 6


def test_square():
    assert area(2, 2) == 4
"""
AREA_FN = Function("calc.py", 1, 5, AREA.rstrip("\n"))
FLAT = tuple(
    Suspect("calc.py", n, text, 0.7, 1, 1, indent_after="    ")
    for n, text in ((3, "width = abs(w)"), (4, "height = abs(w)"), (5, "return width * height"))
)
# A missing statement: `seen.add(item)` after the `if`; a passing test of [] leaves the loop's
# body out, so its two lines rank first (and tie).
DEDUPE = """\
def dedupe(items):
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            out.append(item)
    return out
"""
DEDUPE_TESTS = """\
from calc import dedupe


def test_dedupe():
    assert dedupe([1, 1, 2]) == [1, 2]


def test_empty():
    assert dedupe([]) == []
"""
IF_LINE = Suspect("calc.py", 5, "if item not in seen:", 1.0, 1, 0, indent_after=" " * 12)
APPEND = Suspect("calc.py", 6, "out.append(item)", 1.0, 1, 0, indent_after=" " * 8)
SHARP = (IF_LINE, APPEND, Suspect("calc.py", 2, "seen = set()", 0.7, 1, 1, indent_after="    "))


def replace_call(**arguments: Any) -> ToolCall:
    return ToolCall(id="c", name="replace", arguments=arguments, raw_arguments="")


def pins(request: dict[str, Any]) -> dict[str, Any] | None:
    return dict(request["pins"]["replace"]) if request["pins"] else None


def flat_opening(*, moves: bool) -> FirstEdits:
    """Five first-edit samples on area's flat ranking, its function known, the moves as asked."""
    return FirstEdits(
        first_tools=EDITS,
        edit_samples=5,
        suspects=FLAT,
        functions=(AREA_FN,),
        converse=False,
        moves=moves,
    )


def test_an_insertion_keeps_its_line_and_adds_the_answer_at_the_blocks_indentation():
    at = {"path": "calc.py", "old": IF_LINE.text, "line": 5}
    # The model wrote the line to add (its own indentation set aside)...
    after = Insertion(0, "calc.py", Anchor(5, IF_LINE.text, " " * 12), before=False)
    made = inserted(replace_call(**at, new="seen.add(item)"), after)
    assert made.arguments == {**at, "new": "if item not in seen:\n            seen.add(item)"}
    assert json.loads(made.raw_arguments) == made.arguments  # the history shows the edit made
    # ...or copied the line first, then the lines to add: the line is kept once.
    copied = inserted(
        replace_call(**at, new="if item not in seen:\n  seen.add(item)\n  x = 1"), after
    )
    assert copied.arguments["new"] == (
        "if item not in seen:\n            seen.add(item)\n            x = 1"
    )
    # Nothing to add: old and new alike, which the tool refuses (no test run).
    assert inserted(replace_call(**at, new=IF_LINE.text), after).arguments["new"] == IF_LINE.text
    # Another call is not the insertion's.
    other = replace_call(path="calc.py", old="out = []", new="out = list()")
    assert inserted(other, after) is other


def test_the_indentation_after_a_line_is_its_blocks():
    go = ["func f(xs []int) {", "\tfor _, x := range xs {", "\t\tuse(x)", "\t}", "}"]
    assert indent_after(go, 2) == "\t\t" and indent_after(go, 3) == "\t\t"
    assert indent_after(DEDUPE.splitlines(), 5) == " " * 12
    assert indent_after(DEDUPE.splitlines(), 6) == " " * 12
    assert indent_after(DEDUPE.splitlines(), 2) == "    "


def test_a_line_is_added_only_where_a_statement_can_follow():
    lines = ["return x", "func Add(a, b int) int { return a - b }", "else:", "total = (",
             "raise ValueError", "x = 1"]  # fmt: skip
    suspects = [Suspect("a.py", n, t, 1.0, 1, 0) for n, t in enumerate(lines, start=1)]
    assert insertion(suspects, top=5) is None
    assert insertion(suspects, top=6) == Insertion(5, "a.py", Anchor(6, "x = 1", ""), before=False)
    assert insertion(SHARP, top=3) == Insertion(0, "calc.py", Anchor(5, IF_LINE.text, " " * 12),
                                                before=False)  # fmt: skip


def test_a_flat_ranking_picks_the_smallest_function_holding_its_top_line(tmp_path):
    assert flat(FLAT, top=3) and not flat(SHARP, top=3) and not flat((), top=3)
    reached = (Suspect("a.go", 3, "return a - b", 0.0, 0, 0, reached=True),)
    assert flat(reached, top=3)
    (tmp_path / "calc.py").write_text(AREA + "\n\n" + "def big():\n" + "    x = 1\n" * 40)
    found = small_functions(
        [("calc.py", 1, 5), ("calc.py", 8, 48), ("secret.py", 1, 2)],
        workspace=tmp_path,
        allowed=lambda rel: rel != "secret.py",
    )
    assert found == (AREA_FN,)  # the long one and the unwritable one left out
    outer = Function("calc.py", 1, 40, "x")
    assert function_of(FLAT, (outer, AREA_FN)) == AREA_FN
    assert function_of(FLAT, (Function("calc.py", 4, 4, "one line"),)) is None


def test_on_a_flat_ranking_the_second_sample_rewrites_the_function_whole(tmp_path):
    env = MemoryEnvironment(repo(AREA, AREA_TESTS))
    fixed = AREA_FN.text.replace("height = abs(w)", "height = abs(h)")
    model = ScriptedModel([
        call("replace", path="calc.py", old="return width * height",
             new="return width * height * 1.0"),  # wrong: undone
        call("replace", path="calc.py", old=AREA_FN.text, line=1, new=fixed),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = flat_opening(moves=True)
    assert start(agent, env).verification.passed
    assert env.files["calc.py"] == AREA.replace("height = abs(w)", "height = abs(h)")
    whole = model.requests[1]
    assert pins(whole) == {"path": "calc.py", "old": AREA_FN.text, "line": 1}
    assert whole["only"] == ("replace",) and whole["temperature"] is None
    # It shows the function, docstring and all, and what the failing test said.
    prompt = whole["messages"][-1]["content"]
    assert prompt.startswith("Look at this function (calc.py:1-5)") and AREA_FN.text in prompt
    assert "The failing test tests/test_calc.py::test_area says:\nAssertionError" in prompt


def test_a_flat_rankings_rewrite_that_did_not_fix_is_retried_warmer_then_the_lines(tmp_path):
    env = MemoryEnvironment(repo(AREA, AREA_TESTS))
    at = {"path": "calc.py"}
    model = ScriptedModel([
        call("replace", **at, old="return width * height", new="return width * height + 0"),
        call("replace", **at, old=AREA_FN.text, line=1, new=AREA_FN.text.replace("abs(w)", "w")),
        call("replace", **at, old=AREA_FN.text, line=1, new=AREA_FN.text.replace("abs", "")),
        call("replace", **at, old=FLAT[0].text, line=3, new="width = abs(w) + 0"),
        call("replace", **at, old=FLAT[1].text, line=4, new="height = abs(w) * 1"),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = flat_opening(moves=True)
    with pytest.raises(SamplesSpent):
        start(agent, env)
    asked = [
        (pins(r) and (pins(r)["old"], pins(r)["line"]), r["temperature"]) for r in model.requests
    ]
    assert asked == [
        (None, None), ((AREA_FN.text, 1), None), ((AREA_FN.text, 1), 1.0),
        ((FLAT[0].text, 3), None), ((FLAT[1].text, 4), None),
    ]  # fmt: skip
    assert env.files["calc.py"] == AREA  # every sample undone


def test_a_rewrite_that_gives_the_function_back_is_not_retried(tmp_path):
    env = MemoryEnvironment(repo(AREA, AREA_TESTS))
    at = {"path": "calc.py"}
    model = ScriptedModel([
        call("replace", **at, old="return width * height", new="return width * height + 0"),
        call("replace", **at, old=AREA_FN.text, line=1, new=AREA_FN.text),  # unchanged
        call("replace", **at, old=FLAT[0].text, line=3, new="width = abs(w) + 0"),
        call("replace", **at, old=FLAT[1].text, line=4, new="height = abs(h)"),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = flat_opening(moves=True)
    assert start(agent, env).verification.passed
    # No warmer rewrite, and the unchanged one ran no tests: the suite ran at the start, then
    # after the greedy edit, line 3's and the fix.
    assert [pins(r) and pins(r)["line"] for r in model.requests] == [None, 1, 3, 4]
    assert [c.arguments.get("line") for c in env.calls] == [None, 1, 3, 4]
    assert len(env.runs) == 4


def test_with_the_moves_off_the_samples_go_as_before_them(tmp_path):
    env = MemoryEnvironment(repo(AREA, AREA_TESTS))
    at = {"path": "calc.py"}
    model = ScriptedModel([
        call("replace", **at, old='"""The area of a w by h rectangle."""', new='"""Area."""'),
        call("replace", **at, old=FLAT[0].text, line=3, new="width = abs(w) + 0"),
        call("replace", **at, old=FLAT[1].text, line=4, new="height = abs(w) * 1"),
        call("replace", **at, old=FLAT[2].text, line=5, new="return width * height * 1"),
        call("replace", **at, old=FLAT[0].text, line=3, new="width = w"),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = flat_opening(moves=False)
    with pytest.raises(SamplesSpent):
        start(agent, env)
    asked = [(pins(r) and pins(r)["line"], r["temperature"]) for r in model.requests]
    assert asked == [(None, None), (3, None), (4, None), (5, None), (3, 1.0)]


def test_a_missing_statement_is_added_by_the_insertion_sample(tmp_path):
    env = MemoryEnvironment(repo(DEDUPE, DEDUPE_TESTS))
    at = {"path": "calc.py"}
    model = ScriptedModel([
        call("replace", **at, old="out = []", new="out = list()"),  # greedy: not a fix
        call("replace", **at, old=IF_LINE.text, line=5, new="if item in seen:"),
        call("replace", **at, old=APPEND.text, line=6, new="out.insert(0, item)"),
        call("replace", **at, old=IF_LINE.text, line=5, new="    seen.add(item)"),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(
        first_tools=EDITS, edit_samples=4, suspects=SHARP, converse=False, moves=True
    )
    assert start(agent, env).verification.passed
    assert env.files["calc.py"] == DEDUPE.replace(
        "            out.append", "            seen.add(item)\n            out.append"
    )


# A missing statement before the function ends, in each language the moves support: the line
# the ranking points at (1-based; it may continue a statement that began above it), and the
# source once the insertion is made before the `return` (`throw`, Rust's last expression).
BEFORE_RETURN = [
    ("python", "a.py", 5,
     "def f(x):\n    if not x:\n        return 0\n    return (x +\n            1)\n",
     "def f(x):\n    if not x:\n        return 0\n    x = x * 2\n"
     "    return (x +\n            1)\n"),
    ("node", "a.ts", 3,
     "function f(x: number): number {\n  if (x) return 1;\n  throw new Error('no');\n}\n",
     "function f(x: number): number {\n  if (x) return 1;\n  x = x * 2;\n"
     "  throw new Error('no');\n}\n"),
    ("go", "a.go", 4,
     "package a\n\nfunc F(x int) int {\n\treturn x + 1\n}\n",
     "package a\n\nfunc F(x int) int {\n\tx = x * 2\n\treturn x + 1\n}\n"),
    ("java", "A.java", 4,
     "class A {\n  int f(int x) {\n    if (x > 0) {\n      return x;\n    }\n"
     "    return 0;\n  }\n}\n",
     "class A {\n  int f(int x) {\n    if (x > 0) {\n      x = x * 2;\n      return x;\n    }\n"
     "    return 0;\n  }\n}\n"),
    ("rust", "a.rs", 3,
     "fn f(x: i32) -> i32 {\n    let y = x;\n    y + 1\n}\n",
     "fn f(x: i32) -> i32 {\n    let y = x;\n    let y = y * 2;\n    y + 1\n}\n"),
]  # fmt: skip
ADDED = {"python": "x = x * 2", "node": "x = x * 2;", "go": "x = x * 2", "java": "x = x * 2;",
         "rust": "let y = y * 2;"}  # fmt: skip


@pytest.mark.parametrize(("lang", "path", "line", "source", "fixed"), BEFORE_RETURN,
                         ids=[case[0] for case in BEFORE_RETURN])  # fmt: skip
def test_a_line_goes_before_a_return_at_its_indentation_in_every_language(
    tmp_path, lang, path, line, source, fixed
):
    ecosystem = ecosystem_of_source(path)
    assert ecosystem is not None
    (tmp_path / path).write_text(source)
    text = source.splitlines()[line - 1].strip()
    # The ranked line is part of a `return` (or is Rust's last expression), by the language's
    # own parser: the line goes before the statement's first line, not after the line.
    ranked = [Suspect(path, line, text, 1.0, 1, 0)]
    endings = with_endings(ranked, workspace=tmp_path, top=3, ending_of=ecosystem.ending_statement)
    where = insertion(endings, top=3)
    assert where is not None and where.before
    # The model's line, its own indentation aside (it copied the `return` line too).
    at = where.pins()["replace"]
    answer = replace_call(**at, new="  " + ADDED[lang] + "\n" + where.at.text)
    made = inserted(answer, where).arguments
    lines = source.splitlines(keepends=True)
    start = lines[made["line"] - 1]
    lines[made["line"] - 1] = start.replace(made["old"], made["new"], 1)
    assert "".join(lines) == fixed
    assert ecosystem.syntax_error("".join(lines).encode(), path) is None


def test_a_line_that_is_no_statement_of_its_own_takes_no_line_before_it():
    # `if (x) return 1;` holds a return that is not its own line's statement; a callback's
    # statement inside a `return` is its own; Python's `if x: return y` alike.
    js = b"function f(x) {\n  if (x) return 1;\n  return xs.map((y) => {\n    go(y);\n  });\n}\n"
    node = ecosystem_of_source("a.js")
    assert node is not None
    assert [node.ending_statement(js, "a.js", n) for n in (1, 2, 3, 4, 5)] == [
        None, None, 3, None, 3,
    ]  # fmt: skip
    py = ecosystem_of_source("a.py")
    assert py is not None
    assert py.ending_statement(b"def f(x):\n    if x: return 1\n    raise E\n", "a.py", 2) is None
    assert py.ending_statement(b"def f(x):\n    if x: return 1\n    raise E\n", "a.py", 3) == 3
    assert py.ending_statement(b"def f(:\n", "a.py", 1) is None  # no parse, no line
