"""The search for a small model's first edit in-process (worker/search/sampling.FirstEdits):
sampled first edits on the original tree, pointed and pinned at suspect lines, warmer retries,
second choices, the partial fix kept, converse off, and what the progress lines say of them.
`Agent.run` against the doubles of tests/loop_doubles.py: a scripted model that answers only
what a json_schema endpoint could (the allowed tools, the pinned arguments, second choices
where asked), and files whose tests run as real Python. The real-part tests of each aid are in
test_search_aids.py."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from tests.loop_doubles import (
    BUGGY,
    FIXED,
    FIXED_LINE,
    LINE,
    TESTS,
    WRONG,
    WRONG_LINE,
    MemoryEnvironment,
    ScriptedModel,
    call,
    edit,
    make_agent,
    repo,
    start,
    unified,
)
from worker.llm.types import ModelReply, SecondChoice, ToolCall
from worker.loop.endings import BudgetExhausted, SamplesSpent
from worker.loop.turns import StepInfo
from worker.search.sampling import FirstEdits
from worker.search.suspects import MAX_TEXT, Suspect

SUSPECTS = (
    Suspect(
        "calc.py",
        2,
        "return sum(v) / (len(v) - 1)",
        1.0,
        1,
        0,
        " 1| def mean(v):\n>2|     return sum(v) / (len(v) - 1)",
    ),  # fmt: skip
    Suspect("calc.py", 1, "def mean(v):", 0.7, 1, 1),
)
# The arguments a sample pointed at each suspect is pinned to (a replace of that line, whole).
AT_2 = {"path": "calc.py", "old": "return sum(v) / (len(v) - 1)", "line": 2}
AT_1 = {"path": "calc.py", "old": "def mean(v):", "line": 1}
EDITS = ("replace", "apply_patch")
PATCH_FIX = call("apply_patch", patch=unified("calc.py", BUGGY, FIXED))
# A wrong first edit of line 1: the samples after it are pointed at line 2 only.
OF_LINE_1 = edit("def mean(v):", "def mean(v, k=1):")


def pinned(pins: dict[str, Any], new: str) -> ModelReply:
    """A pinned sample's answer: a replace with the pinned arguments, `new` the model's."""
    return call("replace", **pins, new=new)


def nearly(reply: ModelReply, *news: str) -> ModelReply:
    """`reply` (one replace) with second choices, likeliest first: the same call with `new`
    each time one of `news`, as a runner-up token spells it (the pinned arguments kept)."""
    answer = reply.tool_calls[0]
    seconds = tuple(
        SecondChoice(
            call=ToolCall(id="n", name=answer.name, arguments={**(answer.arguments or {}),
                          "new": new}, raw_arguments=""),
            probability=0.5 / (i + 1), was=" -", token=" +",
        )
        for i, new in enumerate(news)
    )  # fmt: skip
    return replace(reply, alternatives=seconds)


def events(tmp_path, kind: str) -> list[dict[str, Any]]:
    return [e for e in map(json.loads, (tmp_path / "trace.jsonl").open()) if e["type"] == kind]


def test_first_tools_bind_the_first_reply_only(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([edit(LINE, WRONG_LINE), edit(WRONG_LINE, FIXED_LINE)])
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",))
    assert start(agent, env).verification.passed
    assert [r["only"] for r in model.requests] == [("replace",), None]


def test_first_edits_are_sampled_on_the_original_tree_until_one_fixes(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([edit(LINE, WRONG_LINE),
                           edit(LINE, WRONG_LINE),  # the same edit: skipped
                           edit(LINE, FIXED_LINE)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=4)
    result = start(agent, env)
    assert (
        result.verification.passed and env.files["calc.py"] == FIXED and "1.0" not in result.patch
    )
    # Every sample is asked with the same messages (the server's prompt cache holds), warmer
    # after the first, and must be an edit.
    first = model.requests[0]["messages"]
    assert all(r["messages"] == first for r in model.requests)
    assert [r["temperature"] for r in model.requests] == [None, 0.7, 0.7]
    assert all(r["only"] == ("replace",) for r in model.requests)
    # The run may go on as a conversation after them: every tool stays described.
    assert all(r["tools"] == ["read_file", "replace", "apply_patch"] for r in model.requests)


def test_a_sampled_answer_that_changes_nothing_does_not_use_up_a_sample(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([edit(LINE, LINE),  # old and new the same: no change
                           edit(LINE, WRONG_LINE), edit(LINE, FIXED_LINE)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=2)
    assert start(agent, env).verification.passed and env.files["calc.py"] == FIXED
    # Two edits were sampled although three answers were needed: all on the original prompt.
    first = model.requests[0]["messages"]
    assert len(model.requests) == 3 and all(r["messages"] == first for r in model.requests)
    assert all(r["only"] == ("replace",) for r in model.requests)


def test_when_no_sample_fixes_the_first_is_shown_undone_and_not_applied_again(tmp_path):
    env = MemoryEnvironment(repo())
    first = edit(LINE, WRONG_LINE)
    model = ScriptedModel([first, edit(LINE, "    return sum(v) * 1.0 / (len(v) - 1)"),
                           edit(LINE, WRONG_LINE),  # sent again
                           edit(LINE, FIXED_LINE)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=2)
    assert start(agent, env).verification.passed
    # After the samples, the history holds the first one's turn, told it was undone, and the
    # tree is the original one: the second sample left no trace.
    history = model.requests[2]["messages"]
    assert len(history) == 4 and history[2] == first.assistant_message()
    assert "the harness undid it: the files are as they were at the start" in history[3]["content"]
    assert "* 1.0" not in str(history) and env.files["calc.py"] == FIXED
    assert model.requests[2]["only"] is None and model.requests[2]["temperature"] is None
    # The same edit sent again is refused without being made.
    refused = model.requests[3]["messages"][-1]["content"]
    assert "already made and undone" in refused


TWO_BUGS = "def total(v):\n    return sum(v) + 1\n\n\n" + BUGGY
TWO_TESTS = TESTS.replace("import mean", "import mean, total") + (
    "\n\ndef test_total():\n    assert total([1, 2]) == 3\n"
)


def test_a_sample_that_fixes_part_of_the_failures_is_made_again_and_built_on(tmp_path):
    env = MemoryEnvironment(repo(TWO_BUGS, TWO_TESTS))
    assert env.run_tests().failing() == 2
    better = edit(LINE, FIXED_LINE)  # fixes 1 of the 2
    model = ScriptedModel([edit(LINE, WRONG_LINE), better,
                           edit("    return sum(v) + 1", "    return sum(v)")])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=2)
    result = start(agent, env)
    assert (
        result.verification.passed
        and env.files["calc.py"] == "def total(v):\n    return sum(v)\n\n\n" + FIXED
    )
    # The loop went on from the better sample, applied, with its turn in the history.
    history = model.requests[2]["messages"]
    assert len(history) == 4 and "1.0 * sum" not in str(history)
    assert history[2] == better.assistant_message()


def test_samples_after_the_first_are_pointed_at_the_suspect_lines_in_turn(tmp_path):
    env = MemoryEnvironment(repo())
    # apply_patch alone: the samples are pointed, not pinned (a pin is a replace).
    added = f"def mean(v):\n    v = list(v)\n{LINE}\n"  # a line added, none taken out
    adds = call("apply_patch", patch=unified("calc.py", BUGGY, added))
    model = ScriptedModel([adds, replace(adds), PATCH_FIX])  # the second, a duplicate
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("apply_patch",), edit_samples=4, suspects=SUSPECTS)
    assert start(agent, env).verification.passed and env.files["calc.py"] == FIXED
    # The greedy first edit is asked without the suspects (with samples to point, the list
    # stays out of the first message).
    assert "calc.py:2" not in model.requests[0]["messages"][1]["content"]
    # Each later sample is asked at temperature 0 with one more message pointing at the next
    # suspect (a duplicate answer still moves on), and the prompt before it is unchanged.
    hints = [r["messages"][-1]["content"] for r in model.requests[1:]]
    assert hints[0].startswith("Look at line calc.py:2: return sum(v)")
    assert hints[1].startswith("Look at line calc.py:1: def mean(v):")
    assert [r["temperature"] for r in model.requests] == [None, None, None]
    assert [r["pins"] for r in model.requests] == [None, None, None]
    first = model.requests[0]["messages"]
    assert all(r["messages"][: len(first)] == first for r in model.requests)


def test_top_suspects_get_warmer_retries_the_likelier_more_then_the_plain_prompt_warms(tmp_path):
    env = MemoryEnvironment(repo())
    # The greedy edit of line 2, spaced its own way (replace matches it all the same).
    spaced = edit("    return sum(v)/(len(v) - 1)", WRONG_LINE)
    lines = [1, 2, 1, 2, 2, 1]  # the pointed samples' lines, as asserted below
    wrong = [
        pinned(AT_1, f"def mean(v, k={n}):") if at == 1 else
        pinned(AT_2, f"return {n} * sum(v) / (len(v) - 1)")
        for n, at in enumerate(lines, start=3)
    ]  # fmt: skip
    model = ScriptedModel([spaced, *wrong, edit(LINE, FIXED_LINE)])
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=EDITS, edit_samples=8, suspects=SUSPECTS)
    with agent.trace:
        assert start(agent, env).verification.passed
    assert env.files["calc.py"] == FIXED
    assert len(events(tmp_path, "sample_undone")) == 7  # the greedy edit was made, then undone
    # The greedy edit changed line 2 (spaced its own way), so the first pointed sample goes to
    # line 1; then the warmer retries, line 2 included, the first-ranked line (2) more often
    # than the second (HOT_RETRIES, the retries of a third suspect left out); with none left,
    # the plain prompt, warmer.
    hints = [r["messages"][-1]["content"] for r in model.requests[1:7]]
    assert [h.split(":")[1] for h in hints] == [str(at) for at in lines]
    assert all(h.startswith("Look at line calc.py:") for h in hints)
    assert model.requests[7]["messages"] == model.requests[0]["messages"]
    # A top suspect's retry is its first prompt again, hotter (RETRY_TEMPERATURE).
    assert [r["temperature"] for r in model.requests] == [None, None] + [1.0] * 5 + [0.7]
    assert hints[2] == hints[0] and hints[1] == hints[3] == hints[4]


def test_without_samples_the_first_message_names_the_suspects_in_order(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([edit(LINE, FIXED_LINE)])
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(suspects=SUSPECTS)
    assert start(agent, env).verification.passed
    task = model.requests[0]["messages"][1]["content"]
    row = "calc.py:2: return sum(v) / (len(v) - 1)   (run by 1 of 1 failing tests, 0 passing)"
    assert row in task and task.index("calc.py:2:") < task.index("calc.py:1:")


# Lines too long to show whole in the list: a sample pointed at one cannot pin it.
NOTE = "  # " + "the sum of the values over their count, " * 5
LONG = f"def mean(v):{NOTE}\n{LINE}{NOTE}\n\n\ndef first(v):\n    return v[0]\n\n\ndef last(v):\n"
LONG += "    return v[0]\n"


def test_a_pointed_samples_replace_of_the_pointed_file_carries_the_pointed_line(tmp_path):
    env = MemoryEnvironment(repo(LONG))
    cut = [Suspect("calc.py", n, LONG.splitlines()[n - 1].strip()[:MAX_TEXT], 1.0, 1, 0)
           for n in (2, 1)]  # fmt: skip
    assert all(len(s.text) == MAX_TEXT for s in cut)
    fits_twice = {"path": "./calc.py", "old": "return v[0]", "new": "return v[-1]"}
    model = ScriptedModel([call("replace", **fits_twice), call("replace", **fits_twice),
                           call("replace", path="other.py", old="a", new="b")])  # fmt: skip
    agent = make_agent(model, env, tmp_path, max_steps=3)
    agent.opening = FirstEdits(first_tools=EDITS, edit_samples=2, suspects=cut)
    with agent.trace, pytest.raises(BudgetExhausted):
        start(agent, env)
    seen = [c.arguments for c in env.calls]
    # The greedy answer is run as sent; the pointed one gets line 2 (the places are the tool's
    # to pick from); pointed at calc.py:1, an edit of another file gets no line.
    assert seen[0] == fits_twice and seen[1] == {**fits_twice, "line": 2}
    assert "line" not in seen[2]
    # Neither place of old holds line 2, so the tool refuses both as it would without it.
    said = [e["observation"] for e in events(tmp_path, "tool_call")]
    assert said[0].startswith("old appears 2 times in the file (lines 6, 10)")
    assert said[1] == said[0]
    assert said[2].startswith("no such file: 'other.py'") and env.files == env.original
    assert [r["pins"] for r in model.requests] == [None, None, None]
    assert model.requests[2]["messages"][-1]["content"].startswith("Look at line calc.py:1:")


LONG_DEF = "def mean(v):" + NOTE


def test_a_pointed_sample_is_a_replace_of_the_pointed_line_that_the_model_only_completes(
    tmp_path,
):
    env = MemoryEnvironment(repo(f"{LONG_DEF}\n{LINE}\n"))
    line_2 = replace(SUSPECTS[0], around=f" 1| {LONG_DEF}\n>2| {LINE}")
    long_line = Suspect("calc.py", 1, LONG_DEF[:MAX_TEXT], 0.7, 1, 1)  # cut short in the list
    model = ScriptedModel([edit(LINE, "    v = list(v)\n" + LINE),  # takes no line out
                           pinned(AT_2, "return 2 * sum(v) / (len(v) - 1)"),
                           edit(LINE, FIXED_LINE)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=EDITS, edit_samples=4, suspects=(line_2, long_line))
    assert start(agent, env).verification.passed
    greedy, pointed, cut = model.requests
    assert greedy["pins"] is None and greedy["only"] == EDITS
    # Pointed at line 2: only replace, with path, old (the whole line) and line fixed.
    assert pointed["only"] == ("replace",)
    assert pointed["pins"] == {
        "replace": {"path": "calc.py", "old": "return sum(v) / (len(v) - 1)", "line": 2}
    }
    hint = pointed["messages"][-1]["content"]
    assert "Replace that line with what it should be" in hint
    assert "\n>2|     return sum(v)" in hint  # the lines around it, the line marked
    # A line cut short could not be matched in the file: that sample is pointed, not pinned.
    assert cut["pins"] is None and cut["only"] == EDITS
    assert cut["messages"][-1]["content"].startswith("Look at line calc.py:1:")


# Three runs with second choices: each a script, and the opening it is answered in.
Scenario = tuple[list[ModelReply], FirstEdits]
PLUS = "return sum(v) / (len(v) + {})".format
# Twelve wrong edits of one size: as model steps, stuck detection (10 idle) would end a run.
TWELVE = [f"return {i}.{j} * sum(v) / (len(v) - 1)" for i in range(2, 8) for j in (5, 7)]
# A replace of line 2 that keeps the line (adds one before it): as the first answer, it leaves
# every suspect to point at; as the answer of a sample pinned at line 2, it is the same edit.
KEEPS_LINE_2 = pinned(AT_2, "v = list(v)\n" + LINE)
FIXED_AT_LINE_1 = "def mean(v):\n    return sum(v) / len(v)\n" + LINE + "\n"


def with_seconds(most: int) -> FirstEdits:
    """Three samples, pointed at SUSPECTS, up to `most` second choices after each pinned one."""
    return FirstEdits(first_tools=EDITS, edit_samples=3, suspects=SUSPECTS, second_choices=most)


def same_edit_twice() -> Scenario:
    """The sample pinned at line 2 answers the greedy edit again; of its second choices one
    cannot be Python and one is wrong; the sample pinned at line 1 fixes."""
    return [
        KEEPS_LINE_2,
        nearly(pinned(AT_2, "v = list(v)\n" + LINE),  # the same edit again
               "v = list(v) " + LINE,  # the line break swapped: cannot be Python, never run
               "v = list(v)\n    return sum(v) / (len(v) + 1)"),
        pinned(AT_1, "def mean(v):\n    return sum(v) / len(v)"),
    ], with_seconds(3)  # fmt: skip


def tried_before_then_fixed() -> Scenario:
    """Line 1 edited first; the sample pinned at line 2 and its second choice are wrong; its
    warmer retry's likeliest second choice is that one, the next fixes."""
    return [
        OF_LINE_1,
        nearly(pinned(AT_2, PLUS(1)), PLUS(2)),
        nearly(pinned(AT_2, PLUS(3)), PLUS(2), PLUS(0)),
    ], with_seconds(1)  # fmt: skip


