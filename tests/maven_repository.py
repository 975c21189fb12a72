"""A real Maven repository behind HTTP basic auth, for tests: the local repository of a set-up
image (what Maven Central served it) copied out and served by Python's http.server from a
hardened container on Docker's default bridge (the network set-up's proxy goes out by).
Maven reads it as it reads any remote repository: a 401 with `WWW-Authenticate` first, then
the same request with the credentials of the settings' `<server>`.

    with maven_repository(client, image=jdk, source=tag, root=tmp, user="u", password="p") as r:
        r.url  # "http://172.17.0.5:8000/<random>/"
        r.requested()  # each request: its path and status
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from tests.pkg_index import TEST_LABEL

PORT = 8000
LOCAL_REPOSITORY = "/home/worker/.m2/repository"
#: The server: http.server's file handler, answering 401 to a request without the right
#: `Authorization: Basic` (the expected value in the container's environment).
_SERVER = """
import base64, http.server, os, sys
want = "Basic " + base64.b64encode(os.environ["REPO_AUTH"].encode()).decode()
class Handler(http.server.SimpleHTTPRequestHandler):
    def _allowed(self):
        if self.headers.get("Authorization") == want:
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="maven"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return False
    def do_GET(self):
        if self._allowed():
            super().do_GET()
    def do_HEAD(self):
        if self._allowed():
            super().do_HEAD()
http.server.ThreadingHTTPServer.allow_reuse_address = True
handler = lambda *a, **k: Handler(*a, directory="/srv", **k)
print("Serving HTTP", flush=True)
http.server.ThreadingHTTPServer(("", int(sys.argv[1])), handler).serve_forever()
"""


@dataclass(frozen=True)
class MavenRepository:
    """A served repository."""

    url: str
    container: Any

    def requested(self) -> str:
        """The server's access log: each request's path and status."""
        return bytes(self.container.logs()).decode(errors="replace")


def copy_local_repository(client: docker.DockerClient, image: str, into: Path) -> None:
    """`image`'s local Maven repository (a set-up image's) into the folder `into`."""
    container = client.containers.create(image, ["true"], labels={TEST_LABEL: "1"})
    try:
        stream, _ = container.get_archive(LOCAL_REPOSITORY)
        data = b"".join(stream)
    finally:
        container.remove(force=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar:
            parts = member.name.split("/")[1:]  # under `repository/`
            if not member.isfile() or not parts or ".." in parts:
                continue
            handle = tar.extractfile(member)
            if handle is None:
                continue
            path = into.joinpath(*parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(handle.read())


@contextlib.contextmanager
def maven_repository(
    client: docker.DockerClient, *, image: str, source: str, root: Path, user: str, password: str
) -> Iterator[MavenRepository]:
    """Serve `source`'s local repository (a set-up image) with basic auth `user`:`password`;
    yields it, its URL as a settings.xml's mirror names it. Removed on exit."""
    prefix = uuid.uuid4().hex[:12]
    copy_local_repository(client, source, root / prefix)
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.chmod(folder, 0o755)
    for file in (p for p in root.rglob("*") if p.is_file()):
        os.chmod(file, 0o644)
    container = client.containers.run(
        image, ["python3", "-u", "-c", _SERVER, str(PORT)],
        detach=True, network="bridge", labels={TEST_LABEL: "1"}, read_only=True,
        user="1000:1000", cap_drop=["ALL"], security_opt=["no-new-privileges"],
        mem_limit="256m", pids_limit=64, volumes={str(root): {"bind": "/srv", "mode": "ro"}},
        environment={"REPO_AUTH": f"{user}:{password}"},
    )  # fmt: skip
    try:
        container.reload()
        ip = container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
        deadline = time.monotonic() + 30
        while b"Serving HTTP" not in bytes(container.logs()):
            container.reload()
            if time.monotonic() > deadline or container.status == "exited":
                raise RuntimeError(f"http.server did not start: {container.logs()[-800:]!r}")
            time.sleep(0.1)
        yield MavenRepository(url=f"http://{ip}:{PORT}/{prefix}/", container=container)
    finally:
        container.remove(force=True)
