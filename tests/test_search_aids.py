"""The search for a small model's first edit, aid by aid, through `worker fix` as a user runs it:
the real command line, the real openai client against the scripted HTTP server in json_schema
mode, the real sandbox, a real git repository. Each aid is also tested in-process
(tests/test_search_sampling.py, with the doubles of tests/loop_doubles.py); here it meets the
real tools, test runs and wire.

The scripted answers are ones a json_schema endpoint could send: each is checked against the
schema its request carried (the held tools, the pinned arguments) and answered HTTP 400 when it
does not fit, and logprobs come only when the request asked for them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.test_fix_cli import BUGGY, report, run_fix
from worker.llm.scripted_server import ScriptedServer, http_error, text, tool_call

TRACE_SCHEMA = json.loads(
    (Path(__file__).parents[1] / "worker" / "schemas" / "trace.schema.json").read_text()
)

pytestmark = pytest.mark.docker

JSON_MODE = ("--tool-mode", "json_schema", "--first-edit", "--no-verify-ahead")
BUG_LINE = "return sum(values) / (len(values) - 1)"  # BUGGY's calc.py:2, its only suspect
# Two lines the failing test runs and no passing one: equal scores, so calc.py:4 ranks first
# (worker/search/suspects.py); the bug is on line 5. The passing test of [] runs the guard
# alone, so the ranking is not flat: no sample rewrites the function whole
# (worker/search/moves.py).
TWO_LINES = {
    **BUGGY,
    "calc.py": "def mean(values):\n    if not values:\n        return 0.0\n"
    "    total = sum(values)\n    return total / (len(values) - 1)\n",
    "tests/test_calc.py": BUGGY["tests/test_calc.py"]
    + "\n\ndef test_empty():\n    assert mean([]) == 0.0\n",
}
LINE_4, LINE_5 = "total = sum(values)", "return total / (len(values) - 1)"


def answer(
    tool: str, arguments: dict[str, Any], *, nearly: tuple[str, dict[str, float]] | None = None
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A json_schema-mode answer calling `tool`. `nearly`: a piece of the answer's text (its last
    place) and the runner-up tokens there with their log-probabilities, sent as the choice's
    logprobs when the request asks for them, as llama.cpp and OpenAI do."""
    action = {"tool": tool, "arguments": arguments}
    raw = json.dumps(action)

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        schema = body["response_format"]["json_schema"]["schema"]
        try:
            jsonschema.validate(action, schema)
        except jsonschema.ValidationError as exc:  # a grammar-bound endpoint never sends it
            return http_error(400, f"scripted answer outside the request's schema: {exc.message}")
        if nearly is None or not body.get("logprobs"):
            return text(raw)
        piece, others = nearly
        at = raw.rindex(piece)
        tokens = [(raw[:at], {}), (piece, others), (raw[at + len(piece) :], {})]
        content = [
            {"token": token, "logprob": -0.1,
             "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top.items()]}
            for token, top in tokens
        ]  # fmt: skip
        return text(raw, logprobs={"content": content})

    return reply


def pinned(path: str, old: str, line: int, new: str) -> dict[str, Any]:
    """A pointed sample's `replace`: path, old and line as its schema pins them."""
    return {"path": path, "old": old, "line": line, "new": new}


def events(out: Path, kind: str) -> list[dict[str, Any]]:
    lines = (out / "trace.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def pins_of(request: dict[str, Any]) -> dict[str, Any]:
    """The constants of the request's one `replace` branch (a pointed sample's pins)."""
    (branch,) = request["response_format"]["json_schema"]["schema"]["oneOf"]
    assert branch["properties"]["tool"] == {"const": "replace"}
    args = branch["properties"]["arguments"]["properties"]
    return {name: spec["const"] for name, spec in args.items() if "const" in spec}


def edits_run(out: Path) -> list[str]:
    """The `new` of every replace the sandbox ran, in order."""
    calls = events(out, "tool_call")
    return [c["arguments"]["new"] for c in calls if c["name"] == "replace"]


def test_top_suspects_are_asked_again_warmer_with_their_own_pointed_prompt(make_repo, tmp_path):
    repo = make_repo(TWO_LINES)
    out = tmp_path / "out"
    script = [
        answer("replace", {"path": "calc.py", "old": "no such line", "new": "x"}),  # refused
        answer("replace", pinned("calc.py", LINE_4, 4, "total = sum(values) + 1")),
        answer("replace", pinned("calc.py", LINE_5, 5, "return total / (len(values) - 2)")),
        answer("replace", pinned("calc.py", LINE_4, 4, "total = total * 2")),  # a line added
        answer("replace", pinned("calc.py", LINE_4, 4, "total = 1.0 * sum(values)")),
        answer("replace", pinned("calc.py", LINE_5, 5, "return total / len(values)")),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--locate", "--moves", "--edit-samples", "5",
                       base_url=server.base_url)  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    # Each top suspect once at temperature 0, a line added after the first (the third
    # suspect's cold slot, worker/search/sampling.py), then each again at 1.0 (the likelier
    # first), its request the same as its first one but for the temperature.
    focus = [(e["sample"], e["line"], e["warm"], e["move"]) for e in events(out, "sample_focus")]
    assert focus == [(2, "calc.py:4", False, "line"), (3, "calc.py:5", False, "line"),
                     (4, "calc.py:4", False, "insert"),
                     (5, "calc.py:4", True, "line"), (6, "calc.py:5", True, "line")]  # fmt: skip
    requests = server.requests
    assert [r["temperature"] for r in requests] == [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    for cold, warm in ((requests[1], requests[4]), (requests[2], requests[5])):
        assert warm["messages"] == cold["messages"] and pins_of(warm) == pins_of(cold)
    assert pins_of(requests[5]) == {"path": "calc.py", "old": LINE_5, "line": 5}
    hint = requests[5]["messages"][-1]["content"]  # the line, and the lines around it
    assert "\n\nLook at line calc.py:5: return total / (len(values) - 1)\n" in hint
    assert "\n 4|     total = sum(values)\n>5|     return total / (len(values) - 1)\n" in hint
    # The insertion ran as the line kept and the model's line after it.
    assert edits_run(out)[3] == "total = sum(values)\n    total = total * 2"
    # Four wrong edits ran on the original tree and were undone; the fifth is the patch.
    assert len(events(out, "sample_undone")) == 4
    patch = (out / "fix.patch").read_text()
    assert "+    return total / len(values)" in patch and "1.0 *" not in patch
    assert report(out)["status"] == "fixed" and report(out)["steps"] == 6


def test_a_second_choice_already_tried_makes_way_for_the_next_likeliest(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    out = tmp_path / "out"
    new = "return sum(values) / (len(values){}"
    # The cold pointed answer nearly wrote `+ 1)`; the warm one nearly wrote `+ 1)` again, and
    # then `)`, which drops the bug.
    script = [
        answer("replace", {"path": "calc.py", "old": "no such line", "new": "x"}),  # refused
        answer("replace", pinned("calc.py", BUG_LINE, 2, new.format(" - 2)")),
               nearly=(" - 2)", {" - 2)": -0.1, " + 1)": -0.9})),
        answer("replace", pinned("calc.py", BUG_LINE, 2, new.format(" * 2)")),
               nearly=(" * 2)", {" * 2)": -0.1, " + 1)": -0.5, ")": -1.2})),
    ]  # fmt: skip
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--locate", "--edit-samples", "2",
                       "--second-choices", "1", base_url=server.base_url)  # fmt: skip
        server.assert_all_used()  # three answers: no model call for a second choice
    assert proc.returncode == 0, proc.stderr
    # Asked with the pointed samples only.
    assert [bool(r.get("logprobs")) for r in server.requests] == [False, True, True]
    # One second choice per sample (--second-choices 1): the warm sample's likeliest, `+ 1)`,
    # was tried after the cold one, so the next likeliest was tried in its place.
    seconds = [(e["sample"], e["was"], e["token"]) for e in events(out, "second_choice")]
    assert seconds == [(2, " - 2)", " + 1)"), (3, " * 2)", ")")]
    # No edit ran twice in the sandbox.
    assert edits_run(out) == ["x", *(new.format(e) for e in (" - 2)", " + 1)", " * 2)", ")"))]
    assert "+    return sum(values) / (len(values))" in (out / "fix.patch").read_text()
    assert report(out)["status"] == "fixed" and report(out)["steps"] == 3


def test_a_pointed_answer_that_changes_nothing_does_not_use_up_a_sample(make_repo, tmp_path):
    repo = make_repo(TWO_LINES)
    out = tmp_path / "out"
    # The greedy edit (a docstring) takes no suspect line out and fixes nothing: undone.
    docstring = {
        "path": "calc.py",
        "old": "def mean(values):",
        "new": 'def mean(values):\n    """Mean."""',
    }
    script = [
        answer("replace", docstring),
        # Pointed at a right line, the model writes it again, as the prompt asks: no edit.
        answer("replace", pinned("calc.py", LINE_4, 4, LINE_4)),
        answer("replace", pinned("calc.py", LINE_5, 5, "return total / len(values)")),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--locate", "--edit-samples", "2", "--no-converse",
                       base_url=server.base_url)  # fmt: skip
        server.assert_all_used()
    # Two samples, no conversation after: had the unchanged answer counted as the second, the
    # run would have ended after it, not fixed.
    assert proc.returncode == 0, proc.stderr
    calls = events(out, "tool_call")
    assert [c["ok"] for c in calls] == [True, False, True]
    assert "old and new are the same: nothing would change" in calls[1]["observation"]
    assert [e["sample"] for e in events(out, "sample_undone")] == [1]  # the greedy edit alone
    assert "+    return total / len(values)" in (out / "fix.patch").read_text()
    assert report(out)["status"] == "fixed" and report(out)["steps"] == 3


def test_a_missing_statement_is_added_after_a_suspect_line(make_repo, tmp_path):
    dedupe = (
        "def dedupe(items):\n    seen = set()\n    out = []\n    for item in items:\n"
        "        if item not in seen:\n            out.append(item)\n    return out\n"
    )
    tests = (
        "from calc import dedupe\n\n\ndef test_dedupe():\n    assert dedupe([1, 1, 2]) == [1, 2]\n"
        "\n\ndef test_empty():\n    assert dedupe([]) == []\n"
    )
    repo = make_repo({"calc.py": dedupe, "tests/test_calc.py": tests, "conftest.py": ""})
    out = tmp_path / "out"
    if_line, append = "if item not in seen:", "out.append(item)"
    # The loop's two lines rank first; each pointed sample writes its line again (no edit, no
    # test run, no sample used); the insertion after the `if` writes the missing statement.
    script = [
        answer("replace", {"path": "calc.py", "old": "no such line", "new": "x"}),  # refused
        answer("replace", pinned("calc.py", if_line, 5, if_line)),
        answer("replace", pinned("calc.py", append, 6, append)),
        answer("replace", pinned("calc.py", if_line, 5, "seen.add(item)")),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--locate", "--moves", "--edit-samples", "2",
                       "--no-converse", base_url=server.base_url)  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    moves = [(e["line"], e["move"]) for e in events(out, "sample_focus")]
    assert moves == [("calc.py:5", "line"), ("calc.py:6", "line"), ("calc.py:5", "insert")]
    hint = server.requests[3]["messages"][-1]["content"]
    assert "\n\nLook at line calc.py:5: if item not in seen:\n" in hint
    assert "Write as new only the line or lines to add after it" in hint
    patch = (out / "fix.patch").read_text()
    assert "+            seen.add(item)\n             out.append(item)" in patch
    assert report(out)["status"] == "fixed"


def test_on_a_flat_ranking_a_small_function_is_rewritten_whole(make_repo, tmp_path):
    area = (
        'def area(w, h):\n    """The area of a w by h rectangle."""\n    width = abs(w)\n'
        "    height = abs(w)\n    return width * height\n"
    )
    tests = (
        "from calc import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n\n\n"
        "def test_square():\n    assert area(2, 2) == 4\n"
    )
    repo = make_repo({"calc.py": area, "tests/test_calc.py": tests, "conftest.py": ""})
    out = tmp_path / "out"
    function = area.rstrip("\n")  # every test runs each of its lines: the ranking ties them
    script = [
        answer("replace", {"path": "calc.py", "old": "no such line", "new": "x"}),  # refused
        answer(
            "replace",
            pinned("calc.py", function, 1, function.replace("height = abs(w)", "height = abs(h)")),
        ),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--locate", "--moves", "--edit-samples", "2",
                       "--no-converse", base_url=server.base_url)  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    assert [(e["line"], e["move"]) for e in events(out, "sample_focus")] == [
        ("calc.py:1-5", "whole")
    ]
    asked = server.requests[1]
    assert pins_of(asked) == {"path": "calc.py", "old": function, "line": 1}
    # The function as it is, docstring and all, and what the failing test said of it.
    hint = asked["messages"][-1]["content"]
    assert "\n\nLook at this function (calc.py:1-5); the failing tests call it:\n" in hint
    assert function in hint
    assert "The failing test tests/test_calc.py::test_area says:" in hint and "4 == 6" in hint
    assert "+    height = abs(h)" in (out / "fix.patch").read_text()
    assert report(out)["status"] == "fixed"


def test_a_sample_that_fixes_part_of_the_failures_is_made_again_and_built_on(make_repo, tmp_path):
    two_bugs = {
        "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n\n\n"
        "def double(x):\n    return x * 3\n",
        "tests/test_calc.py": "from calc import double, mean\n\n\n"
        "def test_mean():\n    assert mean([2, 4, 6]) == 4\n\n\n"
        "def test_double():\n    assert double(2) == 4\n",
        "conftest.py": "",
    }
    repo = make_repo(two_bugs)
    out = tmp_path / "out"
    wrong = {"path": "calc.py", "old": "(len(values) - 1)", "new": "(len(values) - 2)"}
    half = {"path": "calc.py", "old": "(len(values) - 1)", "new": "len(values)"}
    rest = {"path": "calc.py", "old": "x * 3", "new": "x * 2"}
    script = [answer("replace", wrong), answer("replace", half), answer("replace", rest)]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--edit-samples", "2", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    # Neither sample fixed both; the second left one failing of two, so it was made again...
    (kept,) = events(out, "sample_kept")
    assert kept["tests"].startswith("1 passed, 1 failed")
    assert [e["sample"] for e in events(out, "sample_undone")] == [1, 2]
    # ...and the conversation went on from it: its answer and its test run are the last turns
    # the model saw, the first sample's are not there, and any tool may be called again.
    first, second, third = server.requests
    assert second["messages"] == first["messages"] and second["temperature"] == 0.7
    said, told = third["messages"][-2:]
    assert said["role"] == "assistant"
    assert json.loads(said["content"]) == {"tool": "replace", "arguments": half}
    assert "Tests after this patch:\n1 passed, 1 failed" in told["content"]
    assert "(len(values) - 2)" not in json.dumps(third["messages"])
    branches = third["response_format"]["json_schema"]["schema"]["oneOf"]
    tools = [b["properties"]["tool"]["const"] for b in branches]
    assert "read_file" in tools and "final_answer" in tools
    patch = (out / "fix.patch").read_text()
    assert "+    return sum(values) / len(values)" in patch and "+    return x * 2" in patch
    assert report(out)["status"] == "fixed"


@pytest.mark.parametrize("ahead", [True, False], ids=["flag", "config-off"])
def test_verify_ahead_starts_the_clean_recheck_of_each_edit_with_it(make_repo, tmp_path, ahead):
    # On by default for a hosted model: here off in the config, and on again by the flag.
    repo = make_repo({**BUGGY, "worker.toml": "verify_ahead = false\n"})
    out = tmp_path / "out"
    wrong = {"path": "calc.py", "old": "(len(values) - 1)", "new": "(len(values) - 2)"}
    good = {"path": "calc.py", "old": "(len(values) - 2)", "new": "len(values)"}
    script = [tool_call("replace", wrong), tool_call("replace", good)]
    with ScriptedServer(script=script) as server:
        flags = ["--verify-ahead"] if ahead else []
        proc = run_fix(repo, out, *flags, base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    r = report(out)
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    (verification,) = events(out, "verification")
    assert verification["passed"] and verification["tests"].startswith("1 passed, 0 failed")
    # The clean checks, by their folders: ahead, one started with each edit (the wrong one's
    # dropped at the next edit) and the fix's answered the verification; otherwise the one
    # prepared at the start ran once, after the tests said fixed.
    checks = sorted(p.name for p in (out / "run").glob("verify-*"))
    assert checks == (["verify-1", "verify-2"] if ahead else ["verify-1"])
    used = out / "run" / checks[-1]
    assert any("1 passed" in log.read_text() for log in (used / "logs").iterdir())


# A statement missing before a `return`: lines 4 and 5 run in the failing test and in the
# passing one of "abc", the guard in all three; the return decides (`==`), so it ranks first,
# and the ranking is not flat (the guard ranks lower).
PALINDROME = {
    "calc.py": "def is_palindrome(text):\n    if not text:\n        return True\n"
    "    text = text.lower()\n    return text == text[::-1]\n",
    "tests/test_calc.py": "from calc import is_palindrome\n\n\n"
    "def test_phrase():\n    assert is_palindrome('Never odd or even')\n\n\n"
    "def test_word():\n    assert not is_palindrome('abc')\n\n\n"
    "def test_empty():\n    assert is_palindrome('')\n",
    "conftest.py": "",
}
RETURN_5, LOWER_4 = "return text == text[::-1]", "text = text.lower()"


def test_a_missing_statement_is_added_before_a_return(make_repo, tmp_path):
    repo = make_repo(PALINDROME)
    out = tmp_path / "out"
    # Each pointed sample writes its line again (no edit, no test run, no sample used); the
    # insertion before the `return` writes the missing statement, the return copied after it.
    kept = 'text = "".join(c for c in text if c.isalnum())'
    script = [
        answer("replace", {"path": "calc.py", "old": "no such line", "new": "x"}),  # refused
        answer("replace", pinned("calc.py", RETURN_5, 5, RETURN_5)),
        answer("replace", pinned("calc.py", LOWER_4, 4, LOWER_4)),
        answer("replace", pinned("calc.py", RETURN_5, 5, kept + "\n" + RETURN_5)),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--locate", "--moves", "--edit-samples", "2",
                       "--no-converse", base_url=server.base_url)  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    moves = [(e["line"], e["move"]) for e in events(out, "sample_focus")]
    assert moves == [("calc.py:5", "line"), ("calc.py:4", "line"), ("calc.py:5", "insert")]
    hint = server.requests[3]["messages"][-1]["content"]
    assert "Write as new only the line or lines to add before it" in hint
    # The split the run chose, and why, for an evaluation to read.
    (chosen,) = events(out, "sample_split")
    assert (chosen["whole"], chosen["insert"], chosen["cold"], chosen["ranked"]) == (0, 1, 2, 3)
    assert chosen["why"].endswith("a line added before calc.py:5")
    jsonschema.validate(chosen, TRACE_SCHEMA)
    with pytest.raises(jsonschema.ValidationError):  # the schema does describe the event
        jsonschema.validate({**chosen, "why": None}, TRACE_SCHEMA)
    patch = (out / "fix.patch").read_text()
    assert f"     text = text.lower()\n+    {kept}\n     return text ==" in patch
    assert report(out)["status"] == "fixed"


def test_with_no_moves_the_samples_go_as_before_them(make_repo, tmp_path):
    repo = make_repo(PALINDROME)
    out = tmp_path / "out"
    # The same run as the one above, the moves off: the top 3 lines, each cold, no insertion;
    # each answer writes its line again, so the run ends with no sample used.
    script = [
        answer("replace", {"path": "calc.py", "old": "no such line", "new": "x"}),  # refused
        answer("replace", pinned("calc.py", RETURN_5, 5, RETURN_5)),
        answer("replace", pinned("calc.py", LOWER_4, 4, LOWER_4)),
        answer("replace", pinned("calc.py", "if not text:", 2, "if not text:")),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *JSON_MODE, "--locate", "--edit-samples", "2", "--no-converse",
                       "--no-moves", base_url=server.base_url)  # fmt: skip
        server.assert_all_used()
    assert proc.returncode != 0
    moves = [(e["line"], e["move"]) for e in events(out, "sample_focus")]
    assert moves == [("calc.py:5", "line"), ("calc.py:4", "line"), ("calc.py:2", "line")]
    (chosen,) = events(out, "sample_split")
    assert (chosen["insert"], chosen["cold"]) == (0, 3) and chosen["why"].startswith("moves off")
    assert report(out)["status"] != "fixed"