def twelve_wrong() -> Scenario:
    """Line 1 edited first; the sample pinned at line 2 is wrong and so are its twelve second
    choices, all of one size; its warmer retry fixes."""
    return [
        OF_LINE_1,
        nearly(pinned(AT_2, WRONG_LINE.strip()), *TWELVE),
        pinned(AT_2, FIXED_LINE.strip()),
    ], with_seconds(len(TWELVE))  # fmt: skip


def played(scenario: Scenario, tmp_path) -> tuple[ScriptedModel, MemoryEnvironment, Any]:
    script, opening = scenario
    model, env = ScriptedModel(script), MemoryEnvironment(repo())
    agent = make_agent(model, env, tmp_path)
    agent.opening = opening
    return model, env, agent


def test_a_pinned_samples_second_choices_are_tried_without_a_model_call(tmp_path):
    model, env, agent = played(same_edit_twice(), tmp_path)
    with agent.trace:
        result = start(agent, env)
    assert result.verification.passed and env.files["calc.py"] == FIXED_AT_LINE_1
    # Asked for with the pinned samples only; the one that parses was run by the tests alone
    # (no model call) and, not being a model answer, left the third sample its turn.
    assert [r["ask_second_choices"] for r in model.requests] == [False, True, True]
    seconds = events(tmp_path, "second_choice")
    assert len(seconds) == 1 and seconds[0]["sample"] == 2 and seconds[0]["token"] == " +"
    undone = events(tmp_path, "sample_undone")
    assert [e["second"] for e in undone] == [False, True]  # the same edit twice is one try


