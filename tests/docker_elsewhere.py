"""A second Docker daemon that cannot see this machine's files, for the tests: as GitLab's
`docker:dind` service or a build machine behind `DOCKER_HOST` is to a CI job.

It runs in a mount namespace of its own whose /tmp is a tmpfs of its own (so the worker's
scratch folders, under this machine's /tmp, are not there) and in a network namespace of its own:
a daemon started without a bridge removes the host's `docker0` when they share one, which would
break the main daemon's networks. It listens on a unix socket; the tests reach it as a user
reaches a remote daemon, at `tcp://127.0.0.1:PORT`, through a byte-for-byte relay in this
process. Its data root is kept between runs (under the tests' cache) so that the sandbox images,
loaded offline from the main daemon with `docker save | docker load`, are loaded once.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
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
  -H "unix://$2" --bridge=none --iptables=false --ip6tables=false --ip-masq=false
"""


@contextmanager
def daemon_elsewhere(images: tuple[str, ...], log: Path) -> Iterator[str]:
    """Start the second daemon, give it `images` (loaded from the main daemon when it lacks
    them or has other ones), and yield its DOCKER_HOST; stopped on exit."""
    if shutil.which("unshare") is None or shutil.which("dockerd") is None:
        raise RuntimeError("unshare and dockerd are needed (util-linux, docker.io)")
    root = DATA_ROOT / "dockerd-elsewhere"
    root.mkdir(parents=True, exist_ok=True)
    sockets = Path(tempfile.mkdtemp(prefix="worker-dockerd-", dir="/run"))
    sock = sockets / "docker.sock"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["unshare", "-m", "-n", "--propagation", "private", "sh", "-c", START_SCRIPT, "sh"]
            + [str(root), str(sock)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        client = _wait_ready(f"unix://{sock}", proc, log)
        _load(images, client, f"unix://{sock}")
        client.close()
        with _relay(sock) as port:
            yield f"tcp://127.0.0.1:{port}"
    finally:
        _stop(proc)
        shutil.rmtree(sockets, ignore_errors=True)


@contextmanager
def _relay(sock: Path) -> Iterator[int]:
    """Listen on a loopback port and copy each connection's bytes to and from `sock`."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
                try:
                    s.shutdown(how)
                except OSError:
                    pass

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(str(sock))
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


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


def _load(images: tuple[str, ...], client: docker.DockerClient, host: str) -> None:
    main = docker.from_env()
    try:
        wanted = [name for name in images if _id(client, name) != _id(main, name)]
        if not wanted:
            return
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
