"""A real package index for tests: hand-built wheels behind PEP 503 pages, served by
`python3 -m http.server` in a container of the sandbox image, on a network the test names.

No network beyond the test's own: the wheels are zip files written here (pure Python, no build
tool), and pip reads the pages like any index's. Use the `make_package_index` fixture:

    index = make_package_index(network="my-net", dists={"dep": {"version": "1.0",
                               "files": {"dep/__init__.py": "X = 1\\n"}}})
    environ = {"PIP_INDEX_URL": index.url, "PIP_TRUSTED_HOST": index.host}

`serve_folder` serves any folder the same way (a marker page on an "other host", say), and
`requests()` reads a server's access log: what reached it, and so what did not.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import os
import re
import time
import uuid
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

PORT = 8000
#: Labels of what these helpers start, so a test can tell them apart (none is a worker's).
TEST_LABEL = "worker.test"


@dataclass(frozen=True)
class Served:
    """A folder served over HTTP by a container: reachable as http://{host}:8000/."""

    host: str
    container: Any
    root: Path

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{PORT}/"

    def requests(self) -> list[str]:
        """The request lines in the server's access log, in order."""
        logs = bytes(self.container.logs(stdout=False, stderr=True)).decode("utf-8", "replace")
        return re.findall(r'"((?:GET|POST|HEAD|PUT|CONNECT) [^"]*)"', logs)

    def ip(self, network: str) -> str:
        self.container.reload()
        return str(self.container.attrs["NetworkSettings"]["Networks"][network]["IPAddress"])


@dataclass(frozen=True)
class PackageIndex(Served):
    """A served PEP 503 index; `url` is what PIP_INDEX_URL takes."""

    @property
    def url(self) -> str:
        return f"http://{self.host}:{PORT}/simple/"


