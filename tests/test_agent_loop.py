"""The loop in-process: `Agent.run` against a scripted model object and an in-memory environment
(no Docker, no HTTP). Budgets, stuck detection, claims, verification and compaction, as the loop
decides them; the real-part tests of the same behaviour are in test_fix_cli.py."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from policies.budgets import Budgets
from sandbox.junit import TestFailure, TestSummary
from sandbox.results import CommandResult
from sandbox.testrun import TestRun
from sandbox.verdict import TOKEN_PROPERTY
from tools.base import Observation
from tools.spec import ToolSpec
from worker.llm.types import (
    PLAIN,
    CallOutOfTime,
    CallSettings,
    ContextTooLong,
    ModelReply,
    SecondChoice,
    ToolCall,
    Usage,
)
from worker.loop import prompts
from worker.loop.agent import Agent
from worker.loop.endings import BudgetExhausted, GaveUp, SamplesSpent, Stuck
from worker.loop.history import COLLAPSED, history_chars
from worker.loop.trace import Trace
from worker.search.sampling import FirstEdits
from worker.search.suspects import MAX_TEXT as MAX_SUSPECT_TEXT
from worker.search.suspects import Suspect

BUGGY = "def mean(v):\n    return sum(v) / (len(v) - 1)\n"
FIXED = "def mean(v):\n    return sum(v) / len(v)\n"
Reply = ModelReply | BaseException


def call(name: str, **arguments: Any) -> ModelReply:
    ids = call.__dict__.setdefault("ids", itertools.count(1))
    tool_call = ToolCall(id=f"c{next(ids)}", name=name, arguments=arguments, raw_arguments="")
    return ModelReply(
        content=None, tool_calls=(tool_call,), usage=Usage(prompt_tokens=50, completion_tokens=10),
        finish_reason="tool_calls", mode="native",
    )  # fmt: skip


def say(text: str) -> ModelReply:
    return ModelReply(
        content=text, tool_calls=(), usage=Usage(prompt_tokens=50, completion_tokens=10),
        finish_reason="stop", mode="native",
    )  # fmt: skip


class ScriptedModel:
    """Replays replies (or raises them); records every request; fails on a call past the end."""

    def __init__(self, script: Sequence[Reply]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[ToolSpec],
        settings: CallSettings = PLAIN,
        *,
        timeout_s: float | None = None,
    ) -> ModelReply:
        self.requests.append(
            {
                "messages": [dict(m) for m in messages],
                "temperature": settings.temperature,
                "timeout_s": timeout_s,
                "only": settings.only,
                "pins": settings.pins,
                "second_choices": settings.second_choices,
                "tools": [tool.name for tool in tools],
            }
        )
        assert self.script, "the loop asked the model more often than the script allows"
        reply = self.script.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply


def suite_run(files: dict[str, str], suite: Callable[[dict[str, str]], dict[str, str]]) -> TestRun:
    """A whole-suite run with a stamped JUnit summary, from {test id: outcome}."""
    outcomes = suite(files)
    failed = [t for t, o in outcomes.items() if o == "failed"]
    summary = TestSummary(
        passed=sum(o == "passed" for o in outcomes.values()),
        failed=len(failed),
        errors=0,
        skipped=sum(o == "skipped" for o in outcomes.values()),
        failures=tuple(
            TestFailure(test_id=t, kind="failure", message="assert 2.0 == 3", traceback="")
            for t in failed
        ),
        outcomes=outcomes,
        properties={TOKEN_PROPERTY: "tok"},
    )
    result = CommandResult(
        command="pytest", exit_code=1 if failed else 0, duration_s=0.1, timed_out=False,
        oom_killed=False, output="", output_bytes=0, truncated=False,
    )  # fmt: skip
    return TestRun(
        command="pytest", result=result, summary=summary, expects_junit=True, token="tok"
    )


def mean_suite(files: dict[str, str]) -> dict[str, str]:
    ok = "len(v) - 1" not in files["calc.py"]
    return {"tests/test_calc.py::test_mean": "passed" if ok else "failed",
            "tests/test_calc.py::test_sum": "passed"}  # fmt: skip


class MemoryEnvironment:
    """Files in a dict; `read_file` and `write_file` tools; tests computed from the files."""

    def __init__(self, files: dict[str, str], suite=mean_suite, clean_copy_breaks=False) -> None:
        self.original = dict(files)
        self.files = dict(files)
        self.suite = suite
        self.clean_copy_breaks = clean_copy_breaks
        self.verifications = 0
        self.before_edit: dict[str, str] = {}
        self.ahead: list[str] = []  # the patches whose clean run was started ahead
        self.ends_at: float | None = None  # when the loop said test runs must end by

    def tool_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(name="read_file", description="read", parameters={"type": "object"}),
            ToolSpec(name="write_file", description="write", parameters={"type": "object"}),
        ]

    def call_tool(self, call: ToolCall) -> Observation:
        args = call.arguments or {}
        if call.name == "read_file":
            return Observation(ok=True, text=self.files.get(args["path"], "no such file"))
        self.before_edit = {args["path"]: self.files.get(args["path"], "")}
        self.files[args["path"]] = args["content"]
        return Observation(ok=True, text="written", changed_files=(args["path"],))

    def undo_last_edit(self) -> bool:
        before, self.before_edit = self.before_edit, {}
        self.files.update(before)
        return bool(before)

    def undo_all_edits(self) -> bool:
        changed, self.files, self.before_edit = self.files != self.original, dict(self.original), {}
        return changed

    def end_by(self, at: float) -> None:
        self.ends_at = at

    def run_tests(self) -> TestRun:
        return suite_run(self.files, self.suite)

    def diff(self) -> str:
        changed = [p for p in self.files if self.files[p] != self.original.get(p)]
        return "".join(f"--- a/{p}\n+++ b/{p}\n+{self.files[p]}" for p in changed)

    def verify_ahead(self, patch: str) -> None:
        self.ahead.append(patch)

    def verify(self, patch: str) -> TestRun:
        self.verifications += 1
        files = self.original if self.clean_copy_breaks else self.files
        return suite_run(files, self.suite)


def make_agent(model: ScriptedModel, env: MemoryEnvironment, tmp_path, **budgets: Any) -> Agent:
    trace = Trace(path=tmp_path / "trace.jsonl")
    return Agent(model=model, env=env, budgets=Budgets(**budgets), trace=trace)


def start(agent: Agent, env: MemoryEnvironment):
    return agent.run("make the tests pass", env.run_tests(), listing="calc.py\ntests/")


def test_a_fix_is_verified_on_the_clean_copy_and_ends_the_loop(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("read_file", path="calc.py"),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    result = start(agent, env)
    assert result.fixed and env.verifications == 1
    assert result.verdict is not None and result.verdict.rule == "junit"
    assert agent.usage.steps == 2 and agent.usage.tokens == 120
    assert "test_mean" in model.requests[0]["messages"][1]["content"]


def test_the_step_budget_ends_the_run_before_another_call(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY, "a.py": "", "b.py": "", "c.py": ""})
    model = ScriptedModel([call("read_file", path=p) for p in ("a.py", "b.py", "c.py", "x")])
    agent = make_agent(model, env, tmp_path, max_steps=3)
    with pytest.raises(BudgetExhausted, match="step"):
        start(agent, env)
    assert len(model.requests) == 3 and agent.usage.steps == 3


def test_the_token_budget_counts_prompt_and_completion(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY, "a.py": "", "b.py": ""})
    model = ScriptedModel([call("read_file", path="a.py"), call("read_file", path="b.py")])
    agent = make_agent(model, env, tmp_path, max_tokens=100)
    with pytest.raises(BudgetExhausted, match="token"):
        start(agent, env)
    assert len(model.requests) == 2  # 60 tokens, then 120 > 100: no third call


def test_the_time_left_bounds_each_call_and_a_cut_call_is_a_budget(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([CallOutOfTime("the call ran out of time")])
    agent = make_agent(model, env, tmp_path, max_wall_s=30)
    with pytest.raises(BudgetExhausted):
        start(agent, env)
    assert 0 < model.requests[0]["timeout_s"] <= 30


def test_a_repeated_call_is_nudged_warmer_then_stopped(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("read_file", path="calc.py") for _ in range(6)])
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(Stuck, match="repeated the same read_file"):
        start(agent, env)
    nudged = next(i for i, r in enumerate(model.requests) if "same call" in str(r["messages"]))
    assert model.requests[nudged]["temperature"] == 0.7
    assert model.requests[0]["temperature"] is None
    # ... and that reply may not call the repeated tool (json_schema mode enforces it).
    assert "read_file" not in model.requests[nudged]["only"]
    assert model.requests[nudged]["only"] == ("write_file",)
    assert model.requests[0]["only"] is None


def test_first_tools_bind_the_first_reply_only(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("write_file", path="calc.py", content=BUGGY + "# wrong\n"),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("write_file",))
    assert start(agent, env).fixed
    assert [r["only"] for r in model.requests] == [("write_file",), None]


def test_verify_ahead_starts_each_edits_clean_run_with_the_patch_of_that_edit(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("write_file", path="calc.py", content=BUGGY + "# wrong\n"),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.verify_ahead = True
    assert start(agent, env).fixed
    assert env.ahead == [
        "--- a/calc.py\n+++ b/calc.py\n+" + BUGGY + "# wrong\n",
        "--- a/calc.py\n+++ b/calc.py\n+" + FIXED,
    ]
    assert env.verifications == 1


def test_without_verify_ahead_no_clean_run_starts_before_the_tests_say_fixed(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("write_file", path="calc.py", content=BUGGY + "# wrong\n"),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    assert start(make_agent(model, env, tmp_path), env).fixed
    assert env.ahead == [] and env.verifications == 1


def test_saying_done_while_tests_fail_is_told_once_then_ends_the_run(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([say("All fixed."), say("Really, all fixed.")])
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(GaveUp):
        start(agent, env)
    told = model.requests[1]["messages"][-1]["content"]
    assert told.startswith(prompts.FALSE_CLAIM.split("{")[0][:40]) and env.verifications == 0


def test_a_fix_that_fails_on_the_clean_copy_is_not_accepted(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY}, clean_copy_breaks=True)
    model = ScriptedModel([call("write_file", path="calc.py", content=FIXED), say("Done."),
                           say("Done!")])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(GaveUp):
        start(agent, env)
    assert env.verifications >= 1
    assert "re-ran the tests on a clean copy" in model.requests[1]["messages"][-1]["content"]


def test_a_patch_that_makes_the_failing_test_vanish_is_never_verified(tmp_path):
    def vanishing(files: dict[str, str]) -> dict[str, str]:
        if "skip" in files["calc.py"]:
            return {"tests/test_calc.py::test_sum": "passed"}
        return mean_suite(files)

    env = MemoryEnvironment({"calc.py": BUGGY}, suite=vanishing)
    model = ScriptedModel([call("write_file", path="calc.py", content="skip"), say("Done."),
                           say("Done.")])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(GaveUp):
        start(agent, env)
    assert env.verifications == 0  # the sandbox run already fails the verdict


def test_a_request_too_long_is_retried_compacted(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY, "big.py": "x = 1\n" * 3000, "a.py": "", "b.py": ""})
    reads = [call("read_file", path=p) for p in ("big.py", "a.py", "b.py", "calc.py")]
    fix = call("write_file", path="calc.py", content=FIXED)
    model = ScriptedModel([*reads, ContextTooLong("too long"), fix])
    agent = make_agent(model, env, tmp_path)
    assert start(agent, env).fixed
    refused, retried = (history_chars(r["messages"]) for r in model.requests[4:6])
    assert retried < refused and COLLAPSED.split(":")[0] in str(model.requests[5]["messages"])
    # The prefix the server caches (system prompt, task) is the same in every request.
    assert len({str(r["messages"][:2]) for r in model.requests}) == 1


def test_old_observations_are_collapsed_to_fit_the_context(tmp_path):
    files = {"calc.py": BUGGY, **{f"m{i}.py": f"# {i}\n" * 800 for i in range(6)}}
    env = MemoryEnvironment(files)
    reads = [call("read_file", path=f"m{i}.py") for i in range(6)]
    model = ScriptedModel([*reads, call("write_file", path="calc.py", content=FIXED)])
    agent = Agent(
        model=model, env=env, budgets=Budgets(), trace=Trace(path=tmp_path / "t.jsonl"),
        max_context_chars=8_000,
    )  # fmt: skip
    assert start(agent, env).fixed
    last = model.requests[-1]["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    # The oldest results are collapsed, the newest stay whole; the history grew past 24,000.
    assert results[0].startswith(COLLAPSED.split(":")[0]) and results[-1].startswith("# 5")
    assert history_chars(last) < 0.6 * sum(len(files[f"m{i}.py"]) for i in range(6))
    # Every tool call in what was sent still has its answer (pairs are never split).
    asked = {c["id"] for m in last if m.get("tool_calls") for c in m["tool_calls"]}
    answered = {m["tool_call_id"] for m in last if m["role"] == "tool"}
    assert asked == answered


def test_an_edit_that_makes_more_tests_fail_is_undone_and_the_model_told(tmp_path):
    def suite(files: dict[str, str]) -> dict[str, str]:
        outcomes = mean_suite(files)
        if "BROKEN" in files["calc.py"]:
            outcomes["tests/test_calc.py::test_sum"] = "failed"
        return outcomes

    env = MemoryEnvironment({"calc.py": BUGGY}, suite=suite)
    model = ScriptedModel([call("write_file", path="calc.py", content=BUGGY + "BROKEN\n"),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.undo_worse_edits = True
    assert start(agent, env).fixed
    told = model.requests[1]["messages"][-1]["content"]
    assert "made more tests fail (2) than before it (1), so the harness undid it" in told
    assert env.files["calc.py"] == FIXED and "BROKEN" not in env.diff()


WRONG = "def mean(v):\n    return 1.0 * sum(v) / (len(v) - 1)\n"
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


def test_first_edits_are_sampled_on_the_original_tree_until_one_fixes(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("write_file", path="calc.py", content=WRONG),
                           call("write_file", path="calc.py", content=WRONG),  # same: skipped
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("write_file",), edit_samples=4)
    result = start(agent, env)
    assert result.fixed and env.files["calc.py"] == FIXED and "1.0" not in result.patch
    # Every sample is asked with the same messages (the server's prompt cache holds), warmer
    # after the first, and must be an edit.
    first = model.requests[0]["messages"]
    assert all(r["messages"] == first for r in model.requests)
    assert [r["temperature"] for r in model.requests] == [None, 0.7, 0.7]
    assert all(r["only"] == ("write_file",) for r in model.requests)
    # The run may go on as a conversation after them: every tool stays described.
    assert all(r["tools"] == ["read_file", "write_file"] for r in model.requests)


def test_a_sampled_answer_that_changes_nothing_does_not_use_up_a_sample(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("write_file", path="calc.py", content=BUGGY),  # no change
                           call("write_file", path="calc.py", content=WRONG),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("write_file",), edit_samples=2)
    assert start(agent, env).fixed and env.files["calc.py"] == FIXED
    # Two edits were sampled although three answers were needed: all on the original prompt.
    first = model.requests[0]["messages"]
    assert len(model.requests) == 3 and all(r["messages"] == first for r in model.requests)
    assert all(r["only"] == ("write_file",) for r in model.requests)


def test_when_no_sample_fixes_the_first_is_shown_undone_and_not_applied_again(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    other = "def mean(v):\n    return sum(v) * 1.0 / (len(v) - 1)\n"
    first = call("write_file", path="calc.py", content=WRONG)
    model = ScriptedModel([first, call("write_file", path="calc.py", content=other),
                           call("write_file", path="calc.py", content=WRONG),  # sent again
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("write_file",), edit_samples=2)
    assert start(agent, env).fixed
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


def test_a_sample_that_fixes_part_of_the_failures_is_made_again_and_built_on(tmp_path):
    def suite(files: dict[str, str]) -> dict[str, str]:
        outcomes = mean_suite(files)
        outcomes["tests/test_calc.py::test_sum"] = "passed" if "total" in files else "failed"
        return outcomes

    env = MemoryEnvironment({"calc.py": BUGGY}, suite=suite)
    better = call("write_file", path="calc.py", content=FIXED)  # fixes 1 of the 2
    model = ScriptedModel([call("write_file", path="calc.py", content=WRONG), better,
                           call("write_file", path="total", content="x")])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("write_file",), edit_samples=2)
    result = start(agent, env)
    assert result.fixed and env.files["calc.py"] == FIXED
    # The loop went on from the better sample, applied, with its turn in the history.
    history = model.requests[2]["messages"]
    assert len(history) == 4 and "1.0 * sum" not in str(history)
    assert history[2] == better.assistant_message()


def test_samples_after_the_first_are_pointed_at_the_suspect_lines_in_turn(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("write_file", path="calc.py", content=WRONG),
                           call("write_file", path="calc.py", content=WRONG),  # a duplicate
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("write_file",), edit_samples=4, suspects=SUSPECTS)
    assert start(agent, env).fixed and env.files["calc.py"] == FIXED
    # The greedy first edit is asked without the suspects (with samples to point, the list
    # stays out of the first message).
    assert "calc.py:2" not in model.requests[0]["messages"][1]["content"]
    # Each later sample is asked at temperature 0 with one more message pointing at the next
    # suspect (a duplicate answer still moves on), and the prompt before it is unchanged.
    hints = [r["messages"][-1]["content"] for r in model.requests[1:]]
    assert hints[0].startswith("Look at line calc.py:2: return sum(v)")
    assert hints[1].startswith("Look at line calc.py:1: def mean(v):")
    assert [r["temperature"] for r in model.requests] == [None, None, None]
    first = model.requests[0]["messages"]
    assert all(r["messages"][: len(first)] == first for r in model.requests)


def test_top_suspects_get_warmer_retries_the_likelier_more_then_the_plain_prompt_warms(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    edit = ToolCall(id="r1", name="replace", raw_arguments="",
                    arguments={"path": "calc.py", "old": "    return sum(v)/(len(v) - 1)",
                               "new": "    return 1.0 * sum(v) / (len(v) - 1)"})  # fmt: skip
    first = ModelReply(content=None, tool_calls=(edit,), usage=Usage(prompt_tokens=50),
                       finish_reason="tool_calls", mode="native")  # fmt: skip
    wrong = [call("write_file", path="calc.py", content=WRONG.replace("1.0", str(n)))
             for n in range(3, 9)]  # fmt: skip
    model = ScriptedModel([first, *wrong, call("write_file", path="calc.py", content=FIXED)])
    other = WRONG.replace("1.0 * ", "2 * ")

    def tool(c: ToolCall) -> Observation:  # replace made as a write of the whole file
        if c.name == "replace":
            c = ToolCall(id=c.id, name="write_file", raw_arguments="",
                         arguments={"path": "calc.py", "content": other})  # fmt: skip
        return MemoryEnvironment.call_tool(env, c)

    env.call_tool = tool  # type: ignore[method-assign]
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(
        first_tools=("replace", "write_file"), edit_samples=8, suspects=SUSPECTS
    )
    assert start(agent, env).fixed
    # The greedy edit changed line 2 (spaced its own way), so the first pointed sample goes to
    # line 1; then the warmer retries, line 2 included, the first-ranked line (2) more often
    # than the second (HOT_RETRIES, the retries of a third suspect left out); with none left,
    # the plain prompt, warmer.
    hints = [r["messages"][-1]["content"] for r in model.requests[1:7]]
    assert [h.split(":")[1] for h in hints] == ["1", "2", "1", "2", "2", "1"]
    assert all(h.startswith("Look at line calc.py:") for h in hints)
    assert model.requests[7]["messages"] == model.requests[0]["messages"]
    # A top suspect's retry is its first prompt again, hotter (RETRY_TEMPERATURE).
    assert [r["temperature"] for r in model.requests] == [None, None] + [1.0] * 5 + [0.7]
    assert hints[2] == hints[0] and hints[1] == hints[3] == hints[4]


def test_without_samples_the_first_message_names_the_suspects_in_order(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    model = ScriptedModel([call("write_file", path="calc.py", content=FIXED)])
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(suspects=SUSPECTS)
    assert start(agent, env).fixed
    task = model.requests[0]["messages"][1]["content"]
    row = "calc.py:2: return sum(v) / (len(v) - 1)   (run by 1 of 1 failing tests, 0 passing)"
    assert row in task and task.index("calc.py:2:") < task.index("calc.py:1:")


def test_a_pointed_samples_replace_of_the_pointed_file_carries_the_pointed_line(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    seen: list[dict[str, Any]] = []

    def tool(c: ToolCall) -> Observation:
        seen.append(dict(c.arguments or {}))
        return Observation(ok=False, text="old appears 2 times")

    env.call_tool = tool  # type: ignore[method-assign]
    edit = {"path": "./calc.py", "old": "return x", "new": "return y"}
    model = ScriptedModel([call("replace", **edit), call("replace", **edit),
                           call("replace", path="other.py", old="a", new="b")])  # fmt: skip
    agent = make_agent(model, env, tmp_path, max_steps=3)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=2, suspects=SUSPECTS)
    with pytest.raises(BudgetExhausted):
        start(agent, env)
    # The greedy answer is run as sent; the pointed one gets line 2 (the places are the tool's
    # to pick from); pointed at calc.py:1, an edit of another file gets no line.
    assert seen[0] == edit and seen[1] == {**edit, "line": 2}
    assert "line" not in seen[2]
    assert model.requests[2]["messages"][-1]["content"].startswith("Look at line calc.py:1:")


def test_a_pointed_sample_is_a_replace_of_the_pointed_line_that_the_model_only_completes(
    tmp_path,
):
    env = MemoryEnvironment({"calc.py": BUGGY})
    long_line = Suspect("calc.py", 1, "x" * MAX_SUSPECT_TEXT, 0.7, 1, 1)  # cut short in the list
    model = ScriptedModel([call("write_file", path="calc.py", content=WRONG),
                           call("write_file", path="calc.py", content=WRONG.replace("1.0", "2")),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(
        first_tools=("replace", "write_file"), edit_samples=4, suspects=(SUSPECTS[0], long_line)
    )
    assert start(agent, env).fixed
    greedy, pointed, cut = model.requests
    assert greedy["pins"] is None and greedy["only"] == ("replace", "write_file")
    # Pointed at line 2: only replace, with path, old (the whole line) and line fixed.
    assert pointed["only"] == ("replace",)
    assert pointed["pins"] == {
        "replace": {"path": "calc.py", "old": "return sum(v) / (len(v) - 1)", "line": 2}
    }
    hint = pointed["messages"][-1]["content"]
    assert "Replace that line with what it should be" in hint
    assert "\n>2|     return sum(v)" in hint  # the lines around it, the line marked
    # A line cut short could not be matched in the file: that sample is pointed, not pinned.
    assert cut["pins"] is None and cut["only"] == ("replace", "write_file")
    assert cut["messages"][-1]["content"].startswith("Look at line calc.py:1:")


def nearly(reply: ModelReply, *edits: tuple[str, dict[str, Any]]) -> ModelReply:
    """`reply` with second choices: (tool, arguments) each, likeliest first."""
    seconds = tuple(
        SecondChoice(call=ToolCall(id="n", name=name, arguments=args, raw_arguments=""),
                     probability=0.5 / (i + 1), was=" -", token=" +")
        for i, (name, args) in enumerate(edits)
    )  # fmt: skip
    return replace(reply, second_choices=seconds)


def test_a_pinned_samples_second_choices_are_tried_without_a_model_call(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    wrong2 = WRONG.replace("1.0", "2.0")
    unparsable = {"path": "calc.py", "old": SUSPECTS[0].text, "new": "return sum(v) / (len(v)"}
    model = ScriptedModel([
        call("write_file", path="calc.py", content=WRONG),
        nearly(call("write_file", path="calc.py", content=WRONG),
               ("replace", unparsable),  # cannot be Python: never run
               ("write_file", {"path": "calc.py", "content": wrong2})),
        call("write_file", path="calc.py", content=FIXED),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(
        first_tools=("replace", "write_file"), edit_samples=3, suspects=SUSPECTS, second_choices=3
    )
    with agent.trace:
        result = start(agent, env)
    assert result.fixed and env.files["calc.py"] == FIXED
    # Asked for with the pinned samples only; the one that parses was run by the tests alone
    # (no model call) and, not being a model answer, left the third sample its turn.
    assert [r["second_choices"] for r in model.requests] == [False, True, True]
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").open()]
    seconds = [e for e in events if e["type"] == "second_choice"]
    assert len(seconds) == 1 and seconds[0]["sample"] == 2 and seconds[0]["token"] == " +"
    undone = [e for e in events if e["type"] == "sample_undone"]
    assert [e["second"] for e in undone] == [False, True]  # WRONG twice is one try


def test_second_choices_already_tried_make_way_for_the_next_likeliest(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    wrong2, wrong3, wrong4 = (WRONG.replace("1.0", f"{n}.0") for n in (2, 3, 4))
    model = ScriptedModel([
        call("write_file", path="calc.py", content=WRONG),
        nearly(call("write_file", path="calc.py", content=wrong2),
               ("write_file", {"path": "calc.py", "content": wrong3})),
        # Its likeliest second choice was tried after the sample before: the fix is next.
        nearly(call("write_file", path="calc.py", content=wrong4),
               ("write_file", {"path": "calc.py", "content": wrong3}),
               ("write_file", {"path": "calc.py", "content": FIXED})),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(
        first_tools=("replace", "write_file"), edit_samples=3, suspects=SUSPECTS, second_choices=1
    )
    with agent.trace:
        assert start(agent, env).fixed and env.files["calc.py"] == FIXED
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").open()]
    assert [e["sample"] for e in events if e["type"] == "second_choice"] == [2, 3]


def test_second_choices_never_count_as_steps_without_progress(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    # Twelve wrong edits of one size: as model steps, stuck detection (10 idle) would end it.
    wrong = [WRONG.replace("1.0", f"{i}.{j}") for i in range(2, 8) for j in (5, 7)]
    model = ScriptedModel([
        call("write_file", path="calc.py", content=WRONG),
        nearly(call("write_file", path="calc.py", content=WRONG),
               *[("write_file", {"path": "calc.py", "content": w}) for w in wrong]),
        call("write_file", path="calc.py", content=FIXED),
    ])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(
        first_tools=("replace", "write_file"),
        edit_samples=3,
        suspects=SUSPECTS,
        second_choices=len(wrong),
    )
    assert start(agent, env).fixed and len(model.requests) == 3


def test_without_converse_the_run_ends_when_no_sample_fixed(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    other = "def mean(v):\n    return sum(v) * 1.0 / (len(v) - 1)\n"
    model = ScriptedModel([call("write_file", path="calc.py", content=WRONG),
                           call("write_file", path="calc.py", content=other)])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("write_file",), edit_samples=2, converse=False)
    with pytest.raises(SamplesSpent, match=r"no sampled first edit fixed .* \(2 answers\)"):
        start(agent, env)
    # The model was asked for the two samples only, and the tree is as it was.
    assert len(model.requests) == 2 and env.files["calc.py"] == BUGGY
    # No reply could call another tool, so the prompt describes the edit tool alone.
    assert all(r["tools"] == ["write_file"] for r in model.requests)


def test_the_first_message_shows_as_many_failures_as_asked(tmp_path):
    def suite(files: dict[str, str]) -> dict[str, str]:
        ok = "len(v) - 1" not in files["calc.py"]
        return {f"tests/test_calc.py::test_{n}": "passed" if ok else "failed" for n in range(5)}

    env = MemoryEnvironment({"calc.py": BUGGY}, suite=suite)
    model = ScriptedModel([call("write_file", path="calc.py", content=FIXED)])
    agent = make_agent(model, env, tmp_path)
    agent.shown_failures = 2
    assert start(agent, env).fixed
    task = model.requests[0]["messages"][1]["content"]
    assert "0 passed, 5 failed" in task and "test_1:" in task and "test_2:" not in task
    assert "[... 3 more failing tests not shown ...]" in task


def test_a_suspect_line_a_diff_took_out_is_skipped(tmp_path):
    env = MemoryEnvironment({"calc.py": BUGGY})
    patch = "--- a/calc.py\n+++ b/calc.py\n@@ -2 +2 @@\n-    return sum(v) / (len(v) - 1)\n+    x\n"
    model = ScriptedModel([call("apply_patch", patch=patch),
                           call("write_file", path="calc.py", content=FIXED)])  # fmt: skip
    env.call_tool = lambda c: (  # type: ignore[method-assign]
        Observation(ok=False, text="refused") if c.name == "apply_patch"
        else MemoryEnvironment.call_tool(env, c)
    )  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(
        first_tools=("apply_patch", "write_file"), edit_samples=2, suspects=SUSPECTS
    )
    assert start(agent, env).fixed
    # The greedy diff took line 2 out (refused or not), so the next sample is pointed past it.
    assert model.requests[1]["messages"][-1]["content"].startswith("Look at line calc.py:1:")
