"""Every container this project creates, from one description: what runs, where, and, for one
that runs code we do not trust, its hardening as data.

The sandbox (docker_sandbox.py) and the set-up's proxy sidecar (sandbox/setup/network.py) are
hardened; the two that run nothing of a repository (the probe of an image's interpreter, and
a container never started whose files are read) are not, and say so with `hardening=None`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import docker
from docker.types import Mount

from policies.isolation import Isolation
from policies.limits import Limits

#: `network` values that are a mode of Docker's, not a network's name.
_MODES = ("none", "bridge", "host")


@dataclass(frozen=True, kw_only=True)
class Hardening:
    """What a container may not do, and how much it may use.

    >>> Hardening(user="1000:1000", memory_mb=64, pids=64, cpus=1, tmp_mb=8).docker_args()["tmpfs"]
    {'/tmp': 'size=8m,mode=1777'}
    """

    user: str  # uid:gid
    memory_mb: int  # swap included: no more than this in all
    pids: int
    cpus: float
    tmp_mb: int  # /tmp, a tmpfs of this size
    tmp_exec: bool = False  # programs may run from /tmp
    read_only_root: bool = True
    drop_capabilities: bool = True  # cap_drop ALL
    no_new_privileges: bool = True  # setuid binaries cannot gain privileges

    @classmethod
    def of(cls, isolation: Isolation, limits: Limits, *, user: str) -> Hardening:
        """The sandbox's: the switches of `isolation`, the sizes of `limits`."""
        return cls(
            user=user,
            memory_mb=limits.memory_mb,
            pids=limits.pids,
            cpus=limits.cpus,
            tmp_mb=limits.tmp_mb,
            tmp_exec=True,
            read_only_root=isolation.read_only_root,
            drop_capabilities=isolation.drop_capabilities,
            no_new_privileges=isolation.no_new_privileges,
        )

    def docker_args(self) -> dict[str, Any]:
        """The arguments of `containers.create` that say it."""
        memory = f"{self.memory_mb}m"
        return {
            "read_only": self.read_only_root,
            "tmpfs": {
                "/tmp": f"size={self.tmp_mb}m,mode=1777" + (",exec" if self.tmp_exec else "")
            },
            "user": self.user,
            "cap_drop": ["ALL"] if self.drop_capabilities else None,
            "security_opt": ["no-new-privileges"] if self.no_new_privileges else None,
            "pids_limit": self.pids,
            "mem_limit": memory,
            "memswap_limit": memory,
            "nano_cpus": int(self.cpus * 1e9),
        }


@dataclass(frozen=True, kw_only=True)
class ContainerSpec:
    """One container to create. Unset fields are left to Docker and the image.

    `network`: "none", "bridge" or "host" (a mode), a network's name (the container joins it),
    or None: no networking at all (`network_disabled`), for a container never started.
    """

    image: str
    command: Sequence[str]
    hardening: Hardening | None
    network: str | None = "none"
    name: str | None = None
    labels: Mapping[str, str] | None = None
    mounts: Sequence[Mount] = ()
    working_dir: str | None = None
    environment: Mapping[str, str] | None = None
    #: More tmpfs mounts (path: options) beside the hardening's /tmp.
    tmpfs: Mapping[str, str] | None = None

    def docker_args(self) -> dict[str, Any]:
        """The keyword arguments of `client.containers.create`."""
        args: dict[str, Any] = {"command": list(self.command)}
        if self.network is None:
            args["network_disabled"] = True
        elif self.network in _MODES:
            args["network_mode"] = self.network
        else:
            args["network"] = self.network
        if self.hardening is not None:
            args.update(self.hardening.docker_args())
        if self.tmpfs:
            args["tmpfs"] = {**args.get("tmpfs", {}), **self.tmpfs}
        optional = {
            "name": self.name,
            "labels": None if self.labels is None else dict(self.labels),
            "mounts": list(self.mounts) or None,
            "working_dir": self.working_dir,
            "environment": None if self.environment is None else dict(self.environment),
        }
        args.update({key: value for key, value in optional.items() if value is not None})
        return args


def create_container(client: docker.DockerClient, spec: ContainerSpec) -> Any:
    """Create (not start) the container `spec` describes; Docker's errors pass through."""
    return client.containers.create(spec.image, **spec.docker_args())


def run_to_end(client: docker.DockerClient, spec: ContainerSpec) -> bytes:
    """Create, start and wait for the container; its stdout. Removed in every case; a non-zero
    exit is Docker's `ContainerError`, as `containers.run` raises it."""
    container = create_container(client, spec)
    try:
        container.start()
        status = container.wait()["StatusCode"]
        if status != 0:
            err = container.logs(stdout=False, stderr=True)
            raise docker.errors.ContainerError(container, status, spec.command, spec.image, err)
        return bytes(container.logs(stdout=True, stderr=False))
    finally:
        container.remove(force=True)
