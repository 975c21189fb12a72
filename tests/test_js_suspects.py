"""Suspect lines on JavaScript and TypeScript (sandbox/ecosystems/node/places.py): the frames of the
failing tests' stacks in the repository's own code, from what real runners write (vitest, jest,
ts-jest, mocha, `node --test`: tests/js_reports.py says how the reports were made). Pure logic
over real files in a temporary copy of each project."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from policies.paths import PathPolicy
from sandbox.container.docker_sandbox import WORKSPACE_MOUNT
from sandbox.ecosystems import language_paths
from sandbox.ecosystems.node import stack_frames
from sandbox.ecosystems.node.ecosystem import NODE
from sandbox.ecosystems.node.places import failure_places
from sandbox.ecosystems.node.stack_frames import failure_texts, frames, is_test_file
from tests.js_reports import project, report, run_of, text_failures, xml_failures
from worker.loop.trace import Trace
from worker.search.frame_tally import rank_places
from worker.search.locate import locate
from worker.search.suspects import Suspect, render

WRITABLE = language_paths()


def allowed(rel: str) -> bool:
    return WRITABLE.check(rel, write=True).allowed


def rank_frames(texts: list[str], *, workspace: Path, allowed) -> list[Suspect]:
    """The suspects of `texts` as the search ranks the places the Node package reads."""
    places, lines = failure_places(texts, workspace=workspace, allowed=allowed)
    return rank_places(places, lines=lines, failed=len(texts))


def locate_in_stacks(run, *, workspace: Path, paths: PathPolicy, trace: Trace) -> list[Suspect]:
    """The search's suspects of a JavaScript run, as `worker fix` asks for them."""
    return locate(NODE, None, run, workspace=workspace, paths=paths, timeout_s=1.0, trace=trace)


def where(texts: list[str], ws: Path) -> list[str]:
    return [s.where() for s in rank_frames(texts, workspace=ws, allowed=allowed)]


def test_the_frames_of_each_runners_report_are_the_repositorys_files_in_order():
    # V8's forms (`at f (path:l:c)`, `at path:l:c`, a file URL), TAP's without `at`, vitest's
    # `❯ f path:l:c` in colour, jest's relative paths, tsc's `path:l:c - error`: the runner's
    # own frames (`node:internal`, node_modules under the workspace) are not the repository's.
    def found(text: str) -> list[str]:
        return [f.where() for f in frames(text) if not stack_frames.is_dependency(f.path)]

    assert found(report("vitest.txt")) == [
        "test/stats.test.ts:6", "src/stats/range.ts:9", "test/stats.test.ts:9",
    ]  # fmt: skip
    assert found(report("jest.txt")) == [
        "__tests__/util.test.js:4", "lib/util/words.js:2", "__tests__/util.test.js:8",
        "__tests__/util.test.js:12",
    ]  # fmt: skip
    assert found(report("ts-jest.txt")) == ["src/parse.ts:8", "tests/parse.test.ts:5"]
    assert found(report("mocha.txt")) == [
        "test/queue.spec.mjs:8", "src/queue.mjs:11", "test/queue.spec.mjs:14",
    ]  # fmt: skip
    assert found(report("node-test.tap.txt")) == [  # each test's `location:`, then its stack
        "test/mean.test.js:5", "test/mean.test.js:6", "test/mean.test.js:9", "src/mean.js:13",
        "src/mean.js:9", "test/mean.test.js:10",
    ]  # fmt: skip
    assert found(report("node-test-cjs.tap.txt"))[:3] == [
        "lib/defaults.js:5", "lib/index.js:2", "test/load.test.js:1",
    ]  # fmt: skip
    vitest_json = json.loads(report("vitest.json"))["testResults"][0]["assertionResults"]
    stack = "\n".join(vitest_json[1]["failureMessages"])
    assert "node_modules/@vitest/runner/dist/chunk-artifact.js" in frames(stack)[2].path
    assert found(stack) == ["src/stats/range.ts:9", "test/stats.test.ts:9"]


