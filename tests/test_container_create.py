"""The one description of a container: its flags as data in-process, then on the real daemon."""

from __future__ import annotations

import doctest
import uuid

import docker
import docker.errors
import pytest

from policies.isolation import Isolation
from policies.limits import Limits
from sandbox.container import checkout_repo
from sandbox.container.create import ContainerSpec, Hardening, create_container, run_to_end


def test_the_sandbox_hardening_is_every_flag_docker_gets() -> None:
    limits = Limits()
    args = Hardening.of(Isolation(), limits, user="1000:1000").docker_args()
    memory = f"{limits.memory_mb}m"
    assert args == {
        "read_only": True,
        "tmpfs": {"/tmp": f"size={limits.tmp_mb}m,mode=1777,exec"},
        "user": "1000:1000",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "pids_limit": limits.pids,
        "mem_limit": memory,
        "memswap_limit": memory,
        "nano_cpus": int(limits.cpus * 1e9),
    }


def test_a_weakened_isolation_drops_only_its_switches() -> None:
    weak = Isolation(read_only_root=False, drop_capabilities=False, no_new_privileges=False)
    args = Hardening.of(weak, Limits(), user="0:0").docker_args()
    assert args["read_only"] is False
    assert args["cap_drop"] is None and args["security_opt"] is None
    assert args["pids_limit"] == Limits().pids  # the limits stay whatever the switches say


def test_network_is_a_mode_a_network_or_none_at_all() -> None:
    def spec(network: str | None) -> ContainerSpec:
        return ContainerSpec(image="i", command=["true"], hardening=None, network=network)

    assert spec("none").docker_args() == {"command": ["true"], "network_mode": "none"}
    assert spec("bridge").docker_args()["network_mode"] == "bridge"
    assert spec("worker-setup-net-1").docker_args()["network"] == "worker-setup-net-1"
    assert spec(None).docker_args() == {"command": ["true"], "network_disabled": True}


def test_a_hardened_container_on_the_daemon(
    docker_client: docker.DockerClient, sandbox_image: str
) -> None:
    hardening = Hardening(user="1000:1000", memory_mb=64, pids=64, cpus=1, tmp_mb=8)
    spec = ContainerSpec(image=sandbox_image, command=["true"], hardening=hardening)
    container = create_container(docker_client, spec)
    try:
        host = docker_client.api.inspect_container(container.id)["HostConfig"]
    finally:
        container.remove(force=True)
    assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"] and host["NetworkMode"] == "none"
    assert host["Memory"] == host["MemorySwap"] == 64 * 1024 * 1024 and host["PidsLimit"] == 64
    assert host["NanoCpus"] == 1_000_000_000 and host["Tmpfs"] == {"/tmp": "size=8m,mode=1777"}


def test_run_to_end_gives_stdout_and_leaves_nothing(
    docker_client: docker.DockerClient, sandbox_image: str
) -> None:
    name = f"worker-test-run-to-end-{uuid.uuid4().hex[:8]}"

    def spec(script: str, n: int) -> ContainerSpec:
        command = ["sh", "-c", script]
        return ContainerSpec(
            image=sandbox_image, command=command, hardening=None, name=f"{name}-{n}"
        )

    assert run_to_end(docker_client, spec("echo out; echo err >&2", 1)) == b"out\n"
    with pytest.raises(docker.errors.ContainerError) as caught:
        run_to_end(docker_client, spec("echo why >&2; exit 3", 2))
    assert caught.value.exit_status == 3 and b"why" in caught.value.stderr
    assert docker_client.containers.list(all=True, filters={"name": name}) == []


def test_a_spec_s_own_tmpfs_mounts_join_the_hardening_s() -> None:
    hardening = Hardening(user="1000:1000", memory_mb=64, pids=64, cpus=1, tmp_mb=8)
    git_dir = {"/workspace/.git": checkout_repo.tmpfs_options("1000:1000", size_mb=4)}
    spec = ContainerSpec(image="i", command=["true"], hardening=hardening, tmpfs=git_dir)
    assert spec.docker_args()["tmpfs"] == {
        "/tmp": "size=8m,mode=1777",
        "/workspace/.git": "size=4m,mode=0700,uid=1000,gid=1000,noexec,nosuid,nodev",
    }
    assert doctest.testmod(checkout_repo).failed == 0