def normalize(name: str) -> str:
    """PEP 503's project name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()


def build_wheel(
    folder: Path,
    name: str,
    version: str,
    files: Mapping[str, str],
    *,
    requires: tuple[str, ...] = (),
) -> Path:
    """A pure-Python wheel of `files` ({path in site-packages: text}), written into `folder`."""
    stem = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    info = f"{stem}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    wheel_meta = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = {**files, f"{info}/METADATA": metadata, f"{info}/WHEEL": wheel_meta}
    record = "".join(
        f"{path},{_record_hash(text.encode())},{len(text.encode())}\n"
        for path, text in entries.items()
    )
    record += f"{info}/RECORD,,\n"
    path = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel, text in {**entries, f"{info}/RECORD": record}.items():
            zf.writestr(rel, text)
    return path


#: Real wheels from PyPI (build back-ends: setuptools, setuptools-scm, hatchling, hatch-vcs),
#: fetched by `scripts/bootstrap.sh --tests` from tests/index-wheels.txt, for tests that build
#: projects the way their maintainers do; the index serves them beside the hand-built ones.
REAL_WHEELS = Path(__file__).parent / ".wheels"


def real_wheels() -> list[Path]:
    """The wheels of tests/index-wheels.txt; an error naming the fix when they are missing."""
    wanted = (Path(__file__).parent / "index-wheels.txt").read_text().split()
    found = sorted(REAL_WHEELS.glob("*.whl"))
    names = {normalize(w.name.split("-")[0]) for w in found}
    missing = [r for r in wanted if normalize(r.split("==")[0]) not in names]
    if missing:
        raise RuntimeError(
            f"real wheels missing from {REAL_WHEELS}: {', '.join(missing)}; "
            "run scripts/bootstrap.sh --tests (it downloads tests/index-wheels.txt)"
        )
    return found


def write_simple_index(
    root: Path, dists: Mapping[str, Mapping[str, Any]], *, wheels: tuple[Path, ...] = ()
) -> None:
    """Lay out `root` as an index: /simple/ pages and /packages/ wheels.

    `dists` is {name: {"version": "1.0", "files": {path: text}, "requires": ("other",)}};
    `wheels` are wheel files served as they are."""
    packages = root / "packages"
    packages.mkdir(parents=True, exist_ok=True)
    projects: dict[str, list[Path]] = {}
    for wheel in wheels:
        copy = packages / wheel.name
        copy.write_bytes(wheel.read_bytes())
        projects.setdefault(normalize(wheel.name.split("-")[0]), []).append(copy)
    for name, spec in dists.items():
        wheel = build_wheel(
            packages,
            name,
            str(spec.get("version", "1.0")),
            spec.get("files", {}),
            requires=tuple(spec.get("requires", ())),
        )
        projects.setdefault(normalize(name), []).append(wheel)
    simple = root / "simple"
    simple.mkdir(exist_ok=True)
    links = "".join(f'<a href="{p}/">{p}</a>\n' for p in sorted(projects))
    (simple / "index.html").write_text(_page("Simple index", links))
    for project, wheels in projects.items():
        (simple / project).mkdir(exist_ok=True)
        anchors = "".join(
            f'<a href="../../packages/{html.escape(w.name)}#sha256='
            f'{hashlib.sha256(w.read_bytes()).hexdigest()}">{html.escape(w.name)}</a>\n'
            for w in wheels
        )
        (simple / project / "index.html").write_text(_page(f"Links for {project}", anchors))


@contextlib.contextmanager
def serve_folder(
    client: docker.DockerClient, *, image: str, network: str, root: Path, name: str | None = None
) -> Iterator[Served]:
    """Serve `root` read-only from a hardened container on `network`; removed on exit."""
    host = name or f"served-{uuid.uuid4().hex[:10]}"
    _readable(root)
    container = client.containers.run(
        image,
        ["python3", "-u", "-m", "http.server", str(PORT), "--directory", "/srv"],
        detach=True,
        name=host,
        network=network,
        labels={TEST_LABEL: "1"},
        read_only=True,
        tmpfs={"/tmp": "size=8m"},
        user="1000:1000",
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        mem_limit="128m",
        pids_limit=64,
        volumes={str(root): {"bind": "/srv", "mode": "ro"}},
    )
    try:
        deadline = time.monotonic() + 20
        while b"Serving HTTP" not in bytes(container.logs(stdout=True, stderr=False)):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{host} did not start: {container.logs()[-500:]!r}")
            time.sleep(0.05)
        yield Served(host=host, container=container, root=root)
    finally:
        container.remove(force=True)


@contextlib.contextmanager
def package_index(
    client: docker.DockerClient,
    *,
    image: str,
    network: str,
    root: Path,
    dists: Mapping[str, Mapping[str, Any]],
    wheels: tuple[Path, ...] = (),
) -> Iterator[PackageIndex]:
    """Build the wheels of `dists`, lay out the index under `root` (with `wheels` as they are),
    serve it on `network`."""
    write_simple_index(root, dists, wheels=wheels)
    with serve_folder(
        client, image=image, network=network, root=root, name=f"pkgindex-{uuid.uuid4().hex[:10]}"
    ) as served:
        yield PackageIndex(host=served.host, container=served.container, root=served.root)


@contextlib.contextmanager
def bridge_network(client: docker.DockerClient, *, internal: bool = False) -> Iterator[str]:
    """A user-defined bridge network of the test's own, removed on exit, whatever is still
    attached (a fixture torn down after this one: its container goes later, by itself)."""
    net = client.networks.create(
        f"worker-test-net-{uuid.uuid4().hex[:10]}",
        driver="bridge",
        internal=internal,
        labels={TEST_LABEL: "1"},
    )
    try:
        yield str(net.name)
    finally:
        for attempt in range(20):
            try:
                net.reload()
                for container_id in net.attrs.get("Containers") or {}:
                    net.disconnect(container_id, force=True)
                net.remove()
                break
            except docker.errors.NotFound:
                break
            except docker.errors.APIError:
                if attempt == 19:
                    raise
                time.sleep(0.1)


MakePackageIndex = Callable[..., PackageIndex]


@pytest.fixture
def make_package_index(
    docker_client: docker.DockerClient, sandbox_image: str, tmp_path: Path
) -> Iterator[MakePackageIndex]:
    """Start package indexes on given networks; all removed at teardown."""
    with contextlib.ExitStack() as stack:
        count = iter(range(100))

        def make(
            *,
            network: str,
            dists: Mapping[str, Mapping[str, Any]],
            wheels: tuple[Path, ...] = (),
        ) -> PackageIndex:
            root = tmp_path / f"index{next(count)}"
            return stack.enter_context(
                package_index(
                    docker_client,
                    image=sandbox_image,
                    network=network,
                    root=root,
                    dists=dists,
                    wheels=wheels,
                )
            )

        yield make


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _page(title: str, body: str) -> str:
    return (
        f"<!DOCTYPE html>\n<html><head><title>{title}</title></head><body>\n{body}</body></html>\n"
    )


def _readable(root: Path) -> None:
    # The server runs as uid 1000; pytest's tmp folders are the caller's alone.
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        for f in files:
            os.chmod(os.path.join(folder, f), 0o644)
