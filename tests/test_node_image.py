"""The Node image, built for real from a registry on loopback (tests/npm_node.py), and Node, npm
and corepack working in a hardened sandbox made from it. One build per module."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import docker
import docker.errors
import pytest

from policies.limits import Limits
from sandbox.ecosystems.node.image import NodeImage, ensure_node_image
from sandbox.session import BoxSpec, open_session
from tests.npm_node import LoopbackRegistry, npm_node_registry  # noqa: F401 (a fixture)
from tests.test_sandbox_cli import worker

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def node_image(
    docker_client: docker.DockerClient,
    npm_node_registry: LoopbackRegistry,  # noqa: F811
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[NodeImage]:
    """worker-sandbox:nodeimage-test-<random>, built once from the loopback registry in an
    empty worker home; removed at the end."""
    name = f"worker-sandbox:nodeimage-test-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKER_HOME", str(tmp_path_factory.mktemp("home")))
        try:
            yield ensure_node_image(
                docker_client,
                version="22",
                progress=print,
                registry=npm_node_registry.url,
                name=name,
            )
        finally:
            try:
                docker_client.images.remove(name, force=True)
            except docker.errors.ImageNotFound:
                pass


def test_the_image_is_built_with_the_registrys_node_npm_and_corepack(node_image):
    assert node_image.built_s is not None
    assert (node_image.node, node_image.npm, node_image.corepack) == ("22.12.0", "10.9.0", "0.29.4")


def test_node_npm_and_corepack_run_in_a_hardened_sandbox(
    node_image, docker_client, make_repo, tmp_path
):
    repo = make_repo(
        {
            "package.json": json.dumps({"name": "p", "scripts": {"test": "node --test"}}),
            "test/mean.test.js": (
                "const test = require('node:test');\nconst assert = require('node:assert');\n"
                "test('mean', () => assert.strictEqual((1 + 3) / 2, 2));\n"
            ),
        }
    )
    spec = BoxSpec(
        client=docker_client,
        image=node_image.name,
        limits=Limits(memory_mb=1024, command_timeout_s=120),
    )
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        box = session.box
        ran = box.run("id -u; node --version; npm --version; corepack --version")
        assert ran.ok, ran.output
        uid, node, npm, corepack = ran.output.split()
        assert (node, npm, corepack) == ("v22.12.0", "10.9.0", "0.29.4")
        assert uid != "0"
        assert box.run("for t in npx yarn pnpm; do command -v $t; done").output.split() == [
            "/usr/local/bin/npx",
            "/usr/local/bin/yarn",
            "/usr/local/bin/pnpm",
        ]
        tested = box.run("npm test")
        assert tested.ok, tested.output
        assert "# pass 1" in tested.output
        assert box.run("touch /usr/local/bin/x").exit_code != 0  # the root stays read-only


def test_a_second_ensure_builds_nothing_and_asks_the_registry_nothing(
    node_image,
    docker_client,
    npm_node_registry,  # noqa: F811
):
    asked = len(npm_node_registry.requests)
    again = ensure_node_image(
        docker_client,
        version="22",
        progress=print,
        registry=npm_node_registry.url,
        name=node_image.name,
        engines=">=22.12 <23",  # accepts the Node inside: nothing to rebuild
    )
    assert again.built_s is None
    assert (again.name, again.node) == (node_image.name, "22.12.0")
    assert len(npm_node_registry.requests) == asked


def test_worker_sandbox_build_node_says_the_image_is_up_to_date(
    node_image,
    npm_node_registry,  # noqa: F811
):
    env = {"npm_config_registry": npm_node_registry.url}
    done = worker("sandbox", "build", "--node", "22", "--image", node_image.name, env=env)
    assert done.returncode == 0, done.stderr
    assert f"image {node_image.name} is up to date (Node 22.12.0, npm 10.9.0)" in done.stderr
    refused = worker("sandbox", "build", "--node", "lts", env=env)
    assert refused.returncode == 2
    assert "--node takes a major (22) or a release (22.12.0), not 'lts'" in refused.stderr
