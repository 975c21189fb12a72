"""Connect to the Docker daemon, or say clearly why not."""

from __future__ import annotations

import docker
import docker.errors
from docker.constants import MINIMUM_DOCKER_API_VERSION

from sandbox.errors import DockerUnavailable


def connect(*, timeout_s: float = 120.0) -> docker.DockerClient:
    """A client for the local daemon (DOCKER_HOST honoured); DockerUnavailable if it is down.

    The API version comes from the daemon's `/_ping` (its API-Version header), not from
    docker-py's own `/version` call: the daemon answers that by running `runc --version` and
    `docker-init --version`, 15-180 ms of every run's start measured, and the ping is needed
    anyway."""
    try:
        version = _api_version(timeout_s)
        client = docker.from_env(version=version, timeout=int(timeout_s))
        if version is None:  # asked by docker-py, through /version
            client.ping()
    except (docker.errors.DockerException, OSError) as exc:
        raise DockerUnavailable(
            f"Docker is not available ({_short(exc)}): start the daemon (dockerd) "
            "or set DOCKER_HOST"
        ) from exc
    return client


def _api_version(timeout_s: float) -> str | None:
    """The daemon's API version from its ping; None where the answer does not say it."""
    probe = docker.from_env(version=MINIMUM_DOCKER_API_VERSION, timeout=int(timeout_s))
    try:
        response = probe.api.get(f"{probe.api.base_url}/_ping")
    finally:
        probe.close()
    version = response.headers.get("API-Version")
    if response.status_code != 200 or not version:
        return None
    return str(version)


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:200]
