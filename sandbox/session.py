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
from policies.paths import Protection
from policies.secrets import NO_SECRETS, Secrets
from sandbox.container.base import Sandbox, SandboxBase
from sandbox.container.docker_sandbox import DockerSandbox
from sandbox.container.local_sandbox import LocalSandbox
from sandbox.on_thread import OnThread
from sandbox.worktree.fixture_guard import FixtureGuard
from sandbox.worktree.scratch import make_scratch_dir
from sandbox.worktree.workspace import SANDBOX_UID, Workspace, protect_files, remove_dir, snapshot

Backend = Literal["docker", "local"]
BACKENDS: tuple[Backend, ...] = ("docker", "local")


@dataclass(frozen=True, kw_only=True)
class BoxSpec:
    """Which sandbox to start, how hardened, with what limits, and which paths it protects.

    `client` and `image` are the docker backend's (None and "" for the local one); `protect`
    says how each file the model may not write is kept from code run in the sandbox
    (policies.paths.PathPolicy.protection); None protects nothing.
    """

    client: docker.DockerClient | None
    image: str
    limits: Limits
    backend: Backend = "docker"
    isolation: Isolation = HARDENED
    protect: Callable[[str], Protection | None] | None = None
    #: Files set-up wrote into the tree (sandbox/setup/tree.py), laid over each new copy.
    overlay: Path | None = None
    #: Masked in every command's output and log (policies/secrets.py).
    secrets: Secrets = NO_SECRETS


@dataclass(frozen=True, kw_only=True)
class SandboxSession:
    """A started sandbox and the workspace copy it works on."""

    box: Sandbox
    workspace: Workspace


def make_box(
    spec: BoxSpec,
    *,
    workspace: Path,
    control_dir: Path,
    output_bytes: int = 16_000,
    log_dir: Path | None = None,
    labels: dict[str, str] | None = None,
) -> SandboxBase:
    """The sandbox `spec` describes (not started): a container, or host processes (weaker)."""
    box = _backend_box(
        spec, workspace=workspace, control_dir=control_dir, output_bytes=output_bytes,
        log_dir=log_dir, labels=labels,
    )  # fmt: skip
    box.mask(spec.secrets)
    return box


def _backend_box(
    spec: BoxSpec,
    *,
    workspace: Path,
    control_dir: Path,
    output_bytes: int,
    log_dir: Path | None,
    labels: dict[str, str] | None,
) -> SandboxBase:
    if spec.backend == "local":
        return LocalSandbox(
            workspace=workspace,
            control_dir=control_dir,
            limits=spec.limits,
            output_bytes=output_bytes,
            log_dir=log_dir,
        )
    assert spec.client is not None, "the docker backend needs a client"
    return DockerSandbox(
        client=spec.client,
        image=spec.image,
        workspace=workspace,
        control_dir=control_dir,
        limits=spec.limits,
        output_bytes=output_bytes,
        log_dir=log_dir,
        labels=labels,
        isolation=spec.isolation,
    )


def guard_fixtures(
    box: SandboxBase,
    workspace: Workspace,
    tree: Path,
    protect: Callable[[str], Protection | None],
) -> None:
    """Lock the protected files of `tree` (a copy of `workspace`'s snapshot) and have `box`
    watch its fixtures, putting them back from the snapshot after each command."""
    protected = protect_files(tree, protect)
    if protected.fixtures:
        box.watch(FixtureGuard(root=tree, files=protected.fixtures, original=workspace.original))


def workspace_owner(backend: Backend) -> int | None:
    """Who must own the copy: the container's user, or (local) whoever runs the worker."""
    return SANDBOX_UID if backend == "docker" else None


@contextmanager
def open_session(
    repo: Path,
    *,
    spec: BoxSpec,
    run_dir: Path,
    output_bytes: int = 16_000,
    keep_logs: bool = True,
    exclude: Path | None = None,
) -> Iterator[SandboxSession]:
    """Snapshot `repo` into a scratch folder and start the sandbox `spec` describes on the copy;
    remove both at exit (or, if this process is killed, at the next worker start).

    Command logs stay in `run_dir/logs` when `keep_logs`; the copy itself is always removed.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    work = make_scratch_dir()
    box: SandboxBase | None = None
    starting: OnThread | None = None
    try:
        box = make_box(
            spec,
            workspace=work / "workspace",
            control_dir=work / "control",
            output_bytes=output_bytes,
            log_dir=run_dir / "logs" if keep_logs else None,
        )
        starting = OnThread(box.start, name="sandbox-start")
        # The sandbox starts as soon as the copy's folder (its own filesystem) is mounted,
        # while the files are copied in: nothing runs in it before the copy is done.
        workspace = snapshot(
            repo,
            work,
            owner_uid=workspace_owner(spec.backend),
            exclude=exclude or run_dir,
            cap_mb=spec.limits.workspace_mb if spec.backend == "docker" else None,
            on_ready=lambda _folder: starting.begin() if starting else None,
            overlay=spec.overlay,
        )
        if spec.protect is not None and spec.backend == "docker" and not spec.isolation.run_as_root:
            guard_fixtures(box, workspace, workspace.path, spec.protect)
        starting.wait()
        yield SandboxSession(box=box, workspace=workspace)
    finally:
        try:
            if starting is not None:
                starting.settle()
            if box is not None:
                box.close()
        finally:
            remove_dir(work)