def test_second_choices_already_tried_make_way_for_the_next_likeliest(tmp_path):
    model, env, agent = played(tried_before_then_fixed(), tmp_path)
    with agent.trace:
        assert start(agent, env).verification.passed
    # The warmer retry of line 2: its likeliest second choice was tried after the sample
    # before, so the next one, the fix, was tried.
    assert env.files["calc.py"] == "def mean(v):\n    " + PLUS(0) + "\n"
    assert [e["sample"] for e in events(tmp_path, "second_choice")] == [2, 3]


def test_second_choices_never_count_as_steps_without_progress(tmp_path):
    model, env, agent = played(twelve_wrong(), tmp_path)
    assert start(agent, env).verification.passed and len(model.requests) == 3
    assert env.files["calc.py"] == FIXED


def test_without_converse_the_run_ends_when_no_sample_fixed(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([edit(LINE, WRONG_LINE),
                           edit(LINE, "    return sum(v) * 1.0 / (len(v) - 1)")])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=2, converse=False)
    with pytest.raises(SamplesSpent, match=r"no sampled first edit fixed .* \(2 answers\)"):
        start(agent, env)
    # The model was asked for the two samples only, and the tree is as it was.
    assert len(model.requests) == 2 and env.files["calc.py"] == BUGGY
    # No reply could call another tool, so the prompt describes the edit tool alone.
    assert all(r["tools"] == ["replace"] for r in model.requests)


