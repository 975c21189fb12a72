"""The container's working copy as a git repository, as a fresh CI checkout is one.

Some projects' install or test scripts ask git: `lefthook install` and husky in a `prepare`
script (run by `npm ci`, and again by `npm pack`), `git rev-parse --show-toplevel` or `git
ls-files` in a build script, a Maven or cargo build stamping the commit. Outside a repository
they end the set-up or the test run (lefthook: exit 128). So each container's /workspace is a
repository of its own, made inside that container the first time anything in it calls git:

- **Made when first asked for.** The `git` that commands find first on their PATH is a small
  script of the control folder's (`wrapper`): its first call in a container (a lock held, in
  case two ask at once) makes the repository, then it and every later call is the image's git,
  with the caller's own arguments, folder and variables. Most test runs never call git and pay
  nothing: making it in every container before its first command cost each `worker fix` about
  0.3 s (its own sandbox and the clean re-check: bench/overhead.py), and 0.8 s a container for
  a tree of 10,000 files (bench/checkout_repo.py). A call with GIT_DIR set (the edit tools'
  `git apply`, a test's own repository) asks for another repository and makes none. A tool
  that reads `.git` without running git (JGit) finds the empty folder, as outside a checkout.
- **Fresh, with the tree as its one commit.** `git init`, every file of the copy that the
  tree's `.gitignore` does not ignore added, one commit by a fixed identity at a fixed date.
  Not an empty repository: `git ls-files`, `git status` and `git diff --quiet` answer as in
  CI's checkout only with the files committed. The same tree gives the same commit id in
  set-up, in the agent's sandbox and in the clean re-check, so a build that stamps it stays
  deterministic. Links that leave the tree (set-up's `node_modules` link into its image) are
  not the project's files: the repository's own `info/exclude` names them, so that neither
  the commit nor `git status` has them, as CI's checkout ignores its installed folders.
- **Nothing of the user's repository.** No history, config, hooks or remotes: history is where
  answers leak (sandbox/ecosystems/python/vcs_version.py). A `.git` the tree itself holds is
  never copied (sandbox/worktree/workspace.py), and the mount below would hide it anyway.
- **In the container alone.** The git directory is a tmpfs mounted at /workspace/.git, the
  container's own: never on this machine's disk (a mounted copy shows only the empty folder
  Docker makes as its mount point), never in a committed set-up image, gone with the container.
  It is `noexec`, so a hook that set-up's scripts install there (lefthook writes
  .git/hooks/*) cannot run even inside the container; and nothing of the worker runs git on it
  after it is made (the edit tools' `git apply` names no repository: sandbox/worktree/diff.py).
  The model's tools never read or write it (policies/paths.py: `.git` is refused always).
- **Trusted by git.** The copy's top folder can be root's (the locked tests make their folders
  so), which git calls "dubious ownership" for any other user: the container's system config,
  a read-only file of the control folder named by GIT_CONFIG_SYSTEM, says /workspace is safe
  (and includes the image's own /etc/gitconfig).

Where the repository cannot be made (a tree too big for the tmpfs), the repository stays
empty (`git init` alone), which is what a tool that only asks for the top folder needs; the
call that made it says why on its stderr, once.
"""

from __future__ import annotations

import shlex

