"""The dependency set-up phase, cached as an image keyed by what determines its result.

`--setup "pip install -e .[test]"` runs once with the network on (the host's CA bundle mounted
read-only), on a throwaway copy of the tree, as the sandbox user; the container is committed as
`worker-setup:<key>`. The key covers the base image, the command and the dependency files, so the
next run on the same repository starts warm. The agent's own sandbox never has a network.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import docker
import docker.errors

from policies.isolation import HARDENED, Isolation
from policies.limits import Limits
from sandbox.docker_sandbox import DockerSandbox
from sandbox.errors import SandboxError
from sandbox.workspace import make_run_dir, remove_dir, snapshot

SETUP_REPOSITORY = "worker-setup"
DEPENDENCY_FILES = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "pdm.lock",
    "environment.yml",
    "package.json",
    "package-lock.json",
)


def setup_key(client: docker.DockerClient, *, base_image: str, command: str, repo: Path) -> str:
    """Hash of the base image id, the set-up command and the dependency files' contents."""
    digest = hashlib.sha256()
    digest.update(client.images.get(base_image).id.encode())
    digest.update(b"\0" + command.encode() + b"\0")
    names = sorted({*DEPENDENCY_FILES, *(p.name for p in repo.glob("requirements*.txt"))})
    for name in names:
        path = repo / name
        if path.is_file() and not path.is_symlink():
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def prepare_setup_image(
    client: docker.DockerClient,
    *,
    base_image: str,
    command: str,
    repo: Path,
    limits: Limits,
    isolation: Isolation = HARDENED,
    timeout_s: float = 900.0,
    progress: Callable[[str], None] = lambda _m: None,
) -> tuple[str, bool]:
    """Return (image, cached): the set-up image for `repo`, built now unless already cached."""
    key = setup_key(client, base_image=base_image, command=command, repo=repo)
    tag = f"{SETUP_REPOSITORY}:{key}"
    try:
        client.images.get(tag)
        progress(f"set-up cached: {tag}")
        return tag, True
    except docker.errors.ImageNotFound:
        pass
    progress(f"set-up: {command}")
    run_dir = make_run_dir("worker-setup-")
    try:
        workspace = snapshot(repo, run_dir)
        box = DockerSandbox(
            client=client,
            image=base_image,
            workspace=workspace.path,
            control_dir=run_dir / "control",
            limits=limits,
            log_dir=run_dir / "logs",
            # Network on (with the host's CA bundle) and a writable root: that is what set-up
            # is for; the result is committed, and the agent's sandbox gets neither.
            isolation=replace(isolation, network=True, read_only_root=False),
            labels={"worker.phase": "setup"},
        )
        with box:
            result = box.run(command, timeout_s=timeout_s)
            if not result.ok:
                raise SandboxError(
                    f"set-up command failed ({result.describe()}): {command}\n"
                    + result.output[-2000:]
                )
            box.commit(repository=SETUP_REPOSITORY, tag=key, labels={"worker.setup": command[:200]})
    finally:
        remove_dir(run_dir)
    progress(f"set-up done in {result.duration_s:.1f}s, cached as {tag}")
    return tag, False