def test_a_suspect_line_a_diff_took_out_is_skipped(tmp_path):
    env = MemoryEnvironment(repo())
    patch = f"--- a/calc.py\n+++ b/calc.py\n@@ -2 +2 @@\n-{LINE}\n+    x\n"
    model = ScriptedModel([call("apply_patch", patch=patch), PATCH_FIX])
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("apply_patch",), edit_samples=2, suspects=SUSPECTS)
    assert start(agent, env).verification.passed
    # The greedy diff took line 2 out (made, then undone), so the next sample is pointed past it.
    assert model.requests[1]["messages"][-1]["content"].startswith("Look at line calc.py:1:")


# -- the progress lines: one a sample, its second choices counted on it ------------------------

FAILING = "patched; 1 passed, 1 failed, 0 errors, 0 skipped in 0.1s"


def progress(agent) -> list[StepInfo]:
    lines: list[StepInfo] = []
    agent.on_step = lines.append
    return lines


def test_a_samples_second_choices_are_counted_on_its_one_progress_line(tmp_path):
    _, env, agent = played(twelve_wrong(), tmp_path)
    lines = progress(agent)
    assert start(agent, env).verification.passed
    # One line a model answer: thirteen edits were tried by the tests in step 2.
    assert [(i.step, i.tool, i.target) for i in lines] == [
        (1, "replace", "calc.py"), (2, "replace", "calc.py"), (3, "replace", "calc.py"),
    ]  # fmt: skip
    assert lines[0].outcome == FAILING
    assert lines[1].outcome == FAILING + "; 12 second choices tried, none fixed"
    assert lines[2].outcome == "patched; 2 passed, 0 failed, 0 errors, 0 skipped in 0.1s"


