"""The harness's own check: the original snapshot plus the patch, in a fresh container."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import docker

from policies.isolation import HARDENED, Isolation
from policies.limits import Limits
from sandbox.errors import SandboxError
from sandbox.scratch import make_scratch_dir
from sandbox.session import Backend, make_box, workspace_owner
from sandbox.testrun import TestRun, run_tests
from sandbox.workspace import Workspace, chown_tree, protect_files, remove_dir


def verify_patch(
    *,
    client: docker.DockerClient | None,
    image: str,
    workspace: Workspace,
    patch: str,
    test_cmd: str,
    limits: Limits,
    work_dir: Path,
    timeout_s: float | None = None,
    backend: Backend = "docker",
    isolation: Isolation = HARDENED,
    protect: Callable[[str], bool] | None = None,
) -> TestRun:
    """Apply `patch` to a clean export of the snapshot and run the whole test command there.

    The copy lives in a scratch folder (removed at exit); the logs go to `work_dir/logs`."""
    work_dir.mkdir(parents=True)
    scratch = make_scratch_dir()
    fresh = scratch / "workspace"
    fresh.mkdir()
    try:
        workspace.export_snapshot(fresh)
        apply_patch_to(fresh, patch)
        owner = workspace_owner(backend)
        if owner is not None and os.geteuid() == 0:
            chown_tree(fresh, owner)
            if protect is not None and not isolation.run_as_root:
                protect_files(fresh, protect)
        box = make_box(
            backend,
            client=client,
            image=image,
            workspace=fresh,
            control_dir=scratch / "control",
            limits=limits,
            log_dir=work_dir / "logs",
            labels={"worker.phase": "verify"},
            isolation=isolation,
        )
        with box:
            return run_tests(box, test_cmd=test_cmd, timeout_s=timeout_s)
    finally:
        remove_dir(scratch)


def apply_patch_to(tree: Path, patch: str, *, check_only: bool = False) -> None:
    """`git apply` a patch to a plain directory (no repository), all or nothing."""
    if not patch.strip():
        return
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": str(tree),
        "GIT_CEILING_DIRECTORIES": str(tree.parent),
    }
    args = ["git", "apply", "--whitespace=nowarn"] + (["--check"] if check_only else [])
    proc = subprocess.run(
        [*args, "-"], cwd=tree, input=patch.encode(), capture_output=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise SandboxError(
            "the patch does not apply: " + proc.stderr.decode(errors="replace").strip()[:500]
        )
