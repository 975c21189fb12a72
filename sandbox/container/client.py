"""Connect to the Docker daemon, or say clearly why not."""

from __future__ import annotations

import docker
import docker.errors

from sandbox.errors import DockerUnavailable


def connect(*, timeout_s: float = 120.0) -> docker.DockerClient:
    """A client for the local daemon (DOCKER_HOST honoured); DockerUnavailable if it is down."""
    try:
        client = docker.from_env(timeout=int(timeout_s))
        client.ping()
    except (docker.errors.DockerException, OSError) as exc:
        raise DockerUnavailable(
            f"Docker is not available ({_short(exc)}): start the daemon (dockerd) "
            "or set DOCKER_HOST"
        ) from exc
    return client


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
