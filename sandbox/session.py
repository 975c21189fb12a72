"""Wire a run together: snapshot the tree, start the container, clean both up on every path."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import docker

from policies.limits import Limits
from sandbox.docker_sandbox import DockerSandbox, remove_dir
from sandbox.workspace import Workspace, snapshot


@dataclass(frozen=True, kw_only=True)
class SandboxSession:
    """A started sandbox and the workspace copy it works on."""

    box: DockerSandbox
    workspace: Workspace


@contextmanager
def open_session(
    repo: Path,
    *,
    client: docker.DockerClient,
    image: str,
    run_dir: Path,
    limits: Limits,
    output_bytes: int = 16_000,
    keep_logs: bool = True,
) -> Iterator[SandboxSession]:
    """Snapshot `repo` into `run_dir` and start a sandbox on the copy; remove both at exit.

    Command logs stay in `run_dir/logs` when `keep_logs`; the copy itself is always removed.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    work = run_dir / "sandbox"
    work.mkdir()
    try:
        workspace = snapshot(repo, work)
        box = DockerSandbox(
            client=client,
            image=image,
            workspace=workspace.path,
            control_dir=work / "control",
            limits=limits,
            output_bytes=output_bytes,
            log_dir=run_dir / "logs" if keep_logs else None,
        )
        with box:
            yield SandboxSession(box=box, workspace=workspace)
    finally:
        remove_dir(work)