def test_paths_map_from_the_mount_the_host_copy_and_urls_and_nothing_leads_outside(tmp_path):
    host = tmp_path / "workspace"
    text = (
        f"    at a ({host}/src/a.js:3:1)\n"
        "    at b (file:///workspace/src/b%20c.mjs:4:2)\n"
        "    at /workspace/src/../lib/d.cts:5:3\n"
        "    at e (/workspace/../etc/passwd.js:1:1)\n"
        "    at f (/home/runner/work/x/src/a.js:9:9)\n"
        "    at g (../outside.js:1:1)\n"
        "    at h (node:internal/modules/cjs/loader:1521:14)\n"
        "    at i (/workspace/src/a.js:3:7)\n"  # the same line again: once
        "src/types.ts:12:5 - error TS2322: Type 'string' is not assignable to type 'number'.\n"
    )
    assert [f.where() for f in frames(text, workspace=host)] == [
        "src/a.js:3", "src/b c.mjs:4", "lib/d.cts:5", "src/types.ts:12",
    ]  # fmt: skip
    # The mount this module maps from is the one the container sandbox uses.
    assert stack_frames.WORKSPACE_MOUNT == WORKSPACE_MOUNT


def test_test_files_follow_the_policys_test_globs():
    tests = ["src/a.test.js", "src/a.spec.tsx", "__tests__/x.js", "test/helpers.mjs",
             "packages/p/tests/b.cts", "spec/c.js", "src/d.test.mts"]  # fmt: skip
    sources = ["src/a.js", "src/testing.js", "lib/contest.ts", "src/latest/x.js"]
    assert all(is_test_file(p) for p in tests)
    assert not any(is_test_file(p) for p in sources)


def test_a_thrown_errors_stack_ranks_its_repository_frames_deepest_first(tmp_path):
    ws = project("node-test", tmp_path)
    texts = [f.traceback for f in xml_failures("node-test.junit.xml")]
    found = rank_frames(texts, workspace=ws, allowed=allowed)
    # `checked` calls `helper`, which throws in its map callback: helper's line first; the
    # assertion failure of `mean of three` passes through no source line, so adds none.
    assert [s.where() for s in found] == ["src/mean.js:13", "src/mean.js:9"]
    assert found[0].text == "return xs.map((x) => x.toFixed(2));"
    assert found[0].around.splitlines() == [
        " 11| ", " 12| function helper(xs) {", ">13|   return xs.map((x) => x.toFixed(2));",
        " 14| }",
    ]  # fmt: skip
    assert (found[0].ef, found[0].score, found[0].from_stack) == (1, 0.5, True)


def test_a_line_more_failing_tests_pass_through_ranks_first(tmp_path):
    ws = project("jest", tmp_path)
    failures = xml_failures("jest.junit.xml")
    found = rank_frames([f.traceback for f in failures], workspace=ws, allowed=allowed)
    # Two of the three failing tests throw in words.js:2 (two frames of it: one line); the
    # test file's frames and jest's own in node_modules are no suspects.
    assert [s.where() for s in found] == ["lib/util/words.js:2"]
    assert (found[0].ef, round(found[0].score, 3)) == (2, 0.667)
    assert render(found, failed=3) == (
        "  lib/util/words.js:2: return text.trim().split(' ').map((w) => w.name.length);"
        "   (in the stack of 2 of 3 failing tests)"
    )
    # Many tests through a caller outrank one test's deeper frame.
    (ws / "lib" / "a.js").write_text("function a() {\n  return b();\n}\n")
    (ws / "lib" / "c.js").write_text("function c() {\n  throw new Error('c');\n}\n")
    caller = "\n    at a (/workspace/lib/a.js:2:10)"
    one = "Error: b\n    at b (/workspace/lib/util/slug.js:3:9)" + caller
    two = "Error: c\n    at c (/workspace/lib/c.js:2:9)" + caller
    assert where([one, two], ws) == ["lib/a.js:2", "lib/util/slug.js:3", "lib/c.js:2"]


@pytest.mark.parametrize(
    ("name", "reported", "head", "expected"),
    [
        ("vitest", "vitest.txt", r" FAIL (.*)$", ["src/stats/range.ts:9"]),  # in colour
        ("ts-jest", "ts-jest.txt", r"^  ● (.*)$", ["src/parse.ts:8"]),
        ("mocha", "mocha.txt", r"^  \d\) (.*)$", ["src/queue.mjs:11"]),
        ("node-test", "node-test.tap.txt", r"^not ok \d+ - (.*)$",
         ["src/mean.js:13", "src/mean.js:9"]),
    ],
)  # fmt: skip
def test_each_runners_console_report_gives_the_line_that_threw(
    tmp_path, name, reported, head, expected
):
    ws = project(name, tmp_path)
    texts = [f.traceback for f in text_failures(reported, head)]
    assert texts and where(texts, ws) == expected