#: The git directory's mount point, inside the working copy's (docker_sandbox.py's /workspace).
GIT_DIR_NAME = ".git"
#: The tmpfs's size: at most this much of the container's memory holds the repository's
#: objects (one pack: the tree's files compressed).
REPOSITORY_MB = 512
#: The control folder's file that is git's system configuration in the container.
SYSTEM_CONFIG_FILE = "gitconfig"
#: How long a git call waits for another making the repository, at most.
MAKE_WAIT_S = 300
#: The wrapper's name in the control folder, which the runner puts first on commands' PATH.
WRAPPER_NAME = "git"
#: In the git directory, once the repository is made (or found unmakeable): later calls go
#: straight to git. The lock beside it is held while one is made.
MADE_MARK = "worker-made"
LOCK_FILE = "worker-making.lock"
#: The commit's identity and date: fixed, so the same tree is the same commit everywhere.
IDENTITY = {
    "GIT_AUTHOR_NAME": "worker",
    "GIT_AUTHOR_EMAIL": "worker@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "worker",
    "GIT_COMMITTER_EMAIL": "worker@localhost",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
}
#: Variables that would point git elsewhere, unset for the making (an image may set them).
_UNSET = (
    "GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES "
    "GIT_CEILING_DIRECTORIES GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_TEMPLATE_DIR"
)
#: Run as the sandbox user in the copy's top folder. No hook runs (a hooks path of nowhere,
#: `--no-verify`), no gc, no fsmonitor; every file streamed into one pack (bigFileThreshold:
#: for the add alone, as sandbox/worktree/workspace.py's snapshot does).
MAKE_SCRIPT = f"""\
unset {_UNSET}
g() {{ git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c gc.auto=0 "$@"; }}
g -c init.defaultBranch=main init -q || exit 1
mkdir -p .git/info &&
find . -path ./.git -prune -o -type l -lname '/*' -print |
  sed -e 's/[][*?\\]/\\\\&/g' -e 's|^[.]/|/|' >> .git/info/exclude || exit 1
if g -c core.bigFileThreshold=1 add -A . &&
   g commit -q --no-verify --allow-empty -m 'the working copy'; then
  exit 0
fi
echo 'the working copy could not be committed: the repository is left empty'
find .git -mindepth 1 -delete && g -c init.defaultBranch=main init -q
"""


def tmpfs_options(user: str, *, size_mb: int = REPOSITORY_MB) -> str:
    """The tmpfs's mount options: the command user's own, private to it, no programs run.

    >>> tmpfs_options("1000:1000", size_mb=64)
    'size=64m,mode=0700,uid=1000,gid=1000,noexec,nosuid,nodev'
    """
    uid, _, gid = user.partition(":")
    return f"size={size_mb}m,mode=0700,uid={uid},gid={gid or uid},noexec,nosuid,nodev"


def system_config(workspace: str) -> bytes:
    """git's system configuration in the container: the image's own (/etc/gitconfig, where it
    has one: an include of a missing file is nothing), and the copy a safe directory whoever
    owns its top folder.

    >>> system_config("/workspace").decode().split()
    ['[include]', 'path', '=', '/etc/gitconfig', '[safe]', 'directory', '=', '/workspace']
    """
    return f"[include]\n\tpath = /etc/gitconfig\n[safe]\n\tdirectory = {workspace}\n".encode()


def make_env() -> dict[str, str]:
    """The variables of the making: no user configuration, a fixed identity and date."""
    return {"GIT_CONFIG_GLOBAL": "/dev/null", "LC_ALL": "C", **IDENTITY}


def wrapper(control: str, workspace: str) -> bytes:
    """The `git` first on the sandbox's commands' PATH (the runner puts `control` there): makes
    `workspace` a repository at its first call in the container, then runs the image's git.

    >>> text = wrapper("/run/worker", "/workspace").decode()
    >>> text.splitlines()[0], text.rstrip().splitlines()[-1]
    ('#!/bin/sh', 'exec git "$@"')
    """
    variables = " ".join(f"{k}={shlex.quote(v)}" for k, v in make_env().items())
    git_dir = f"{workspace}/{GIT_DIR_NAME}"
    return f"""#!/bin/sh
# git, as the sandbox's commands find it (sandbox/container/checkout_repo.py): the first call in
# this container makes {workspace} a repository of its own; then the image's git runs.
PATH=$(printf '%s' ":$PATH:" | sed -e 's|:{control}:|:|g' -e 's|^:||' -e 's|:$||')
export PATH
if [ -z "${{GIT_DIR+set}}" ] && [ ! -e {git_dir}/{MADE_MARK} ] && [ -w {git_dir} ]; then
  said=$(
    if command -v flock >/dev/null 2>&1; then
      exec 9>{git_dir}/{LOCK_FILE} && flock -w {MAKE_WAIT_S} 9
    fi
    [ -e {git_dir}/{MADE_MARK} ] && exit 0
    cd {workspace} || exit 0
    ( export {variables}; {_subshell(MAKE_SCRIPT)} ) 2>&1
    : > {git_dir}/{MADE_MARK}
  )
  [ -n "$said" ] && printf 'worker: making the working copy a repository: %s\\n' "$said" >&2
fi
exec git "$@"
""".encode()


def _subshell(script: str) -> str:
    """MAKE_SCRIPT as one subshell's body (its `exit`s end that subshell alone)."""
    return "\n".join(f"  {line}" if line else line for line in script.splitlines()).strip()
