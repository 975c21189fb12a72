"""Wire a run together: snapshot the tree, start the sandbox, clean both up on every path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import docker

from policies.isolation import HARDENED, Isolation
from policies.limits import Limits
from sandbox.base import Sandbox, SandboxBase
from sandbox.docker_sandbox import DockerSandbox
from sandbox.local_sandbox import LocalSandbox
from sandbox.scratch import make_scratch_dir
from sandbox.workspace import SANDBOX_UID, Workspace, protect_files, remove_dir, snapshot

Backend = Literal["docker", "local"]
BACKENDS: tuple[Backend, ...] = ("docker", "local")


@dataclass(frozen=True, kw_only=True)
class SandboxSession:
    """A started sandbox and the workspace copy it works on."""

    box: Sandbox
    workspace: Workspace


def make_box(
    backend: Backend,
    *,
    client: docker.DockerClient | None,
    image: str,
    workspace: Path,
    control_dir: Path,
    limits: Limits,
    output_bytes: int = 16_000,
    log_dir: Path | None = None,
    labels: dict[str, str] | None = None,
    isolation: Isolation = HARDENED,
) -> SandboxBase:
    """The sandbox for `backend` (not started): a container, or host processes (weaker)."""
    if backend == "local":
        return LocalSandbox(
            workspace=workspace,
            control_dir=control_dir,
            limits=limits,
            output_bytes=output_bytes,
            log_dir=log_dir,
        )
    assert client is not None, "the docker backend needs a client"
    return DockerSandbox(
        client=client,
        image=image,
        workspace=workspace,
        control_dir=control_dir,
        limits=limits,
        output_bytes=output_bytes,
        log_dir=log_dir,
        labels=labels,
        isolation=isolation,
    )


def workspace_owner(backend: Backend) -> int | None:
    """Who must own the copy: the container's user, or (local) whoever runs the worker."""
    return SANDBOX_UID if backend == "docker" else None


@contextmanager
def open_session(
    repo: Path,
    *,
    client: docker.DockerClient | None,
    image: str,
    run_dir: Path,
    limits: Limits,
    output_bytes: int = 16_000,
    keep_logs: bool = True,
    backend: Backend = "docker",
    isolation: Isolation = HARDENED,
    protect: Callable[[str], bool] | None = None,
    exclude: Path | None = None,
) -> Iterator[SandboxSession]:
    """Snapshot `repo` into a scratch folder and start a sandbox on the copy; remove both at
    exit (or, if this process is killed, at the next worker start).

    Command logs stay in `run_dir/logs` when `keep_logs`; the copy itself is always removed.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    work = make_scratch_dir()
    try:
        workspace = snapshot(
            repo,
            work,
            owner_uid=workspace_owner(backend),
            exclude=exclude or run_dir,
            cap_mb=limits.workspace_mb if backend == "docker" else None,
        )
        if protect is not None and backend == "docker" and not isolation.run_as_root:
            protect_files(workspace.path, protect)
        box = make_box(
            backend,
            client=client,
            image=image,
            workspace=workspace.path,
            control_dir=work / "control",
            limits=limits,
            output_bytes=output_bytes,
            log_dir=run_dir / "logs" if keep_logs else None,
            isolation=isolation,
        )
        with box:
            yield SandboxSession(box=box, workspace=workspace)
    finally:
        remove_dir(work)
