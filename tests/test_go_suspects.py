"""Suspects and grounding on a Go module: the failures of a real `go test -json` run in a real
sandbox container (worker-sandbox:go1.24) read into the lines to suspect (a panic's stack, a
compiler error) and the code the first message shows (the functions and methods the failing
tests call, found with tree-sitter's Go grammar)."""

from __future__ import annotations

import doctest
from collections.abc import Iterator

import pytest

import sandbox.ecosystems.go.frames as go_frames
from policies.limits import Limits
from sandbox.ecosystems import language_paths
from sandbox.ecosystems.go import grounding as go_grounding
from sandbox.ecosystems.go.ecosystem import GO
from sandbox.session import BoxSpec, SandboxSession, open_session
from sandbox.testrun.run import TestRun, run_tests
from tests.conftest import git
from worker.loop.trace import Trace
from worker.search.locate import locate
from worker.search.reached import reached_suspects

pytestmark = pytest.mark.docker

MODULE = {
    "go.mod": "module example.com/shapes\n\ngo 1.22\n",
    "calc/add.go": (
        "package calc\n\n"
        "// Add adds.\n"
        "func Add(a, b int) int { return sum(a, -b) }\n\n"
        "func sum(xs ...int) int {\n\tt := 0\n\tfor _, x := range xs {\n\t\tt += x\n\t}\n"
        "\treturn t\n}\n\n"
        "func Unused() int { return 0 }\n"
    ),
    "calc/div.go": (
        "package calc\n\n"
        "func Div(a, b int) int {\n"
        "\tif b == 1 {\n"  # line 4: the planted bug (b == 0)
        '\t\tpanic("division by zero")\n'  # line 5
        "\t}\n\treturn a / b\n}\n"
    ),
    "calc/stack.go": (
        "package calc\n\ntype Stack struct{ xs []int }\n\n"
        "func (s *Stack) Push(x int) { s.xs = append(s.xs, x) }\n\n"
        "func (s *Stack) Len() int { return len(s.xs) - 1 }\n\n"
        "func (s *Stack) Pop() int { return 0 }\n"
    ),
    "calc/calc_test.go": (
        'package calc_test\n\nimport (\n\t"testing"\n\n\t"example.com/shapes/calc"\n)\n\n'
        "func TestAdd(t *testing.T) {\n"
        '\tt.Run("one and two", func(t *testing.T) {\n'
        "\t\tif got := calc.Add(1, 2); got != 3 {\n"
        '\t\t\tt.Errorf("Add(1, 2) = %d", got)\n\t\t}\n\t})\n}\n\n'
        "func TestStack(t *testing.T) {\n\ts := &calc.Stack{}\n\ts.Push(1)\n"
        '\tif s.Len() != 1 {\n\t\tt.Fatal("len")\n\t}\n}\n\n'
        'func TestDiv(t *testing.T) {\n\tif calc.Div(4, 1) != 4 {\n\t\tt.Fatal("div")\n\t}\n}\n'
    ),
    "strs/rev.go": "package strs\n\nfunc Reverse(s string) string { return undefinedThing }\n",
    "strs/rev_test.go": (
        'package strs\n\nimport "testing"\n\nfunc TestReverse(t *testing.T) { _ = Reverse("a") }\n'
    ),
}


@pytest.fixture(scope="module")
def baseline(docker_client, go_image, tmp_path_factory) -> Iterator[tuple[TestRun, SandboxSession]]:
    repo = tmp_path_factory.mktemp("go-suspects")
    for rel, text in MODULE.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    spec = BoxSpec(
        client=docker_client,
        image=go_image,
        limits=Limits(memory_mb=1024, command_timeout_s=120),
        protect=language_paths().protection,
    )
    run_dir = tmp_path_factory.mktemp("go-suspects-run")
    with open_session(repo, spec=spec, run_dir=run_dir) as session:
        yield run_tests(session.box, test_cmd="go test ./..."), session


def test_go_places_are_read_as_files_of_the_working_copy():
    assert doctest.testmod(go_frames).failed == 0


def test_suspects_are_the_panics_guard_and_the_compilers_line_never_a_test(baseline, tmp_path):
    run, session = baseline
    assert run.summary is not None
    assert set(run.summary.outcomes) >= {"calc::TestDiv", "strs"}, run.summary.outcomes
    with Trace(path=tmp_path / "trace.jsonl") as trace:
        suspects = locate(
            GO, session.box, run, workspace=session.workspace.path, paths=language_paths(),
            timeout_s=1.0, trace=trace,
        )  # fmt: skip
    where = [s.where() for s in suspects]
    # The `if` that decided to panic ranks before the panic; the compiler's line is there too.
    assert where[:2] == ["calc/div.go:4", "calc/div.go:5"], where
    assert "strs/rev.go:3" in where
    assert not any("_test.go" in w for w in where), where
    assert suspects[0].text == "if b == 1 {" and ">4| \tif b == 1 {" in suspects[0].around
    assert '"source": "go test failures"' in (tmp_path / "trace.jsonl").read_text()


def test_the_grounding_shows_what_the_failing_tests_call_and_nothing_else(baseline):
    run, session = baseline
    grounding = go_grounding.implicated_code(
        run, workspace=session.workspace.path, paths=language_paths()
    )
    text = grounding.text
    assert grounding.shows_code
    heads = [line for line in text.splitlines() if not line[:1].isspace() and ": " in line]
    titles = {h.split(": ")[1].split(",")[0] for h in heads}
    # Div: the panic's frame, Reverse: the compiler's; Add (through the import, from a
    # subtest), Stack's methods the test calls on a value, and sum, which Add calls; no
    # Unused, no Pop, no test code.
    assert titles == {"Div", "Reverse", "Add", "sum", "Stack.Push", "Stack.Len"}, heads
    assert heads[0].startswith("calc/div.go: Div, lines 3-8")
    assert "calc/add.go: Add, lines 3-4" in text and "\n4| func Add(a, b int) int" in text
    assert "calc_test.go" not in text
    files = go_grounding.implicated_files(
        run, workspace=session.workspace.path, paths=language_paths(), limit=3
    )
    assert files[:2] == ["calc/div.go", "strs/rev.go"] and "calc/add.go" in files


def test_where_no_failure_names_a_line_the_called_functions_lines_are_the_suspects(baseline):
    # TestAdd's and TestStack's failures name only their own lines (t.Errorf in the test):
    # the functions the failing tests call are where to look, deciding lines first.
    run, session = baseline
    workspace = session.workspace.path
    grounding = go_grounding.implicated_code(run, workspace=workspace, paths=language_paths())
    assert ("calc/add.go", 3, 4) in grounding.functions  # its comment, its line
    suspects = reached_suspects(
        grounding.functions, workspace=workspace, allowed=lambda rel: not rel.endswith("_test.go")
    )
    where = [s.where() for s in suspects]
    assert where[0] == "calc/div.go:4" and suspects[0].reached, where  # `if b == 1 {` decides
    assert {"calc/add.go:4", "calc/stack.go:7", "calc/add.go:9"} <= set(where), where
    assert "calc/add.go:6" not in where  # sum's signature: structure, not a suspect
    assert not any("_test.go" in w or w.startswith("calc/stack.go:9") for w in where)
