"""A Go module's set-up, end to end with real parts: `go mod download` inferred from go.mod, run
in a container of the real Go image behind the real fence (tinyproxy), against a real module
proxy (a static tree served on the test's own network: tests/go_proxy.py), committed as an
image; the tests then run from that image in a hardened sandbox with no network, by test id.

Every container and network here is the test's own; no request leaves them."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import docker
import docker.errors
import pytest

from policies.limits import Limits
from sandbox.ecosystems.go.ecosystem import GO
from sandbox.ecosystems.go.image import seed_command
from sandbox.ecosystems.go.setup_infer import infer_go_setup
from sandbox.session import BoxSpec, open_session
from sandbox.setup.cache import SetupFailed, SetupResult, SetupSpec, prepare_setup_image
from sandbox.testrun.run import run_tests
from tests.go_proxy import build_proxy, go_sum
from tests.pkg_index import Served, bridge_network, serve_folder
from worker.cli.exit_codes import exit_code_for

pytestmark = pytest.mark.docker

LIMITS = Limits(memory_mb=1024, command_timeout_s=300)
GREET = {
    "example.com/greet": {
        "v1.0.0": {
            "go.mod": "module example.com/greet\n\ngo 1.22\n",
            "greet.go": 'package greet\n\nfunc Hello(n string) string { return "hello, " + n }\n',
        }
    }
}
APP_TEST = (
    'package app\n\nimport (\n\t"testing"\n\n\t"example.com/greet"\n)\n\n'
    'func TestHello(t *testing.T) {\n\tif greet.Hello("go") != "hello, go" {\n'
    '\t\tt.Fatal("no")\n\t}\n}\n'
)


def module(requires: str) -> dict[str, str]:
    """A module requiring `requires`; a comment of its own, so that a set-up cached by an
    earlier run is never this one's."""
    return {
        "go.mod": f"module example.com/app // {os.urandom(6).hex()}\n\ngo 1.22\n\n"
        f"require {requires}\n",
        "app.go": "package app\n",
        "app_test.go": APP_TEST,
    }


@pytest.fixture
def egress(docker_client) -> Iterator[str]:
    with bridge_network(docker_client) as name:
        yield name


@pytest.fixture
def proxy(docker_client, sandbox_image, egress, tmp_path) -> Iterator[Served]:
    root = tmp_path / "goproxy"
    build_proxy(root, GREET)
    with serve_folder(docker_client, image=sandbox_image, network=egress, root=root) as served:
        yield served


@pytest.fixture
def set_up(docker_client, go_image, sandbox_image, proxy, egress) -> Iterator[Callable]:
    made: list[str] = []

    def run(repo: Path, *, progress: Callable[[str], None] = print) -> SetupResult:
        environ: Mapping[str, str] = {"GOPROXY": proxy.base_url, "GONOSUMDB": "example.com"}
        plan = infer_go_setup(repo)
        assert plan.command is not None, plan.describe()
        progress(plan.describe())
        spec = SetupSpec(command=plan.command, installer=plan.installer)
        result = prepare_setup_image(
            docker_client, base_image=go_image, spec=spec, repo=repo, limits=LIMITS,
            progress=progress, egress_network=egress, environ=environ,
            proxy_image=sandbox_image,
        )  # fmt: skip
        made.append(result.image)
        return result

    yield run
    for image in made:
        try:
            docker_client.images.remove(image, force=True)
        except docker.errors.ImageNotFound:
            pass


def test_modules_come_through_the_fence_and_the_tests_find_them_offline(
    docker_client, make_repo, proxy, set_up, tmp_path
):
    repo = make_repo({**module("example.com/greet v1.0.0"), "go.sum": go_sum(GREET)})
    lines: list[str] = []
    result = set_up(repo, progress=lines.append)
    assert lines[0] == (
        "inferred set-up: go mod download (1 modules required in go.mod), then the packages the "
        "tests import compiled into the build cache"
    )
    assert result.allowed_hosts == ("proxy.golang.org", "sum.golang.org", proxy.host)
    assert '"GET /example.com/greet/@v/v1.0.0.zip HTTP/1.1"' in "\n".join(
        f'"{r}"' for r in proxy.requests()
    ), proxy.requests()
    spec = BoxSpec(client=docker_client, image=result.image, limits=LIMITS, overlay=result.tree)
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        ran = run_tests(session.box, test_cmd="go test ./...")
        assert ran.summary is not None, ran.render()
        assert dict(ran.summary.outcomes) == {".::TestHello": "passed"}, ran.render()
        assert session.workspace.git("status", "--porcelain").decode() == ""