def test_a_module_that_throws_as_it_loads_is_found_in_the_runs_output(tmp_path):
    # node --test reports a test file that failed to load as "test failed"; the stack is on the
    # file's stderr, in the run's output.
    ws = project("node-test-cjs", tmp_path)
    failures = xml_failures("node-test-cjs.junit.xml")
    assert not frames(failures[0].traceback) and "test failed" in failures[0].traceback
    run = run_of(failures, output=report("node-test-cjs.tap.txt"))
    found = locate_in_stacks(run, workspace=ws, paths=WRITABLE, trace=Trace(path=None))
    assert [s.where() for s in found] == ["lib/defaults.js:5", "lib/index.js:2"]
    assert found[0].text.startswith("const level = levels.find(")
    assert len(failure_texts(run, workspace=ws)) == 2  # the failure's, then the output


def test_refused_paths_dependencies_links_and_lines_past_the_end_are_left_out(tmp_path):
    ws = project("node-test", tmp_path)
    (ws / "node_modules" / "dep").mkdir(parents=True)
    (ws / "node_modules" / "dep" / "index.js").write_text("module.exports = 1;\n" * 5)
    (ws / "vendor").mkdir()
    (ws / "vendor" / "x.js").write_text("x();\n")
    (ws / "src" / "link.js").symlink_to(tmp_path / "elsewhere.js")
    (tmp_path / "elsewhere.js").write_text("secret();\n")
    (ws / "src" / "notes.js").write_text("// a note\n\nrun();\n")
    text = "\n".join(
        f"    at f (/workspace/{where})"
        for where in ("node_modules/dep/index.js:2:1", "vendor/x.js:1:1", "src/link.js:1:1",
                      "src/notes.js:1:1", "src/notes.js:2:1", "src/mean.js:99:1",
                      "test/mean.test.js:6:10", "src/notes.js:3:1")
    )  # fmt: skip
    policy = language_paths().with_overrides(write_deny=["vendor/**"])
    found = rank_frames(
        [text], workspace=ws, allowed=lambda rel: policy.check(rel, write=True).allowed
    )
    assert [s.where() for s in found] == ["src/notes.js:3"]


def test_the_trace_says_what_was_found_and_no_failure_means_no_suspects(tmp_path):
    ws = project("mocha", tmp_path)
    run = run_of(xml_failures("mocha.xunit.xml"))
    with Trace(path=tmp_path / "trace.jsonl") as trace:
        found = locate_in_stacks(run, workspace=ws, paths=WRITABLE, trace=trace)
        assert locate_in_stacks(run_of([]), workspace=ws, paths=WRITABLE, trace=trace) == []
    assert [s.where() for s in found] == ["src/queue.mjs:11"]
    events = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    event = next(e for e in events if e["type"] == "suspects")
    assert event["source"] == "stack traces" and event["failed"] == 2
    assert event["lines"] == [
        {"where": "src/queue.mjs:11", "text": "return this.items.pop().value;", "ef": 1, "ep": None}
    ]


def test_a_throw_brings_the_condition_that_decided_it_first(tmp_path):
    (tmp_path / "index.js").write_text(
        "function append(header, field) {\n"
        "  if (typeof header !== 'object' ||\n"
        "      !field) {\n"
        "    throw new TypeError('header argument is required')\n"
        "  }\n"
        "  if (!field.length) throw new TypeError('empty')\n"
        "  return header + field\n"
        "}\n"
    )
    # vary's own message and stack, with its type check flipped as a planted bug would.
    wrong = (
        "TypeError: header argument is required\n"
        "    at append (/workspace/index.js:4:11)\n"
        "    at Context.<anonymous> (/workspace/test/test.js:415:16)"
    )
    found = rank_frames([wrong], workspace=tmp_path, allowed=allowed)
    assert [s.where() for s in found] == ["index.js:2", "index.js:4"]
    assert found[0].text == "if (typeof header !== 'object' ||" and found[0].ef == 1
    # A throw whose condition is on its own line has no other line to bring.
    empty = "TypeError: empty\n    at append (/workspace/index.js:6:25)"
    assert where([empty], tmp_path) == ["index.js:6"]
