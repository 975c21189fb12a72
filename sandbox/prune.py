"""Remove what a worker that died left behind: its sandbox containers and scratch folders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import psutil

from sandbox.docker_sandbox import LABEL
from sandbox.scratch import sweep_scratch


@dataclass(frozen=True, kw_only=True)
class Swept:
    """What one sweep removed."""

    containers: list[str]
    folders: list[str]

    def describe(self) -> str | None:
        """One line for the user, or None when there was nothing to remove."""
        if not self.containers and not self.folders:
            return None
        return (
            f"removed {len(self.containers)} container(s) and {len(self.folders)} scratch "
            "folder(s) left by a worker that ended without cleaning up"
        )


def sweep_leftovers(
    client: docker.DockerClient | None, *, progress: Callable[[str], None] = lambda _m: None
) -> Swept:
    """At a worker's start: the containers and scratch folders of dead workers go, never those
    of a live one. Cheap: one labelled list call, one listing of the temp folder."""
    containers = prune(client) if client is not None else []
    swept = Swept(containers=containers, folders=[str(p) for p in sweep_scratch()])
    line = swept.describe()
    if line:
        progress(line)
    return swept


def prune(
    client: docker.DockerClient, *, everything: bool = False, pid: int | None = None
) -> list[str]:
    """Remove our labelled containers whose worker process is gone (all of them if `everything`;
    with `pid`, only that worker's, gone or not: other workers on the daemon keep theirs).

    Returns the names of the containers removed.
    """
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
