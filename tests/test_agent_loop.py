"""The loop in-process: `Agent.run` against a scripted json_schema model and an in-memory
environment whose tests run as real Python (tests/loop_doubles.py; no Docker, no HTTP).
Budgets, stuck detection, claims, verification, compaction, undoing a worse edit, verify-ahead
and the first message, as the loop decides them; the search's own tests are in
test_search_sampling.py, the real-part tests of the same behaviour in test_fix_cli.py."""

from __future__ import annotations

import pytest

from policies.budgets import Budgets
from tests.loop_doubles import (
    BUGGY,
    FIXED,
    FIXED_LINE,
    LINE,
    WRONG,
    WRONG_LINE,
    MemoryEnvironment,
    ScriptedModel,
    call,
    edit,
    make_agent,
    repo,
    say,
    start,
    unified,
)
from worker.llm.types import CallOutOfTime, ContextTooLong
from worker.loop import prompts
from worker.loop.agent import Agent
from worker.loop.endings import BudgetExhausted, GaveUp, Stuck
from worker.loop.history import COLLAPSED, history_chars
from worker.loop.trace import Trace

FIX = edit(LINE, FIXED_LINE)  # BUGGY made FIXED
MISTAKE = edit(LINE, WRONG_LINE)  # BUGGY made WRONG


