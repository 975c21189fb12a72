"""Remove sandbox containers left behind by a worker that crashed."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import docker
import docker.errors
import psutil

from sandbox.docker_sandbox import LABEL


def prune(client: docker.DockerClient, *, everything: bool = False) -> list[str]:
    """Remove our labelled containers whose worker process is gone (all of them if `everything`).

    Returns the names of the containers removed.
    """
    removed = []
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner = container.labels.get("worker.pid", "")
        if not everything and owner.isdigit() and _alive(int(owner), container):
            continue
        try:
            container.remove(force=True, v=True)
            removed.append(container.name)
        except docker.errors.NotFound:
            pass
    return removed


def _alive(pid: int, container: Any) -> bool:
    """True when `pid` runs and started before the container did (so it is the same process)."""
    try:
        started = psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    created = str(container.attrs.get("Created", ""))
    try:  # Docker writes nanoseconds; Python reads at most microseconds
        head, _, frac = created.rstrip("Z").partition(".")
        when = datetime.fromisoformat(f"{head}.{(frac + '000000')[:6]}+00:00").timestamp()
    except ValueError:
        return True  # cannot tell: leave it to `prune --all`
    return started <= when + 1.0
