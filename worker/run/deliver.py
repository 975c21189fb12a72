"""Hand the verified patch to the user's repository, only when asked: --apply or --branch.

Every git command here goes through `user_git`, so nothing the repository's config names (an
fsmonitor, hooks, a signing program) runs on the host.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sandbox.errors import SandboxError
from sandbox.worktree.diff import APPLY_TO_INDEX, NO_GIT_CONFIG, GitApply
from sandbox.worktree.user_git import last_error_line, user_git
from worker.errors import UsageError


def check_branch_request(repo: Path, branch: str) -> None:
    """Refuse early (exit 2) a --branch that cannot be made: no repository, bad or taken name."""
    top = user_git(repo, "rev-parse", "--show-toplevel")
    if top.returncode != 0 or Path(os.fsdecode(top.stdout.strip())) != repo.resolve():
        raise UsageError(f"--branch needs a git repository: {repo} is not one")
    if user_git(repo, "check-ref-format", "--branch", branch).returncode != 0:
        raise UsageError(f"--branch: not a valid branch name: {branch!r}")
    if user_git(repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").returncode == 0:
        raise UsageError(f"--branch: branch {branch!r} already exists")
    if user_git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}").returncode != 0:
        raise UsageError("--branch needs a repository with at least one commit")


def apply_to_worktree(repo: Path, patch: str) -> str:
    """Apply the patch to the user's working tree, all or nothing.

    git runs with a private, empty git directory and no user or system config: it only writes
    files, and the repository's config (filters named by its .gitattributes) plays no part, as
    none did when the patch was made from the copy.
    """
    if not patch.strip():
        return "nothing to apply"
    with tempfile.TemporaryDirectory(prefix="worker-apply-") as tmp:
        git_dir = os.path.join(tmp, "git")
        user_git(Path(tmp), "init", "-q", "--bare", "--template=", git_dir, env=NO_GIT_CONFIG)
        for apply in (
            GitApply(options=("--check", "--whitespace=nowarn")),
            GitApply(options=("--whitespace=nowarn",)),
        ):
            env = {**apply.env, "GIT_DIR": git_dir, "GIT_WORK_TREE": str(repo.resolve())}
            proc = user_git(repo, *apply.args(), env=env, input_bytes=patch.encode())
            if proc.returncode != 0:
                raise SandboxError(f"the patch does not apply: {last_error_line(proc)}")
    return "applied to the working tree"


def commit_on_branch(repo: Path, branch: str, patch: str, message: str) -> str:
    """Commit HEAD + patch on a new branch; the working tree, index and HEAD stay as they were.

    Uses a private index file, so not even the user's staging area is touched. The patch was made
    against the working tree; where it needs uncommitted changes it does not apply to HEAD, and
    this says so (the patch file is still there).
    """
    check_branch_request(repo, branch)
    with tempfile.TemporaryDirectory(prefix="worker-index-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        steps: list[tuple[str, ...]] = [
            ("read-tree", "HEAD"),
            APPLY_TO_INDEX.args(),
            ("write-tree",),
        ]
        for args in steps:
            proc = user_git(repo, *args, env=env, input_bytes=patch.encode())
            if proc.returncode != 0:
                raise UsageError(
                    "the patch does not apply to HEAD (it may need your uncommitted changes): "
                    + last_error_line(proc)
                )
        tree = proc.stdout.decode().strip()
        proc = user_git(repo, "commit-tree", tree, "-p", "HEAD", "-m", message, env=env)
        if proc.returncode != 0:
            raise UsageError(f"cannot commit the patch: {last_error_line(proc)}")
    commit = proc.stdout.decode().strip()
    proc = user_git(repo, "update-ref", f"refs/heads/{branch}", commit, "0" * 40)
    if proc.returncode != 0:
        raise UsageError(f"cannot create branch {branch!r}: {last_error_line(proc)}")
    return f"committed as {commit[:12]} on new branch {branch}"
