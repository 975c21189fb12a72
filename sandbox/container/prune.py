"""Remove what a worker that died left behind: its sandbox containers (the set-up's proxy
sidecar among them), its set-up networks and its scratch folders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import docker
import docker.errors
import psutil

from sandbox.container.docker_sandbox import LABEL
from sandbox.worktree.scratch import sweep_scratch


@dataclass(frozen=True, kw_only=True)
class Swept:
    """What one sweep removed."""

    containers: list[str]
    folders: list[str]
    networks: list[str] = field(default_factory=list)

    def describe(self) -> str | None:
        """One line for the user, or None when there was nothing to remove."""
        if not self.containers and not self.folders and not self.networks:
            return None
        networks = f", {len(self.networks)} network(s)" if self.networks else ""
        return (
            f"removed {len(self.containers)} container(s){networks} and {len(self.folders)} "
            "scratch folder(s) left by a worker that ended without cleaning up"
        )


def sweep_leftovers(
    client: docker.DockerClient | None, *, progress: Callable[[str], None] = lambda _m: None
) -> Swept:
    """At a worker's start: the containers, networks and scratch folders of dead workers go,
    never those of a live one. Cheap: two labelled list calls, one listing of the temp folder."""
    containers = _prune_containers(client) if client is not None else []
    networks = prune_networks(client) if client is not None else []
    swept = Swept(
        containers=containers, folders=[str(p) for p in sweep_scratch()], networks=networks
    )
    line = swept.describe()
    if line:
        progress(line)
    return swept


def prune(
    client: docker.DockerClient, *, everything: bool = False, pid: int | None = None
) -> list[str]:
    """Remove our labelled containers whose worker process is gone (all of them if `everything`;
    with `pid`, only that worker's, gone or not: other workers on the daemon keep theirs), then
    the set-up networks the same way (a network goes only once its containers have).

    Returns the names of the containers and networks removed.
    """
    removed = _prune_containers(client, everything=everything, pid=pid)
    return removed + prune_networks(client, everything=everything, pid=pid)


def _prune_containers(
    client: docker.DockerClient, *, everything: bool = False, pid: int | None = None
) -> list[str]:
    removed = []
    # The low-level call: one request, where containers.list() inspects each container again.
    for found in client.api.containers(all=True, filters={"label": LABEL}):
        owner = (found.get("Labels") or {}).get("worker.pid", "")
        if pid is not None:
            if owner != str(pid):
                continue
        elif not everything and owner.isdigit() and _alive(int(owner), found):
            continue
        try:
            client.api.remove_container(found["Id"], force=True, v=True)
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:
            if exc.status_code == 409:  # another worker's sweep is removing it now
                continue
            raise
        names = found.get("Names") or [found["Id"][:12]]
        removed.append(str(names[0]).lstrip("/"))
    return removed


def prune_networks(
    client: docker.DockerClient, *, everything: bool = False, pid: int | None = None
) -> list[str]:
    """Remove our labelled networks (a set-up's internal one) by the rule `prune` applies to
    containers; one still in use (another worker's set-up) stays. Returns their names."""
    removed = []
    for found in client.api.networks(filters={"label": LABEL}):
        owner = (found.get("Labels") or {}).get("worker.pid", "")
        if pid is not None:
            if owner != str(pid):
                continue
        elif not everything and owner.isdigit():
            created = _epoch(found.get("Created"))
            if _alive(int(owner), {"Created": created} if created is not None else {}):
                continue
        try:
            client.api.remove_network(found["Id"])
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError as exc:
            if exc.status_code in (403, 409):  # containers still attached, or being removed
                continue
            raise
        removed.append(str(found.get("Name") or found["Id"][:12]))
    return removed


def _epoch(created: object) -> float | None:
    """A network's creation time (RFC 3339, nanoseconds) as seconds since the epoch."""
    if not isinstance(created, str):
        return None
    head, dot, rest = created.partition(".")
    if dot:  # keep microseconds: older Pythons read no more digits than that
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits) :]
        created = f"{head}.{digits[:6]}{zone}"
    try:
        return datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _alive(pid: int, found: dict[str, Any]) -> bool:
    """True when `pid` runs and started before the container was made (so it is the same
    process, not a later one given the same pid)."""
    try:
        started = psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    created = found.get("Created")
    if not isinstance(created, (int, float)):
        return True  # cannot tell: leave it to `prune --all`
    return started <= created + 1.0
