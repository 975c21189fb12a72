"""After an edit the tests that failed at the start run first, by id, and the whole suite only
once they do not all fail (worker/loop/failing_first.py). In-process: the real loop and search
against the doubles of tests/loop_doubles.py, whose suite says it takes 30 s; then `worker fix`
end to end on a real sandbox and real pytest."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from sandbox.container.results import CommandResult
from sandbox.testrun.junit import parse_junit
from sandbox.testrun.run import TestRun
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
    run_suite,
    start,
    unified,
)
from worker.llm.scripted_server import ScriptedServer, tool_call
from worker.loop.failing_first import MIN_SUITE_S, accounted, first_ids, stands
from worker.search.sampling import FirstEdits

FAILING = ("tests/test_calc.py::test_mean",)
# Tests elsewhere that pass throughout: the whole suite is more than the failing test.
OTHERS = {"tests/test_more.py": "".join(f"def test_{n}():\n    pass\n\n\n" for n in range(6))}
MISTAKE, FIX = edit(LINE, WRONG_LINE), edit(WRONG_LINE, FIXED_LINE)


def tool_results(model: ScriptedModel) -> list[str]:
    return [m["content"] for m in model.requests[-1]["messages"] if m["role"] == "tool"]


def test_after_an_edit_that_does_not_fix_only_the_failing_tests_run(tmp_path):
    env = MemoryEnvironment(repo(**OTHERS), suite_s=30.0)
    model = ScriptedModel([MISTAKE, FIX])
    agent = make_agent(model, env, tmp_path)
    with agent.trace:
        result = start(agent, env)
    assert result.verification.passed and env.verifications == 1 and env.files["calc.py"] == FIXED
    # The baseline, then the failing test alone after the mistake; after the fix, the failing
    # test first and, as it passes, the whole suite, which the verdict judged.
    assert env.runs == [(), FAILING, FAILING, ()]
    told = tool_results(model)[0]
    assert "only the test that failed at the start ran, by id" in told
    assert "0 passed, 1 failed" in told
    after = agent.last_tests  # the report's tests_after
    assert after is not None and after.test_ids == ()
    assert after.summary is not None and after.summary.passed == 8
    trace = [json.loads(line) for line in (tmp_path / "trace.jsonl").open()]
    fixed = [e for e in trace if e["type"] == "tool_call"][-1]["observation"]
    assert "the test that failed at the start passes now, so the whole suite ran" in fixed


def test_a_clean_run_starts_ahead_only_once_the_failing_tests_pass(tmp_path):
    env = MemoryEnvironment(repo(**OTHERS), suite_s=30.0)
    agent = make_agent(ScriptedModel([MISTAKE, FIX]), env, tmp_path)
    agent.verify_ahead = True
    assert start(agent, env).verification.passed
    assert env.ahead == [unified("calc.py", BUGGY, FIXED)] and env.verifications == 1


def test_a_short_suite_runs_whole_after_every_edit(tmp_path):
    env = MemoryEnvironment(repo(**OTHERS), suite_s=MIN_SUITE_S / 2)
    model = ScriptedModel([MISTAKE, FIX])
    assert start(make_agent(model, env, tmp_path), env).verification.passed
    assert env.runs == [(), (), ()]
    assert tool_results(model)[0].startswith("patch applied") and "by id" not in str(model.requests)


def test_runs_by_id_as_slow_as_half_the_suite_are_not_tried_again(tmp_path):
    env = MemoryEnvironment(repo(**OTHERS), suite_s=3.0, by_id_s=2.0)
    second = edit(WRONG_LINE, "    return 2.0 * sum(v) / (len(v) - 1)")
    third = edit("2.0 * sum(v) / (len(v) - 1)", "3.0 * sum(v) / (len(v) - 1)")
    model = ScriptedModel(
        [MISTAKE, second, third, edit("3.0 * sum(v) / (len(v) - 1)", "sum(v) / len(v)")]
    )
    assert start(make_agent(model, env, tmp_path), env).verification.passed
    # Two runs by id, their outcomes standing (the failing test still fails), both slow: later
    # edits run the whole suite.
    assert env.runs == [(), FAILING, FAILING, (), ()]
    said = tool_results(model)
    assert all("only the test that failed at the start ran, by id" in text for text in said[:2])
    assert said[2].startswith("patch applied") and "by id" not in said[2]


TWO_BUGS = "def total(v):\n    return sum(v) + 1\n\n\n" + BUGGY
TWO_TESTS = TESTS.replace("import mean", "import mean, total") + (
    "\n\ndef test_total():\n    assert total([1, 2]) == 3\n"
)
BOTH = ("tests/test_calc.py::test_mean", "tests/test_calc.py::test_total")


def test_a_sample_fixing_part_of_the_failures_is_judged_on_the_whole_suite_and_kept(tmp_path):
    env = MemoryEnvironment(repo(TWO_BUGS, TWO_TESTS, **OTHERS), suite_s=30.0)
    better = edit(LINE, FIXED_LINE)  # fixes 1 of the 2
    model = ScriptedModel([edit(LINE, WRONG_LINE), better,
                           edit("    return sum(v) + 1", "    return sum(v)")])  # fmt: skip
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=2)
    assert start(agent, env).verification.passed
    # The wrong sample: the two by id. The better one: by id, then the whole suite (one of
    # them passes); made again on the whole suite; the last edit fixes.
    assert env.runs == [(), BOTH, BOTH, (), (), BOTH, ()]
    kept = model.requests[2]["messages"][3]["content"]
    assert "tests that failed at the start pass now, so the whole suite ran" in kept
    assert "8 passed, 1 failed" in kept


def test_a_sample_that_breaks_the_test_module_is_no_progress(tmp_path):
    # The test module no longer imports: by id, both failing tests are its collection error.
    # Counted as failures of the report it would be 1 of 2, "fewer", and the sample kept.
    env = MemoryEnvironment(repo(TWO_BUGS, TWO_TESTS, **OTHERS), suite_s=30.0)
    both_fixed = TWO_BUGS.replace("+ 1", "").replace("(len(v) - 1)", "len(v)")
    both = call("apply_patch", patch=unified("calc.py", TWO_BUGS, both_fixed))
    model = ScriptedModel([edit("def total(v):", "def totals(v):"), edit(LINE, WRONG_LINE), both])
    agent = make_agent(model, env, tmp_path)
    agent.opening = FirstEdits(first_tools=("replace",), edit_samples=2)
    agent.undo_worse_edits = True
    assert start(agent, env).verification.passed
    # Neither sample was kept: the conversation's patch, written against the original tree,
    # applied to it.
    assert env.runs == [(), BOTH, BOTH, BOTH, ()] and env.files["calc.py"] == both_fixed


class NotSelectable(MemoryEnvironment):
    """pytest cannot select these ids back: a run of them is answered as pytest answers it
    ("ERROR: not found", exit 4, a report without a test)."""

    def run_tests(self, test_ids: Sequence[str] = ()) -> TestRun:
        if not test_ids:
            return super().run_tests()
        self.runs.append(tuple(test_ids))
        result = CommandResult(
            command="pytest", exit_code=4, duration_s=0.1, timed_out=False, oom_killed=False,
            output="ERROR: not found", output_bytes=16, truncated=False,
        )  # fmt: skip
        return TestRun(
            command="pytest", result=result, summary=parse_junit(b'<testsuite tests="0"/>'),
            expects_junit=True, token="tok", test_ids=tuple(test_ids), test_cmd="pytest",
        )  # fmt: skip


def test_ids_pytest_cannot_select_back_fall_back_to_the_whole_suite_for_the_run(tmp_path):
    env = NotSelectable(repo(**OTHERS), suite_s=30.0)
    second = edit(WRONG_LINE, "    return 2.0 * sum(v) / (len(v) - 1)")
    model = ScriptedModel([MISTAKE, second, edit("2.0 * sum(v) / (len(v) - 1)", "sum(v) / len(v)")])
    assert start(make_agent(model, env, tmp_path), env).verification.passed
    # Tried once, found wanting: the whole suite then, and after every later edit.
    assert env.runs == [(), FAILING, (), (), ()]
    assert tool_results(model)[0].startswith("patch applied") and "by id" not in str(model.requests)


def test_which_tests_run_first():
    whole = run_suite(repo(**OTHERS), suite_s=30.0)
    assert first_ids(whole) == FAILING
    assert first_ids(run_suite(repo(**OTHERS), suite_s=MIN_SUITE_S / 2)) == ()  # too short
    assert first_ids(run_suite(repo(), suite_s=30.0)) == FAILING  # 1 of 2: half the suite
    assert first_ids(run_suite(repo(TWO_BUGS, TWO_TESTS), suite_s=30.0)) == ()  # 2 of 3
    assert first_ids(run_suite(repo(FIXED), suite_s=30.0)) == ()  # none fails
    custom = TestRun(
        command="make test", result=whole.result, summary=whole.summary, test_cmd="make test"
    )
    assert first_ids(custom) == ()  # its ids cannot be selected


def test_a_run_by_id_stands_while_none_of_its_tests_passes():
    by_id = run_suite(repo(TWO_BUGS, TWO_TESTS), BOTH)
    assert accounted(by_id) and stands(by_id) and by_id.failing() == 2
    one_fixed = run_suite(repo(TWO_BUGS.replace("+ 1", ""), TWO_TESTS), BOTH)
    assert accounted(one_fixed) and not stands(one_fixed) and one_fixed.failing() == 1
    # A module that no longer imports: each of its tests counts, none is missing.
    broken = run_suite(repo(TWO_BUGS.replace("def total", "def totals"), TWO_TESTS), BOTH)
    assert broken.summary is not None and len(broken.summary.failures) == 1
    assert accounted(broken) and stands(broken) and broken.failing() == 2
    assert not accounted(run_suite(repo(WRONG), ["tests/test_calc.py::test_gone"]))


# -- end to end: `worker fix`, a real sandbox, real pytest ---------------------------------------

SLOW_REPO = {
    "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    "tests/test_calc.py": (
        "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n"
    ),
    # The rest of the suite: long enough that the failing test alone is worth running first.
    "tests/test_slow.py": (
        "import time\n\n\ndef test_slow():\n    time.sleep(%.1f)\n" % (MIN_SUITE_S + 0.5)
    ),
}
NOT_FIXING = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return 1.0 * sum(values) / (len(values) - 1)
"""
FIXING = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return 1.0 * sum(values) / (len(values) - 1)
+    return 1.0 * sum(values) / len(values)
"""


@pytest.mark.docker
def test_worker_fix_runs_the_failing_test_first_and_verifies_on_the_whole_suite(
    make_repo, tmp_path: Path
):
    from tests.test_fix_cli import report, run_fix

    repo = make_repo(SLOW_REPO)
    script = [
        tool_call("apply_patch", {"patch": NOT_FIXING}),
        tool_call("apply_patch", {"patch": FIXING}),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert r["verification"]["counts"]["passed"] == 2  # the clean re-run: the whole suite
    assert r["tests_after"]["counts"]["passed"] == 2
    trace = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
    edits = [e for e in trace if e["type"] == "tool_call"]
    assert "only the test that failed at the start ran, by id" in edits[0]["observation"]
    assert "0 passed, 1 failed" in edits[0]["observation"]
    assert "passes now, so the whole suite ran" in edits[1]["observation"]
    assert "2 passed, 0 failed" in edits[1]["observation"]
    # What the model saw after the first edit is what the trace says.
    assert (
        "only the test that failed at the start ran"
        in server.requests[1]["messages"][-1]["content"]
    )


@pytest.mark.docker
def test_a_run_that_ends_on_a_run_by_id_reports_it_judged_on_its_own(make_repo, tmp_path: Path):
    from tests.test_fix_cli import report, run_fix

    repo = make_repo(SLOW_REPO)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": NOT_FIXING})]) as server:
        proc = run_fix(repo, tmp_path / "out", "--max-steps", "1", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "not_fixed" and r["tests_after"]["failing"] == [
        "tests/test_calc.py::test_mean"
    ]
    assert "tests/test_calc.py::test_mean" in r["tests_after"]["command"]
    # Not "tests/test_slow.py::test_slow passed at baseline and is missing now".
    assert r["verdict"]["of"] == "tests_after"
    assert r["verdict"]["reasons"] == ["1 failed and 0 errors in the report"]
