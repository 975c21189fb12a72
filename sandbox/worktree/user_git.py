"""Git on the user's own repository, with every setting that would run a program switched off.

A repository's `.git/config` is part of what we are handed, and it can name programs for git to
run: `core.fsmonitor`, hooks (`core.hooksPath` or `.git/hooks`, e.g. reference-transaction on
update-ref), `gpg.program` through `commit.gpgSign`. Environment variables cannot skip the
repository's own config, but `-c` on the command line wins over every config file, so each git
command on the user's repository goes through `user_git`. User and system config are still read
on purpose: they hold the user's identity for --branch and their global ignore file.

Filter drivers (`filter.<name>.clean/smudge/process`) run only when git converts between the
index and the working tree; none of the commands run here does that (`ls-files` lists,
`apply --cached` works on blobs), and the working-tree apply uses a private, empty git directory.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: `-c` settings that switch off everything in the repository's config that runs a program.
SAFE_SETTINGS = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "commit.gpgSign=false",
)
# Inherited variables that would point git at another repository, index or object store.
_REDIRECTS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
)


def user_git(
    repo: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git -C repo ARGS` safely; the caller looks at `returncode`, `stdout`, `stderr`."""
    base = {k: v for k, v in os.environ.items() if k not in _REDIRECTS}
    settings = [arg for setting in SAFE_SETTINGS for arg in ("-c", setting)]
    return subprocess.run(
        ["git", "--no-pager", *settings, "-C", str(repo), *args],
        env={**base, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", **(env or {})},
        input=input_bytes,
        capture_output=True,
        check=False,
    )


def last_error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The last line git wrote to stderr, for a one-line message."""
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1][:300] if lines else f"git exited with {proc.returncode}"