def test_a_fix_is_verified_on_the_clean_copy_and_ends_the_loop(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([call("read_file", path="calc.py"), FIX])
    agent = make_agent(model, env, tmp_path)
    result = start(agent, env)
    assert result.verification.passed and env.verifications == 1 and env.files["calc.py"] == FIXED
    assert result.verification.verdict.rule == "junit"
    assert agent.usage.steps == 2 and agent.usage.tokens == 120
    assert "test_mean" in model.requests[0]["messages"][1]["content"]


def test_the_step_budget_ends_the_run_before_another_call(tmp_path):
    env = MemoryEnvironment(repo(**{"a.py": "", "b.py": "", "c.py": ""}))
    model = ScriptedModel([call("read_file", path=p) for p in ("a.py", "b.py", "c.py", "x")])
    agent = make_agent(model, env, tmp_path, max_steps=3)
    with pytest.raises(BudgetExhausted, match="step"):
        start(agent, env)
    assert len(model.requests) == 3 and agent.usage.steps == 3


def test_the_token_budget_counts_prompt_and_completion(tmp_path):
    env = MemoryEnvironment(repo(**{"a.py": "", "b.py": ""}))
    model = ScriptedModel([call("read_file", path="a.py"), call("read_file", path="b.py")])
    agent = make_agent(model, env, tmp_path, max_tokens=100)
    with pytest.raises(BudgetExhausted, match="token"):
        start(agent, env)
    assert len(model.requests) == 2  # 60 tokens, then 120 > 100: no third call


def test_the_time_left_bounds_each_call_and_a_cut_call_is_a_budget(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([CallOutOfTime("the call ran out of time")])
    agent = make_agent(model, env, tmp_path, max_wall_s=30)
    with pytest.raises(BudgetExhausted):
        start(agent, env)
    assert 0 < model.requests[0]["timeout_s"] <= 30


def test_a_repeated_call_is_nudged_warmer_then_stopped(tmp_path):
    env = MemoryEnvironment(repo())
    again = call("read_file", path="calc.py")
    other = edit("not in the file", "x")  # a failing call of another tool, twice
    model = ScriptedModel([again, again, other, again, other, again])
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(Stuck, match="repeated the same read_file"):
        start(agent, env)
    nudged = next(i for i, r in enumerate(model.requests) if "same call" in str(r["messages"]))
    assert nudged == 2 and model.requests[nudged]["temperature"] == 0.7
    assert model.requests[0]["temperature"] is None
    # ... and that reply may not call the repeated tool (json_schema mode enforces it): the
    # double answers it with another tool, and the fourth identical read, between other calls,
    # still ends the run.
    assert "read_file" not in model.requests[nudged]["only"]
    assert model.requests[nudged]["only"] == ("replace", "apply_patch")
    assert model.requests[0]["only"] is None
    assert model.requests[5]["only"] == ("read_file", "apply_patch")  # other was repeated too
    assert not model.script


def test_verify_ahead_starts_each_edits_clean_run_with_the_patch_of_that_edit(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([MISTAKE, edit(WRONG_LINE, FIXED_LINE)])
    agent = make_agent(model, env, tmp_path)
    agent.verify_ahead = True
    assert start(agent, env).verification.passed
    assert env.ahead == [unified("calc.py", BUGGY, WRONG), unified("calc.py", BUGGY, FIXED)]
    assert env.verifications == 1


def test_without_verify_ahead_no_clean_run_starts_before_the_tests_say_fixed(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([MISTAKE, edit(WRONG_LINE, FIXED_LINE)])
    assert start(make_agent(model, env, tmp_path), env).verification.passed
    assert env.ahead == [] and env.verifications == 1


def test_saying_done_while_tests_fail_is_told_once_then_ends_the_run(tmp_path):
    env = MemoryEnvironment(repo())
    model = ScriptedModel([say("All fixed."), say("Really, all fixed.")])
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(GaveUp):
        start(agent, env)
    told = model.requests[1]["messages"][-1]["content"]
    assert told.startswith(prompts.FALSE_CLAIM.split("{")[0][:40]) and env.verifications == 0


def test_a_fix_that_fails_on_the_clean_copy_is_not_accepted(tmp_path):
    env = MemoryEnvironment(repo(), clean_copy_breaks=True)
    model = ScriptedModel([FIX, say("Done."), say("Done!")])
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(GaveUp):
        start(agent, env)
    assert env.verifications >= 1
    assert "re-ran the tests on a clean copy" in model.requests[1]["messages"][-1]["content"]


# The failing tests are generated from the module's data, so a patch can make them vanish.
CASES_CALC = BUGGY + "\n\nCASES = [((1, 2, 3), 2), ((2, 4), 3)]\n"
CASES_TESTS = """\
import calc


def test_mean_of_zeros():
    assert calc.mean([0, 0]) == 0


for _i, (_args, _want) in enumerate(calc.CASES):

    def _case(args=_args, want=_want):
        assert calc.mean(list(args)) == want

    globals()[f"test_case_{_i}"] = _case
"""


def test_a_patch_that_makes_the_failing_test_vanish_is_never_verified(tmp_path):
    env = MemoryEnvironment(repo(CASES_CALC, CASES_TESTS))
    assert env.run_tests().failing() == 2
    vanish = edit("CASES = [((1, 2, 3), 2), ((2, 4), 3)]", "CASES = []")
    model = ScriptedModel([vanish, say("Done."), say("Done.")])
    agent = make_agent(model, env, tmp_path)
    with pytest.raises(GaveUp):
        start(agent, env)
    assert env.files["calc.py"].endswith("CASES = []\n")  # made: every test left passes
    assert env.run_tests().failing() == 0
    assert env.verifications == 0  # the sandbox run already fails the verdict


def test_a_request_too_long_is_retried_compacted(tmp_path):
    files = repo(**{"big.py": "x = 1\n" * 3000, "a.py": "", "b.py": ""})
    env = MemoryEnvironment(files)
    reads = [call("read_file", path=p) for p in ("big.py", "a.py", "b.py", "calc.py")]
    model = ScriptedModel([*reads, ContextTooLong("too long"), FIX])
    agent = make_agent(model, env, tmp_path)
    assert start(agent, env).verification.passed
    refused, retried = (history_chars(r["messages"]) for r in model.requests[4:6])
    assert retried < refused and COLLAPSED.split(":")[0] in str(model.requests[5]["messages"])
    # The prefix the server caches (system prompt, task) is the same in every request.
    assert len({str(r["messages"][:2]) for r in model.requests}) == 1


def test_old_observations_are_collapsed_to_fit_the_context(tmp_path):
    # Files read_file shows whole (under its 200-line window), 3,200 characters each.
    modules = {f"m{i}.py": (f"# {i} " + "-" * 195 + "\n") * 16 for i in range(8)}
    env = MemoryEnvironment(repo(**modules))
    reads = [call("read_file", path=f"m{i}.py") for i in range(8)]
    model = ScriptedModel([*reads, FIX])
    agent = Agent(
        model=model, env=env, budgets=Budgets(), trace=Trace(path=tmp_path / "t.jsonl"),
        max_context_chars=8_000,
    )  # fmt: skip
    assert start(agent, env).verification.passed
    last = model.requests[-1]["messages"]
    results = [m["content"] for m in last if m["role"] == "tool"]
    # The oldest results are collapsed, the newest stay whole; the history grew past 25,000.
    assert results[0].startswith(COLLAPSED.split(":")[0])
    assert results[-1].startswith("m7.py: lines 1-16 of 16\n 1| # 7 ")
    assert history_chars(last) < 0.6 * sum(len(text) for text in modules.values())
    # Every tool call in what was sent still has its answer (pairs are never split).
    asked = {c["id"] for m in last if m.get("tool_calls") for c in m["tool_calls"]}
    answered = {m["tool_call_id"] for m in last if m["role"] == "tool"}
    assert asked == answered


def test_an_edit_that_makes_more_tests_fail_is_undone_and_the_model_told(tmp_path):
    env = MemoryEnvironment(repo())
    worse = edit(LINE, "    return sum(v) / (len(v) - 2)")  # mean([0, 0]) divides by zero too
    model = ScriptedModel([worse, FIX])
    agent = make_agent(model, env, tmp_path)
    agent.undo_worse_edits = True
    assert start(agent, env).verification.passed
    told = model.requests[1]["messages"][-1]["content"]
    assert "made more tests fail (2) than before it (1), so the harness undid it" in told
    assert env.files["calc.py"] == FIXED and "len(v) - 2" not in env.diff()


def test_the_first_message_shows_as_many_failures_as_asked(tmp_path):
    tests = "from calc import mean\n" + "".join(
        f"\n\ndef test_{n}():\n    assert mean([{n}, {n + 2}]) == {n + 1}\n" for n in range(5)
    )
    env = MemoryEnvironment(repo(tests=tests))
    model = ScriptedModel([FIX])
    agent = make_agent(model, env, tmp_path)
    agent.shown_failures = 2
    assert start(agent, env).verification.passed
    task = model.requests[0]["messages"][1]["content"]
    assert "0 passed, 5 failed" in task and "test_1:" in task and "test_2:" not in task
    assert "[... 3 more failing tests not shown ...]" in task


def test_the_double_refuses_what_no_json_schema_endpoint_sends(tmp_path):
    # A final answer where only edits are allowed: the scripted model fails the test, loudly.
    env = MemoryEnvironment(repo())
    model = ScriptedModel([call("read_file", path="calc.py"), call("read_file", path="calc.py"),
                           say("Done.")])  # fmt: skip
    with pytest.raises(AssertionError, match="request 3 .*final answer"):
        start(make_agent(model, env, tmp_path), env)
