"""The lock-file tool's cached layer, with real parts: a real daemon, the real set-up fence, real
PyPI through it (uv from its wheel, six for a project), two uv-locked projects.

The tool is installed once, on an empty tree, into its layer; the second project that needs it
starts from that layer and its set-up only installs its own dependencies. The base image is the
sandbox image under an id of this test's own, so the layer is this test's and built here."""

from __future__ import annotations

import os
from collections.abc import Iterator

import docker
import docker.errors
import pytest

from policies.limits import Limits
from sandbox.ecosystems.python.setup_infer import infer_setup
from sandbox.setup.cache import SetupSpec
from sandbox.setup.tool_layer import prepare_setup

LIMITS = Limits(memory_mb=1024, command_timeout_s=300)
PYPROJECT = (
    '[project]\nname = "{name}"\nversion = "0.1"\nrequires-python = ">=3.11"\n'
    "dependencies = [{deps}]\n\n[tool.uv]\npackage = false\n"
)
LOCK_HEAD = 'version = 1\nrevision = 5\nrequires-python = ">=3.11"\n'
PROJECT_A = LOCK_HEAD + '\n[[package]]\nname = "wkdemo-a"\nversion = "0.1"\n'
PROJECT_A += 'source = { virtual = "." }\n'
# As `uv lock` 0.13.9 wrote it for a project that needs six 1.16.0.
PROJECT_B = LOCK_HEAD + (
    '\n[[package]]\nname = "six"\nversion = "1.16.0"\n'
    'source = { registry = "https://pypi.org/simple" }\n'
    'wheels = [\n    { url = "https://files.pythonhosted.org/packages/d9/5a/'
    'e7c31adbe875f2abbb91bd84cf2dc52d792b5a01506781dbcf25c91daf11/six-1.16.0-py2.py3-none-any.whl"'
    ', hash = "sha256:8abb2f1d86890a2dfb989f9a77cfcfd3e47c2a354b01111771326f8aa26e0254", '
    "size = 11053 },\n]\n"
    '\n[[package]]\nname = "wkdemo-b"\nversion = "0.1"\nsource = { virtual = "." }\n'
    'dependencies = [\n    { name = "six" },\n]\n\n[package.metadata]\n'
    'requires-dist = [{ name = "six", specifier = "==1.16.0" }]\n'
)


@pytest.fixture
def fresh_base(docker_client: docker.DockerClient, sandbox_image: str) -> Iterator[list[str]]:
    """The sandbox image under a new id (a label of its own) first; then what the test built
    on it, all removed at teardown, the newest first."""
    made = docker_client.api.create_container(sandbox_image, command=["true"])
    name = f"worker-test-base:{os.urandom(6).hex()}"
    try:
        docker_client.api.commit(
            made["Id"], repository=name.split(":")[0], tag=name.split(":")[1],
            conf={"Labels": {"worker.test.base": name}},
        )  # fmt: skip
    finally:
        docker_client.api.remove_container(made["Id"])
    images = [name]
    yield images
    for image in reversed(images):
        try:
            docker_client.images.remove(image, force=True)
        except docker.errors.ImageNotFound:
            pass


def test_a_second_project_with_the_same_tool_starts_from_its_layer(
    docker_client, make_repo, fresh_base
):
    def set_up(name: str, deps: str, lock: str) -> tuple[list[str], str, str]:
        files = {"pyproject.toml": PYPROJECT.format(name=name, deps=deps), "uv.lock": lock}
        repo = make_repo({**files, "tests/test_it.py": "def test_it():\n    pass\n"})
        plan = infer_setup(repo)
        assert plan.command is not None and plan.tool is not None
        spec = SetupSpec(command=plan.command, installer=plan.installer, tool=plan.tool)
        lines: list[str] = []
        done = prepare_setup(
            docker_client, base_image=fresh_base[0], spec=spec, repo=repo, limits=LIMITS,
            progress=lines.append,
        )  # fmt: skip
        fresh_base.append(done.image)
        assert done.log is not None
        return lines, done.image, done.log.read_text()

    said = "set-up tool: uv 0.13.9 (the pinned default)"
    first, first_image, _ = set_up("wkdemo-a", "", PROJECT_A)
    built = [line for line in first if line.startswith(f"{said}: installing it once, into ")]
    assert built, first
    layer = built[0].rsplit(" ", 1)[1]
    fresh_base.insert(1, layer)  # removed after the set-up images on it
    # Its own set-up ran behind the fence, said as the tool's.
    assert any(line.startswith("set-up tool uv: (network: only pypi.org") for line in first)

    second, second_image, log = set_up("wkdemo-b", '"six==1.16.0"', PROJECT_B)
    assert f"{said}, cached: {layer}" in second
    assert not [line for line in second if line.startswith("set-up tool uv:")], second
    # The second set-up installed the project's dependencies only, not the tool.
    assert "Successfully installed six-1.16.0" in log and "Collecting uv" not in log
    labels = [
        docker_client.images.get(i).labels["worker.base"] for i in (first_image, second_image)
    ]
    assert labels == [layer, layer]
    # The tests' environment has the project's dependencies, not the tool, and the layer holds
    # nothing of either project.
    check = "python -c 'import six'; command -v uv || echo no-uv-on-path; ls /opt/worker-deps/tools"
    out = docker_client.containers.run(
        second_image, ["sh", "-c", check], network_mode="none", remove=True, stderr=True
    )
    assert bytes(out).decode().split() == ["no-uv-on-path", "uv-0.13.9"]
    listed = "ls -A /workspace /opt/worker-setup-tree 2>/dev/null | grep -v :; true"
    out = docker_client.containers.run(
        layer, ["sh", "-c", listed], network_mode="none", remove=True
    )
    assert bytes(out).decode().split() == []
