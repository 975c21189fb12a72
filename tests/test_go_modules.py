"""A repository of several Go modules (sandbox/ecosystems/go/modules.py): each module's tests run
in its own folder, their ids relative to the repository's root. The discovery and the command
in-process; the runs in real containers of the Go image, with `worker fix` end to end against
the scripted model server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from policies.limits import Limits
from sandbox.ecosystems import detect_test_command, ecosystem_for, language_paths
from sandbox.ecosystems.go.ecosystem import GO, GoTestCommand
from sandbox.ecosystems.go.frames import frames
from sandbox.ecosystems.go.modules import find_modules
from sandbox.ecosystems.go.setup_infer import infer_go_setup
from sandbox.session import BoxSpec, SandboxSession, open_session
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge
from tests.test_fix_cli import report, tree_state
from tests.test_go_fix import fix, index  # noqa: F401  (the fixture)
from tests.test_go_test_run import ADD_BUG, ADD_FIX, MODULE
from worker.llm.scripted_server import tool_call

#: The root module (its own packages pass) and a second module in svc/ with the planted bug;
#: a third in examples/ that Go's `./...` from the root would never reach.
SEVERAL = {
    **{k: v for k, v in MODULE.items() if k != "calc/add.go" and k != "calc/add_test.go"},
    "svc/go.mod": "module example.com/svc\n\ngo 1.22\n",
    "svc/calc/add.go": ADD_BUG,
    "svc/calc/add_test.go": MODULE["calc/add_test.go"],
    "examples/go.mod": "module example.com/examples\n\ngo 1.21\n",
    "examples/hello/hello.go": "package hello\n\nfunc Hello() string { return `hi` }\n",
    "examples/hello/hello_test.go": (
        'package hello\n\nimport "testing"\n\n'
        'func TestHello(t *testing.T) {\n\tif Hello() != "hi" {\n\t\tt.Fatal(Hello())\n\t}\n}\n'
    ),
    "vendor/example.com/x/go.mod": "module example.com/x\n",  # not a module of ours
}
FAILING = [
    "svc/calc::TestAdd",
    "svc/calc::TestAdd/one_plus_two",
    "svc/calc::TestAdd/two_plus_two",
]
FIX = (
    "--- a/svc/calc/add.go\n+++ b/svc/calc/add.go\n@@ -1,3 +1,3 @@\n package calc\n \n"
    "-func Add(a, b int) int { return a - b }\n+func Add(a, b int) int { return a + b }\n"
)


def test_the_modules_of_a_repository_and_the_command_that_tests_them_all(make_repo):
    repo = make_repo(SEVERAL)
    modules = find_modules(repo)
    assert [(m.folder, m.path) for m in modules.modules] == [
        (".", "example.com/tools"),
        ("examples", "example.com/examples"),
        ("svc", "example.com/svc"),
    ]
    assert ecosystem_for(repo, None) is GO
    # With no command, the root's module alone, as `go test ./...` there tests it.
    assert detect_test_command(repo) == "go test ./..."
    assert modules.folder_of("example.com/svc/calc") == "svc/calc"
    assert modules.folder_of("example.com/tools/strs") == "strs"
    assert modules.folder_of("example.com/other") is None

    parsed = GoTestCommand.parse("go test -count=1 ./... ./svc/...")  # a command naming svc
    assert parsed is not None
    command = parsed.each_module(["svc/calc::TestAdd/one_plus_two"], report="/r", modules=modules)
    assert "(cd svc && GOFLAGS=-mod=readonly go test -json -count=1 -run '^(TestAdd)$' ./calc" in (
        command
    )
    assert "cd examples" not in command and "(cd . " not in command
    every = parsed.each_module([], report="/r", modules=modules)
    assert "(cd . && GOFLAGS=-mod=readonly go test -json -count=1 ./... >> /r)" in every
    assert "(cd svc && GOFLAGS=-mod=readonly go test -json -count=1 ./... >> /r)" in every

    # Set-up is the tested modules': the root's, which requires nothing. A nested module's
    # own requirements (a benchmark's, a tool's) are not fetched for a run that does not test it.
    nested_needs = make_repo({**SEVERAL, "svc/go.mod": "module example.com/svc\n\ngo 1.22\n\n"
                              "require example.com/unreachable v1.0.0\n"})  # fmt: skip
    assert infer_go_setup(nested_needs).command is None


def test_a_go_work_at_the_root_names_the_modules(make_repo):
    repo = make_repo(
        {
            "go.work": "go 1.22\n\nuse (\n\t./svc\n\t./examples // the docs' code\n)\n",
            **{k: v for k, v in SEVERAL.items() if k.startswith(("svc/", "examples/"))},
            "stray/go.mod": "module example.com/stray\n",  # not in the workspace
        }
    )
    modules = find_modules(repo)
    assert modules.workspace
    assert [m.folder for m in modules.modules] == ["examples", "svc"]
    assert detect_test_command(repo) == "go test ./examples/... ./svc/..."
    # One-letter folders too: each pattern runs in its own module's folder.
    two = find_modules(make_repo(WORKSPACE))
    parsed = GoTestCommand.parse("go test ./a/... ./b/...")
    assert parsed is not None and parsed.groups([], two) == {"a": ["./..."], "b": ["./..."]}


#: A go.work workspace: module a's test calls module b's buggy Add, which a does not require
#: (the workspace provides it).
WORKSPACE = {
    "go.work": "go 1.22\n\nuse (\n\t./a\n\t./b\n)\n",
    "a/go.mod": "module example.com/a\n\ngo 1.22\n",
    "a/twice.go": (
        'package a\n\nimport "example.com/b/calc"\n\n'
        "func Twice(x int) int { return calc.Add(x, x) }\n"
    ),
    "a/twice_test.go": (
        'package a\n\nimport "testing"\n\n'
        "func TestTwice(t *testing.T) {\n\tif Twice(2) != 4 {\n\t\tt.Fatal(Twice(2))\n\t}\n}\n"
    ),
    "b/go.mod": "module example.com/b\n\ngo 1.22\n",
    "b/calc/add.go": ADD_BUG,
}


@pytest.fixture
def session_of(docker_client, go_image, make_repo, tmp_path):
    @contextmanager
    def session(files: dict[str, str]) -> Iterator[SandboxSession]:
        spec = BoxSpec(
            client=docker_client,
            image=go_image,
            limits=Limits(memory_mb=1024, command_timeout_s=120),
            protect=language_paths().protection,
        )
        with open_session(make_repo(files), spec=spec, run_dir=tmp_path / "run") as opened:
            yield opened

    return session


@pytest.fixture
def several(session_of) -> Iterator[SandboxSession]:
    with session_of(SEVERAL) as session:
        yield session


#: The three modules named, as a user would to test them all.
NAMED = "go test ./... ./examples/... ./svc/..."


@pytest.mark.docker
def test_each_modules_tests_run_in_its_folder_and_are_judged_by_id(several):
    test_cmd = NAMED
    root_only = run_tests(several.box, test_cmd=detect_test_command(several.workspace.path))
    assert root_only.summary is not None and root_only.passed, root_only.render()
    assert set(root_only.summary.outcomes) == {"strs::TestReverse", "strs::TestLater"}
    baseline = run_tests(several.box, test_cmd=test_cmd)
    assert baseline.summary is not None, baseline.render()
    assert dict(baseline.summary.outcomes) == {
        "svc/calc::TestAdd": "failed",
        "svc/calc::TestAdd/zero_plus_zero": "passed",
        "svc/calc::TestAdd/one_plus_two": "failed",
        "svc/calc::TestAdd/two_plus_two": "failed",
        "strs::TestReverse": "passed",
        "strs::TestLater": "skipped",
        "examples/hello::TestHello": "passed",
    }
    assert baseline.result.exit_code != 0

    only = run_tests(several.box, test_cmd=test_cmd, test_ids=("svc/calc::TestAdd/one_plus_two",))
    assert only.summary is not None and set(only.summary.outcomes) == {
        "svc/calc::TestAdd",
        *(f"svc/calc::TestAdd/{n}" for n in ("zero_plus_zero", "one_plus_two", "two_plus_two")),
    }

    # A patch that fixes svc but breaks the examples' module is not a pass.
    (several.workspace.path / "svc/calc/add.go").write_text(ADD_FIX)
    (several.workspace.path / "examples/hello/hello.go").write_text(
        "package hello\n\nfunc Hello() string { return greeting }\n"
    )
    broken = run_tests(several.box, test_cmd=test_cmd)
    assert broken.summary is not None, broken.render()
    assert broken.summary.outcomes["svc/calc::TestAdd/one_plus_two"] == "passed"
    assert broken.summary.outcome_of("examples/hello::TestHello") == "error"
    failure = {f.test_id: f for f in broken.summary.failures}["examples/hello"]
    assert "hello/hello.go:3:30: undefined: greeting" in failure.message
    # The compiler's path is from the module's root: the place is found in the repository's.
    found = frames(
        failure.message,
        folder="examples/hello",
        workspace=several.workspace.path,
        module_root=find_modules(several.workspace.path).module_root("examples/hello"),
    )
    assert [f.where() for f in found] == ["examples/hello/hello.go:3"]  # fmt: skip
    assert not judge(broken, baseline=baseline).passed

    (several.workspace.path / "examples/hello/hello.go").write_text(
        SEVERAL["examples/hello/hello.go"]
    )
    fixed = run_tests(several.box, test_cmd=test_cmd)
    assert fixed.result.exit_code == 0, fixed.render()
    assert judge(fixed, baseline=baseline).passed


@pytest.mark.docker
def test_a_workspaces_modules_use_each_other_and_a_fix_in_one_passes_the_others(session_of):
    with session_of(WORKSPACE) as session:
        test_cmd = detect_test_command(session.workspace.path)
        assert test_cmd == "go test ./a/... ./b/..."
        baseline = run_tests(session.box, test_cmd=test_cmd)
        assert baseline.summary is not None, baseline.render()
        assert dict(baseline.summary.outcomes) == {"a::TestTwice": "failed"}
        (session.workspace.path / "b/calc/add.go").write_text(ADD_FIX)
        fixed = run_tests(session.box, test_cmd=test_cmd, test_ids=("a::TestTwice",))
        assert judge(fixed, baseline=baseline).passed, fixed.render()


@pytest.mark.docker
def test_worker_fix_on_a_repository_of_several_modules(make_repo, tmp_path, index):  # noqa: F811
    repo = make_repo(SEVERAL)
    before = tree_state(repo)
    script = [tool_call("apply_patch", {"patch": FIX})]
    proc, server = fix(repo, tmp_path / "out", index, script, "--test-cmd", NAMED)
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert "(cd svc && GOFLAGS=-mod=readonly go test -json ./... >> /tmp/" in r["test_cmd"]
    assert sorted(r["tests_before"]["failing"]) == FAILING
    assert r["verdict"]["rule"] == "junit", r["verdict"]
    assert r["setup"]["toolchain"]["why"] == "go 1.22 in go.mod"
    assert tree_state(repo) == before
    first = server.requests[0]["messages"][1]["content"]
    assert "svc/calc::TestAdd/one_plus_two" in first
    assert "svc/calc/add.go: Add, lines 3-3" in first, first