VENDORED = {
    "vendor/modules.txt": "# example.com/greet v1.0.0\n## explicit; go 1.22\nexample.com/greet\n",
    "vendor/example.com/greet/greet.go": GREET["example.com/greet"]["v1.0.0"]["greet.go"],
}


@pytest.mark.parametrize("where", ["proxy", "vendor"])
def test_the_agents_first_go_test_compiles_no_package_set_up_compiled(
    docker_client, make_repo, set_up, tmp_path, where
):
    # Set-up's build cache is on the image's disk and each test run starts from it: in the
    # agent's sandbox (read-only root, no network), a first `go test -x` from a fresh GOCACHE,
    # filled as a test run fills it, compiles neither the dependency nor the module's package;
    # only the test binary's generated main. Without set-up's cache it compiles all three. A
    # module that vendors its dependency downloads nothing and is warmed from vendor/.
    sums = {"go.sum": go_sum(GREET)} if where == "proxy" else VENDORED
    repo = make_repo({**module("example.com/greet v1.0.0"), **sums})
    result = set_up(repo, progress=lambda _: None)
    spec = BoxSpec(client=docker_client, image=result.image, limits=LIMITS, overlay=result.tree)
    mod = "readonly" if where == "proxy" else "vendor"
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        ran = run_tests(session.box, test_cmd="go test ./...")
        assert ran.summary is not None and ran.summary.all_passed, ran.render()
        probe = session.box.run(
            f"export GOCACHE=/tmp/probe-cache GOFLAGS=-mod={mod}; {seed_command()}; "
            "go test -x ./... 2>&1",
            timeout_s=120,
        )
    assert probe.ok, probe.output
    compiled = re.findall(r"/compile .* -p (\S+) ", probe.output)
    assert compiled == ["main"], probe.output[-3000:]


def test_a_module_the_proxy_lacks_fails_set_up_in_one_line_naming_it(make_repo, set_up):
    repo = make_repo(module("example.com/gone v1.2.3"))
    with pytest.raises(SetupFailed) as caught:
        set_up(repo)
    said = str(caught.value)
    assert "\n" not in said and "example.com/gone@v1.2.3" in said, said
    assert exit_code_for(caught.value) == 6


def test_a_go_sum_without_the_modules_entry_is_said_in_one_line_with_no_lookup(
    docker_client, make_repo, set_up, tmp_path
):
    # Set-up downloads the module (go.sum is not needed for that); the test run is read-only
    # in go.mod and go.sum (-mod=readonly, as CI's go test): it looks nothing up, and the
    # compiler's complaint, in the report's build output, is the environment's, not a bug.
    repo = make_repo(module("example.com/greet v1.0.0"))
    result = set_up(repo, progress=lambda _: None)
    spec = BoxSpec(client=docker_client, image=result.image, limits=LIMITS, overlay=result.tree)
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        ran = run_tests(session.box, test_cmd="go test ./...")
    assert ran.summary is not None and ran.summary.outcomes == {".": "error"}, ran.render()
    assert "dial tcp" not in ran.result.output and "sum.golang.org" not in ran.result.output
    said = GO.environment_problem(ran, repo, setup_said="set-up ran go mod download")
    assert said == (
        "go.sum has no entry for the module providing the package example.com/greet; "
        "set-up ran go mod download"
    )


def test_a_module_set_up_did_not_download_is_said_in_one_line(
    docker_client, go_image, make_repo, tmp_path
):
    repo = make_repo({**module("example.com/greet v1.0.0"), "go.sum": go_sum(GREET)})
    spec = BoxSpec(client=docker_client, image=go_image, limits=LIMITS)  # no set-up ran
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        ran = run_tests(session.box, test_cmd="go test ./...")
    assert ran.summary is not None and ran.summary.outcomes == {".": "error"}, ran.render()
    said = GO.environment_problem(ran, repo, setup_said="no set-up ran")
    assert said == (
        "the module example.com/greet@v1.0.0 is not downloaded (set-up did not fetch it); "
        "no set-up ran"
    )
