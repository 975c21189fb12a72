"""Git for `worker publish`: where the remote branch points, the fix as a commit on the run's
own commit, and a push that never forces. All through `user_git` (nothing the repository's
config names runs); the working tree, index and HEAD are never touched."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from sandbox.worktree.diff import APPLY_TO_INDEX
from sandbox.worktree.user_git import last_error_line, user_git
from worker.errors import UsageError
from worker.publish.errors import PublishFailed

#: Used when git has no identity configured (a fresh CI runner): GitHub's bot for Actions.
BOT_NAME = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"


def remote_branch_sha(repo: Path, remote: str, branch: str) -> str | None:
    """The commit `branch` points at on `remote` now (None when there is no such branch)."""
    proc = user_git(repo, "ls-remote", "--heads", remote, f"refs/heads/{branch}")
    if proc.returncode != 0:
        raise PublishFailed(f"reading branch {branch!r} on {remote}: {last_error_line(proc)}")
    for line in proc.stdout.decode().splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    return None


def commit_patch(repo: Path, base_sha: str, patch: str, message: str) -> str:
    """A commit of `base_sha` + `patch`, made with a private index; returns its sha."""
    if user_git(repo, "cat-file", "-e", f"{base_sha}^{{commit}}").returncode != 0:
        raise UsageError(
            f"commit {base_sha[:12]} (the run's) is not in {repo}: check it out, or fetch it"
        )
    with tempfile.TemporaryDirectory(prefix="worker-publish-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index"), **_identity(repo)}
        for args in (
            ("read-tree", base_sha),
            APPLY_TO_INDEX.args(),
            ("write-tree",),
        ):
            proc = user_git(repo, *args, env=env, input_bytes=patch.encode())
            if proc.returncode != 0:
                raise UsageError(
                    f"the patch does not apply to {base_sha[:12]}: {last_error_line(proc)}"
                )
        tree = proc.stdout.decode().strip()
        proc = user_git(repo, "commit-tree", tree, "-p", base_sha, "-m", message, env=env)
        if proc.returncode != 0:
            raise PublishFailed(f"committing the patch: {last_error_line(proc)}")
    return proc.stdout.decode().strip()


def push_new_branch(repo: Path, remote: str, commit: str, branch: str) -> None:
    """Push `commit` as a new branch: an existing branch is a rejection, even when the push
    would fast-forward it (a lease expecting the branch to be absent, checked by the remote)."""
    ref = f"refs/heads/{branch}"
    lease = f"--force-with-lease={ref}:"
    proc = user_git(repo, "push", "--porcelain", lease, remote, f"{commit}:{ref}", env=_no_prompt())
    if proc.returncode != 0:
        raise PublishFailed(f"pushing {branch} to {remote} was rejected: {_push_error(proc)}")


def _push_error(proc: object) -> str:
    import subprocess

    assert isinstance(proc, subprocess.CompletedProcess)
    text = (proc.stdout + b"\n" + proc.stderr).decode("utf-8", "replace")
    for line in text.splitlines():
        if line.startswith("!"):
            return line.strip()[:300]
    return last_error_line(proc)


def _identity(repo: Path) -> dict[str, str]:
    if user_git(repo, "config", "user.email").returncode == 0 or "GIT_AUTHOR_EMAIL" in os.environ:
        return {}
    return {
        "GIT_AUTHOR_NAME": BOT_NAME,
        "GIT_AUTHOR_EMAIL": BOT_EMAIL,
        "GIT_COMMITTER_NAME": BOT_NAME,
        "GIT_COMMITTER_EMAIL": BOT_EMAIL,
    }


def _no_prompt() -> dict[str, str]:
    return {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false", "SSH_ASKPASS": "/bin/false"}
