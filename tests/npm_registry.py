"""A real npm registry for tests: verdaccio, with no uplink, serving tests/.npm-storage from a
container of the Node image on a network the test names.

`scripts/bootstrap.sh --tests` (the install step, the one that may reach the internet) installs
verdaccio into tests/.verdaccio and fills its storage with tests/npm-packages.txt (is-number,
mocha, vitest, jest, uvu, tape, and the newest yarn 1, pnpm 10 and Yarn Berry 4 releases,
which corepack fetches; `stored_version(name)` says which) and their dependencies. Here
verdaccio serves that storage as it is, read-only: a package it lacks is a real 404, and no
request leaves the test's network. Use the `make_npm_registry` fixture:

    registry = make_npm_registry(network="my-net")
    environ = registry.environ()          # npm_config_registry, COREPACK_NPM_REGISTRY, ...
    lock = registry.lock({"name": "p", "devDependencies": {"mocha": "12.0.3"}})

`lock()` writes a package-lock.json the way a maintainer's `npm install` does, against this
registry, with its `resolved` URLs on registry.npmjs.org as a real project's are (npm sends
those to the registry it is configured with). `node_image` is the Node sandbox image
(sandbox/ecosystems/node/image.py), built once per session from tests/.npm-node on loopback.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from tests.pkg_index import TEST_LABEL

HERE = Path(__file__).parent
VERDACCIO = HERE / ".verdaccio"
STORAGE = HERE / ".npm-storage"
PORT = 4873
PUBLIC = "https://registry.npmjs.org/"
CONFIG = """\
storage: /srv/storage
auth:
  htpasswd:
    file: /tmp/htpasswd
    max_users: -1
uplinks: {}
packages:
  '**':
    access: $all
    publish: $authenticated
log: { type: stdout, format: pretty, level: http }
"""


@dataclass(frozen=True)
class NpmRegistry:
    """A served registry: http://{host}:4873/ on its network."""

    host: str
    container: Any
    network: str
    image: str

    @property
    def url(self) -> str:
        return f"http://{self.host}:{PORT}/"

    def environ(self) -> dict[str, str]:
        """What a user of this registry sets: npm's, Yarn's and corepack's registry (corepack
        fetches yarn and pnpm from it); verdaccio keeps no signatures, so corepack's check of
        them is off."""
        return {
            "npm_config_registry": self.url,
            "YARN_NPM_REGISTRY_SERVER": self.url.rstrip("/"),
            "YARN_UNSAFE_HTTP_WHITELIST": self.host,
            "COREPACK_NPM_REGISTRY": self.url.rstrip("/"),
            "COREPACK_INTEGRITY_KEYS": "0",
        }

    def saw(self, request: str, *, within_s: float = 15.0) -> bool:
        """Whether verdaccio answered `request` ("GET /is-number/-/is-number-7.0.0.tgz"),
        waiting up to `within_s` for its log, which a loaded machine writes late."""
        deadline = time.monotonic() + within_s
        while request not in self.requests():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def requests(self) -> list[str]:
        """The requests verdaccio answered, in order ("GET /is-number", ...)."""
        logs = bytes(self.container.logs()).decode("utf-8", "replace")
        return re.findall(r"req: '([A-Z]+ [^']+)'", logs)

    def lock(self, package: dict[str, Any], *, tool: str = "npm") -> str:
        """The package-lock.json `npm install --package-lock-only` writes for `package` against
        this registry, its `resolved` URLs on registry.npmjs.org. (`tool` is npm's alone.)"""
        if tool != "npm":
            raise ValueError("only npm's lockfile is made here")
        with tempfile.TemporaryDirectory(prefix="worker-test-lock-") as folder:
            os.chmod(folder, 0o777)
            (Path(folder) / "package.json").write_text(json.dumps(package))
            client = self.container.client
            out = client.containers.run(
                self.image,
                [
                    "npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit",
                    "--no-fund", f"--registry={self.url}",
                ],
                network=self.network, remove=True, user="1000:1000", working_dir="/p",
                environment={"HOME": "/tmp", "npm_config_update_notifier": "false"},
                volumes={folder: {"bind": "/p", "mode": "rw"}}, labels={TEST_LABEL: "1"},
                stdout=True, stderr=True,
            )  # fmt: skip
            path = Path(folder) / "package-lock.json"
            if not path.is_file():
                raise RuntimeError(f"npm wrote no lockfile: {bytes(out).decode()[-1000:]}")
            return path.read_text().replace(self.url, PUBLIC)


