"""A Docker daemon that does not see the worker's files (GitLab's docker:dind, a job container
with the host's socket, DOCKER_HOST on another machine): `worker fix` and `worker eval --ray`
still end in verified fixes, the working copy copied into the container."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from sandbox.container.placement import PLACEMENT_ENV
from tests.docker_elsewhere import daemon_elsewhere
from tests.test_eval_cli import MEAN_BUG, MEAN_FIX
from tests.test_eval_ray import NODE_ENV, _command, _driver_env, _node_args, _tasks
from tests.test_fix_cli import BUGGY, GOOD_PATCH, fix_command, fix_env, report
from worker.llm.scripted_server import ScriptedServer, tool_call

pytestmark = pytest.mark.docker

# The worker in a mount namespace of its own: its scratch folders on a tmpfs of its own that the
# daemon (in this machine's namespace) cannot see.
NAMESPACED = 'mount -t tmpfs -o size=256m tmpfs "$WORKER_PRIVATE" && exec "$@"'


def namespaced(command: list[str], private: Path) -> list[str]:
    private.mkdir(parents=True, exist_ok=True)
    return ["unshare", "-m", "--propagation", "private", "sh", "-c", NAMESPACED, "sh", *command]


def private_env(private: Path, **extra: str) -> dict[str, str]:
    return fix_env(WORKER_PRIVATE=str(private), TMPDIR=str(private), **extra)


@pytest.fixture(scope="module")
def elsewhere(sandbox_image: str, tmp_path_factory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("dockerd") / "dockerd.log"
    base = docker.from_env().images.get(sandbox_image).labels.get("worker.base")
    images = (sandbox_image, *([base] if base else ["worker-base:bookworm"]))
    with daemon_elsewhere(images, log) as host:
        yield host


def test_fix_from_a_mount_namespace_the_daemon_cannot_see(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    private = tmp_path / "private"
    script = [
        tool_call("read_file", {"path": "calc.py"}),
        tool_call("apply_patch", {"patch": GOOD_PATCH}),
    ]
    with ScriptedServer(script=script) as server:
        command = fix_command(repo, tmp_path / "out", base_url=server.base_url)
        proc = subprocess.run(
            namespaced(command, private), capture_output=True, text=True, timeout=240,
            env=private_env(private),
        )  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert r["tests_before"]["failing"] == ["tests/test_calc.py::test_mean"]
    assert "working copy copied into the container" in r["sandbox"]
    assert "+    return sum(values) / len(values)" in (tmp_path / "out" / "fix.patch").read_text()


def test_forcing_a_mounted_copy_there_is_one_line_and_exit_3(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    private = tmp_path / "private"
    with ScriptedServer(script=[]) as server:
        command = fix_command(repo, tmp_path / "out", base_url=server.base_url)
        proc = subprocess.run(
            namespaced(command, private), capture_output=True, text=True, timeout=240,
            env=private_env(private, **{PLACEMENT_ENV: "mounted"}),
        )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "does not see this machine's files" in last and "copied" in last
    assert "collected no tests" not in proc.stderr and "disappeared" not in proc.stderr


def test_fix_against_a_second_daemon_over_tcp(elsewhere, make_repo, tmp_path):
    repo = make_repo(BUGGY)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        command = fix_command(repo, tmp_path / "out", base_url=server.base_url)
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=240,
            env=fix_env(DOCKER_HOST=elsewhere),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert "working copy copied into the container" in r["sandbox"]
    # Every container it made was the second daemon's, and none is left there.
    there = docker.DockerClient(base_url=elsewhere)
    assert there.containers.list(all=True, filters={"label": "worker.sandbox"}) == []


@pytest.fixture
def cluster_elsewhere(elsewhere: str) -> Iterator[Any]:
    """A head and one node whose Docker is the second daemon: another mount namespace."""
    from ray.cluster_utils import Cluster

    head = {**_node_args(num_cpus=0), "include_dashboard": False}
    made = Cluster(initialize_head=True, head_node_args=head)
    try:
        made.add_node(**_node_args(env_vars={**NODE_ENV, "DOCKER_HOST": elsewhere}))
        made.wait_for_nodes()
        yield made
    finally:
        made.shutdown()


def test_eval_on_ray_nodes_whose_daemon_sees_other_files(cluster_elsewhere, make_repo, tmp_path):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG] * 2)
    out = tmp_path / "ray"
    script = [tool_call("apply_patch", {"patch": MEAN_FIX})] * 2
    with ScriptedServer(script=script) as server:
        proc = subprocess.run(
            _command(tasks, out, server.base_url, "--ray", cluster_elsewhere.address),
            capture_output=True, text=True, timeout=300, env=_driver_env(),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())["tasks"]
    assert {r["id"] for r in results if r["resolved"]} == {"t0", "t1"}
    fix = json.loads((out / "tasks" / "t0" / "fix" / "report.json").read_text())
    assert "working copy copied into the container" in fix["sandbox"]
