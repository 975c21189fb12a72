"""A second Docker daemon that cannot see this machine's files, for the tests: as GitLab's
`docker:dind` service or a build machine behind `DOCKER_HOST` is to a CI job.

It runs in a mount namespace of its own whose /tmp is a tmpfs of its own (so the worker's
scratch folders, under this machine's /tmp, are not there), listens on 127.0.0.1 only, has no
bridge and touches no iptables. Its data root is kept between runs (under the tests' cache) so
that the sandbox images, loaded offline from the main daemon with `docker save | docker load`,
are loaded once.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import docker
import docker.errors

DATA_ROOT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "worker-tests"
START_SCRIPT = """
set -e
mount -t tmpfs -o size=64m tmpfs /tmp
mkdir -p /tmp/exec
exec dockerd --data-root "$1" --exec-root /tmp/exec --pidfile /tmp/exec/dockerd.pid \\
  -H "tcp://127.0.0.1:$2" --bridge=none --iptables=false --ip6tables=false --ip-masq=false
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def daemon_elsewhere(images: tuple[str, ...], log: Path) -> Iterator[str]:
    """Start the second daemon, give it `images` (loaded from the main daemon when it lacks
    them or has other ones), and yield its DOCKER_HOST; stopped on exit."""
    if shutil.which("unshare") is None or shutil.which("dockerd") is None:
        raise RuntimeError("unshare and dockerd are needed (util-linux, docker.io)")
    root = DATA_ROOT / "dockerd-elsewhere"
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    host = f"tcp://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["unshare", "-m", "--propagation", "private", "sh", "-c", START_SCRIPT, "sh"]
            + [str(root), str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        client = _wait_ready(host, proc, log)
        _load(images, client)
        client.close()
        yield host
    finally:
        _stop(proc)


def _wait_ready(host: str, proc: subprocess.Popen[bytes], log: Path) -> docker.DockerClient:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            break
        try:
            client = docker.DockerClient(base_url=host, timeout=10)
            client.ping()
            return client
        except (docker.errors.DockerException, OSError):
            time.sleep(0.2)
    raise RuntimeError(f"the second dockerd did not start:\n{log.read_text()[-2000:]}")


def _load(images: tuple[str, ...], client: docker.DockerClient) -> None:
    main = docker.from_env()
    try:
        wanted = [name for name in images if _id(client, name) != _id(main, name)]
        if not wanted:
            return
        host = client.api.base_url.replace("http://", "tcp://")
        save = subprocess.Popen(["docker", "save", *wanted], stdout=subprocess.PIPE)
        assert save.stdout is not None
        subprocess.run(
            ["docker", "-H", host, "load", "-q"],
            stdin=save.stdout,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        save.stdout.close()
        if save.wait() != 0:
            raise RuntimeError(f"docker save {' '.join(wanted)} failed")
    finally:
        main.close()


def _id(client: docker.DockerClient, name: str) -> str | None:
    try:
        return str(client.images.get(name).id)
    except docker.errors.ImageNotFound:
        return None


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