def test_a_second_choice_that_fixes_is_said_on_its_samples_line(tmp_path):
    _, env, agent = played(tried_before_then_fixed(), tmp_path)
    lines = progress(agent)
    assert start(agent, env).verification.passed
    assert [i.step for i in lines] == [1, 2, 3]
    assert lines[1].outcome == FAILING + "; 1 second choice tried, none fixed"
    # The fix came from a second choice: the line of the sample's own answer says so.
    assert lines[2].outcome == FAILING + "; 1 second choice tried, the last fixed"


def test_an_answer_tried_before_says_so_on_its_second_choices_line(tmp_path):
    _, env, agent = played(same_edit_twice(), tmp_path)
    lines = progress(agent)
    assert start(agent, env).verification.passed
    assert [i.step for i in lines] == [1, 2, 3]
    assert lines[1].outcome == "answer tried before; 1 second choice tried, none fixed"


def test_an_answer_tried_before_with_several_second_choices_is_one_line(tmp_path):
    # Found trying tinycss2: step 6 printed its second choices' lines but the last, then the
    # summary.
    wrong = [f"v = list(v)\n    return sum(v) / (len(v) + {n})" for n in (1, 2, 3)]
    script = [KEEPS_LINE_2, nearly(pinned(AT_2, "v = list(v)\n" + LINE), *wrong),
              pinned(AT_1, "def mean(v):\n    return sum(v) / len(v)")]  # fmt: skip
    _, env, agent = played((script, with_seconds(3)), tmp_path)
    lines = progress(agent)
    assert start(agent, env).verification.passed
    assert [i.step for i in lines] == [1, 2, 3]
    assert lines[1].outcome == "answer tried before; 3 second choices tried, none fixed"