def stored_version(name: str) -> str:
    """The newest version of `name` whose tarball the storage holds (the yarn and pnpm releases
    are fetched by range: the newest 1.x, 10.x when bootstrap ran)."""
    storage_ready()
    found = [p.name for p in (STORAGE / name).glob("*.tgz")]
    versions = [re.sub(r"^.*-(\d+\.\d+\.\d+[^/]*)\.tgz$", r"\1", f) for f in found]
    if not versions:
        raise RuntimeError(f"no tarball of {name} in {STORAGE}: see tests/npm-packages.txt")
    return max(versions, key=lambda v: tuple(int(n) for n in re.findall(r"\d+", v)[:3]))


def storage_ready() -> None:
    """Fail (not skip) when bootstrap has not fetched verdaccio and its storage."""
    if (
        not (VERDACCIO / "node_modules/verdaccio/bin/verdaccio").is_file()
        or not (STORAGE / ".fetched").is_file()
    ):
        pytest.fail(
            "tests/.verdaccio or tests/.npm-storage is missing: run scripts/bootstrap.sh --tests "
            "(scripts/npm-storage.sh fetches them)"
        )


@contextlib.contextmanager
def npm_registry(client: docker.DockerClient, *, image: str, network: str) -> Iterator[NpmRegistry]:
    """Serve tests/.npm-storage with verdaccio from a hardened container of `image` (it needs
    Node) on `network`; removed on exit."""
    storage_ready()
    host = f"npmreg-{uuid.uuid4().hex[:10]}"
    with tempfile.TemporaryDirectory(prefix="worker-test-verdaccio-") as config_dir:
        os.chmod(config_dir, 0o755)
        (Path(config_dir) / "config.yaml").write_text(CONFIG)
        os.chmod(Path(config_dir) / "config.yaml", 0o644)
        container = client.containers.run(
            image,
            [
                "node", "/opt/verdaccio/node_modules/verdaccio/bin/verdaccio",
                "--config", "/etc/verdaccio/config.yaml", "--listen", f"0.0.0.0:{PORT}",
            ],
            detach=True, name=host, network=network, labels={TEST_LABEL: "1"},
            read_only=True, tmpfs={"/tmp": "size=64m"}, user="1000:1000",
            cap_drop=["ALL"], security_opt=["no-new-privileges"], mem_limit="512m",
            pids_limit=128, environment={"HOME": "/tmp"},
            volumes={
                str(VERDACCIO): {"bind": "/opt/verdaccio", "mode": "ro"},
                str(STORAGE): {"bind": "/srv/storage", "mode": "ro"},
                config_dir: {"bind": "/etc/verdaccio", "mode": "ro"},
            },
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while b"http address" not in bytes(container.logs()):
                container.reload()
                if time.monotonic() > deadline or container.status == "exited":
                    raise RuntimeError(f"verdaccio did not start: {container.logs()[-800:]!r}")
                time.sleep(0.1)
            yield NpmRegistry(host=host, container=container, network=network, image=image)
        finally:
            container.remove(force=True)


MakeNpmRegistry = Callable[..., NpmRegistry]


@pytest.fixture
def make_npm_registry(
    docker_client: docker.DockerClient, node_image: str
) -> Iterator[MakeNpmRegistry]:
    """Start registries on given networks (`make(network=...)`); all removed at teardown."""
    with contextlib.ExitStack() as stack:

        def make(*, network: str) -> NpmRegistry:
            return stack.enter_context(
                npm_registry(docker_client, image=node_image, network=network)
            )

        yield make
