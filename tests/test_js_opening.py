"""The first message on a JavaScript repository, built the way `worker fix` builds Python's
(worker/run/fix.py `_opening`): the grounded definitions as the source code it shows, the
stack suspects as the search's opening (worker/search/sampling.FirstEdits), the real loop
(`Agent.run`) writing the messages. The model is the scripted json_schema double of
tests/loop_doubles.py; the failures are jest's real report (tests/js_reports.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.ecosystems import language_paths
from sandbox.ecosystems.node.ecosystem import NODE
from sandbox.ecosystems.node.grounding import implicated_code
from tests.js_reports import project, run_of, xml_failures
from tests.loop_doubles import MemoryEnvironment, ScriptedModel, edit, make_agent
from worker.loop.endings import BudgetExhausted
from worker.loop.trace import Trace
from worker.search.locate import locate
from worker.search.sampling import FirstEdits

EDITS = ("replace", "apply_patch")
WORDS_LINE = "return text.trim().split(' ').map((w) => w.name.length);"
STOP = BudgetExhausted("the test stops the run here")


def opening(ws: Path, tmp_path: Path, **settings: object):
    """What `_opening` hands the agent for the jest project: its baseline, the sources, the
    opening with its suspects."""
    baseline = run_of(xml_failures("jest.junit.xml"))
    paths = language_paths()
    trace = Trace(path=tmp_path / "locate.jsonl")
    suspects = locate(NODE, None, baseline, workspace=ws, paths=paths, timeout_s=1.0, trace=trace)
    sources = implicated_code(baseline, workspace=ws, paths=paths).text
    return baseline, sources, FirstEdits(first_tools=EDITS, suspects=suspects, **settings)


def files_of(ws: Path) -> dict[str, str]:
    return {p.relative_to(ws).as_posix(): p.read_text() for p in ws.rglob("*") if p.is_file()}


def test_the_first_message_shows_the_code_the_tests_reach_and_the_lines_their_stacks_name(
    tmp_path,
):
    ws = project("jest", tmp_path)
    baseline, sources, first = opening(ws, tmp_path, edit_samples=1)
    env = MemoryEnvironment(files_of(ws))
    model = ScriptedModel([STOP])
    agent = make_agent(model, env, tmp_path)
    agent.opening = first
    with pytest.raises(BudgetExhausted):
        agent.run("make the tests pass", baseline, "lib/\n__tests__/\npackage.json", sources)
    task = model.requests[0]["messages"][1]["content"]
    shown = task.split("Source code the failing tests use:\n", 1)[1]
    assert shown.startswith("lib/util/words.js: words, lines 1-3 of 3\n1| module.exports")
    assert "lib/util/slug.js: slugify, lines 2-5 of 6\n2| function slugify(title) {" in shown
    assert "4|   return parts.join('_');" in shown  # the assertion's bug, which no stack names
    assert f"  lib/util/words.js:2: {WORDS_LINE}   (in the stack of 2 of 3 failing tests)" in task
    # With the code shown, the first reply must be an edit.
    assert model.requests[0]["only"] == EDITS


def test_a_sampled_first_edit_is_pointed_and_pinned_at_the_top_stack_suspect(tmp_path):
    ws = project("jest", tmp_path)
    baseline, sources, first = opening(ws, tmp_path, edit_samples=2, converse=False)
    env = MemoryEnvironment(files_of(ws))
    # The greedy edit fits no line (refused, the tree unchanged); the next sample is pointed.
    model = ScriptedModel([edit("return parts.join('_')", "x", path="lib/util/nope.js"), STOP])
    agent = make_agent(model, env, tmp_path)
    agent.opening = first
    with pytest.raises(BudgetExhausted):
        agent.run("make the tests pass", baseline, "lib/", sources)
    pointed = model.requests[1]
    assert pointed["messages"][-1]["content"].startswith(
        f"Look at line lib/util/words.js:2: {WORDS_LINE}\n"
        f" 1| module.exports = function words(text) {{\n>2|   {WORDS_LINE}\n 3| }};"
    )
    assert pointed["pins"] == {
        "replace": {"path": "lib/util/words.js", "old": WORDS_LINE, "line": 2}
    }