def test_a_sample_that_ends_the_run_is_said_as_it_was(tmp_path):
    # The clean check fails under the sample's fix (the sandbox went away): the run ends inside
    # the sample, and its held line is said as it was, with no second choices made up.
    model = ScriptedModel([OF_LINE_1, pinned(AT_2, FIXED_LINE.strip())])
    env = MemoryEnvironment(repo())
    agent = make_agent(model, env, tmp_path)
    agent.opening = with_seconds(5)

    def gone(patch: str) -> Any:
        raise RuntimeError("the sandbox went away")

    env.verify = gone  # type: ignore[method-assign]
    lines = progress(agent)
    with pytest.raises(RuntimeError, match="went away"):
        start(agent, env)
    assert [i.step for i in lines] == [1, 2]
    assert lines[1].outcome == "patched; 2 passed, 0 failed, 0 errors, 0 skipped in 0.1s"


# -- the double itself: a scripted reply no json_schema endpoint sends fails the test ---------


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (pinned({**AT_2, "line": 3}, "return sum(v) / len(v)"), "without the pinned"),
        (call("apply_patch", patch=unified("calc.py", BUGGY, FIXED)), "not one of"),
        # second_choices is 0: none are asked for
        (nearly(pinned(AT_2, "return 0"), "return 1"), "second choices, which the request did"),
    ],
)
def test_the_double_answers_a_pinned_sample_only_as_the_schema_allows(tmp_path, reply, why):
    env = MemoryEnvironment(repo())
    agent = make_agent(ScriptedModel([OF_LINE_1, reply, edit(LINE, FIXED_LINE)]), env, tmp_path)
    agent.opening = FirstEdits(first_tools=EDITS, edit_samples=3, suspects=SUSPECTS)
    with pytest.raises(AssertionError, match=f"request 2 .*{why}"):
        start(agent, env)


def test_the_doubles_tests_run_the_code(tmp_path):
    # A wrong edit fails because the code is wrong, whatever its text: no substring decides.
    assert MemoryEnvironment(repo(WRONG)).run_tests().failing() == 1
    spelled_otherwise = FIXED.replace("len(v)", "len(list(v))")
    assert MemoryEnvironment(repo(spelled_otherwise)).run_tests().failing() == 0
    broken = MemoryEnvironment(repo("def mean(v):\n    return (\n")).run_tests()
    assert broken.summary is not None and broken.summary.errors == 1  # calc.py does not import


def test_a_pinned_sample_cut_off_is_asked_again_warmer_and_still_pinned(tmp_path):
    env = MemoryEnvironment(repo())
    runaway = ToolCall(id="x", name="replace", arguments=None, raw_arguments='{"new": "((((',
                       error="unterminated string")  # fmt: skip
    cut = replace(pinned(AT_2, ""), tool_calls=(runaway,), finish_reason="length")
    model = ScriptedModel([OF_LINE_1, cut, pinned(AT_2, FIXED_LINE.strip())])
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=EDITS, edit_samples=2, suspects=SUSPECTS)
    assert start(agent, env).verification.passed and env.files["calc.py"] == FIXED
    pointed, again = model.requests[1:]
    # The retry is the pointed sample's own call, warmer: the same tools and pins, not the
    # whole schema (where a pinned sample could come back as any tool or a final answer).
    assert (
        (again["only"], again["pins"])
        == (pointed["only"], pointed["pins"])
        == (("replace",), {"replace": AT_2})
    )
    assert (pointed["temperature"], again["temperature"]) == (None, 0.7)
    assert "was cut off" in again["messages"][-1]["content"]
