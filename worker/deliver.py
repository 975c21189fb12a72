"""Hand the verified patch to the user's repository, only when asked: --apply or --branch."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import git

from worker.errors import UsageError
from worker.verify import apply_patch_to


def check_branch_request(repo: Path, branch: str) -> None:
    """Refuse early (exit 2) a --branch that cannot be made: no repository, bad or taken name."""
    try:
        r = git.Repo(repo, search_parent_directories=False)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError) as exc:
        raise UsageError(f"--branch needs a git repository: {repo} is not one") from exc
    try:
        r.git.check_ref_format("--branch", branch)
    except git.GitCommandError as exc:
        raise UsageError(f"--branch: not a valid branch name: {branch!r}") from exc
    if branch in r.heads:
        raise UsageError(f"--branch: branch {branch!r} already exists")
    if not r.head.is_valid():
        raise UsageError("--branch needs a repository with at least one commit")


def apply_to_worktree(repo: Path, patch: str) -> str:
    """Apply the patch to the user's working tree, all or nothing."""
    apply_patch_to(repo, patch, check_only=True)
    apply_patch_to(repo, patch)
    return "applied to the working tree"


def commit_on_branch(repo: Path, branch: str, patch: str, message: str) -> str:
    """Commit HEAD + patch on a new branch; the working tree, index and HEAD stay as they were.

    Uses a private index file, so not even the user's staging area is touched. The patch was made
    against the working tree; where it needs uncommitted changes it does not apply to HEAD, and
    this says so (the patch file is still there).
    """
    check_branch_request(repo, branch)
    r = git.Repo(repo)
    with tempfile.TemporaryDirectory(prefix="worker-index-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        patch_file = Path(tmp, "fix.patch")
        patch_file.write_text(patch, encoding="utf-8")
        try:
            r.git.read_tree("HEAD", env=env)
            r.git.apply("--cached", "--whitespace=nowarn", str(patch_file), env=env)
            tree = r.git.write_tree(env=env)
            commit = r.git.commit_tree(tree, "-p", "HEAD", "-m", message, env=env)
        except git.GitCommandError as exc:
            raise UsageError(
                "the patch does not apply to HEAD (it may need your uncommitted changes): "
                + (exc.stderr or str(exc)).strip().splitlines()[-1][:300]
            ) from exc
    r.git.update_ref(f"refs/heads/{branch}", commit, "0" * 40)
    return f"committed as {commit[:12]} on new branch {branch}"
