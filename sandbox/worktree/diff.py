"""A unified diff, read line by line (the files it names, the lines it adds and takes out), and
`git apply` as this project runs it.

The one reader for every caller: the patch a run hands over (`git diff` of the copy) and the diffs
a model writes for `apply_patch`, whose headers are right and whose hunk counts often are not
(git re-counts them: `--recount`). So a line is read by its prefix alone, never by a hunk's counts;
lines end at `\\n`, as git reads them:

    --- a/PATH      a file's old side   (`--- /dev/null`: the file is new)
    +++ b/PATH      a file's new side   (`+++ /dev/null`: the file is deleted)
    rename from PATH, rename to PATH, copy from PATH, copy to PATH   git's extended headers
    +TEXT           an added line       (`+++ ` starts a header)
    -TEXT           a removed line      (`--- ` starts a header)

A header's name ends at a tab (GNU diff writes a date after one). `tools/patch_parse.py` reads a
model's diff further, into hunks, to repair it before `git apply` sees it.

>>> patch = "--- a/x.py\\n+++ b/x.py\\n@@ -1 +1 @@\\n-a = 1\\n+a = 2\\n"
>>> file_paths(patch), removed_lines(patch)
(['x.py'], ['a = 1'])
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sandbox.errors import SandboxError

Kind = Literal[
    "old", "new", "rename from", "rename to", "copy from", "copy to", "added", "removed", "other"
]
#: Every kind of line that names a file.
HEADERS: tuple[Kind, ...] = ("old", "new", "rename from", "rename to", "copy from", "copy to")
_PREFIX = {"old": "a/", "new": "b/"}
_EXTENDED: tuple[Kind, ...] = ("rename from", "rename to", "copy from", "copy to")
#: Keeps the user's and the system's git configuration (`apply.whitespace`, ...) out of a command.
NO_GIT_CONFIG = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
#: A git directory that is none: git then finds no repository at all, and `git apply` patches
#: plain files, whatever `.git` the folder holds (the sandbox's copy is a repository,
#: sandbox/container/checkout_repo.py, whose config and hooks code run in the sandbox may have
#: written: its filters must not decide how a patch applies).
NO_REPOSITORY = {"GIT_DIR": "/nonexistent/no-repository"}


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a diff: its kind, and its text without the marker (`+`, `-`, `--- `,
    `rename from `...); a header's text also loses git's `a/` or `b/` (`prefixed` says whether
    it had one) and what follows a tab."""

    kind: Kind
    text: str
    prefixed: bool = False


def diff_lines(patch: str) -> Iterator[DiffLine]:
    """The lines of `patch`, each with its kind.

    >>> [(d.kind, d.text) for d in diff_lines("--- /dev/null\\n+++ b/n.py\\n+x\\n")]
    [('old', '/dev/null'), ('new', 'n.py'), ('added', 'x')]
    """
    for line in patch.removesuffix("\n").split("\n"):
        if line.startswith(("--- ", "+++ ")):
            kind: Kind = "old" if line[0] == "-" else "new"
            rest = line[4:]
            prefixed = rest.startswith(_PREFIX[kind])
            name = rest[2:] if prefixed else rest
            yield DiffLine(kind, name.split("\t")[0].strip(), prefixed)
        elif extended := next((k for k in _EXTENDED if line.startswith(k + " ")), None):
            yield DiffLine(extended, line[len(extended) + 1 :].strip())
        elif line.startswith("+"):
            yield DiffLine("added", line[1:])
        elif line.startswith("-"):
            yield DiffLine("removed", line[1:])
        else:
            yield DiffLine("other", line)


def file_paths(patch: str, *, kinds: Collection[str] = ("old", "new")) -> list[str]:
    """The files the headers of `kinds` name, in order, each once: `--- a/X` and `+++ b/X` (a
    name without git's prefix, or /dev/null, is no file of the tree), and `rename from X`...

    >>> file_paths("rename from a.py\\nrename to b.py\\n", kinds=HEADERS)
    ['a.py', 'b.py']
    """
    found = (
        line.text
        for line in diff_lines(patch)
        if line.kind in kinds and (line.prefixed or line.kind in _EXTENDED)
    )
    return list(dict.fromkeys(path for path in found if path and path != "/dev/null"))


def removed_lines(patch: str) -> list[str]:
    """The lines a diff takes out, without their `-`."""
    return [line.text for line in diff_lines(patch) if line.kind == "removed"]


@dataclass(frozen=True, kw_only=True)
class GitApply:
    """One `git apply` as we run it: its options, and an environment that keeps the user's and
    the system's git configuration out (unless `user_config`, where the user's repository is
    committed to and its identity is wanted), and with `no_repository` any repository too.

    >>> GitApply(options=("-p1",)).shell()
    'GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git apply -p1'
    >>> GitApply(no_repository=True).shell()
    'GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_DIR=/nonexistent/no-repository git apply'
    """

    options: tuple[str, ...] = ()
    user_config: bool = False
    no_repository: bool = False

    @property
    def env(self) -> dict[str, str]:
        """The variables to add to git's environment."""
        return {
            **({} if self.user_config else NO_GIT_CONFIG),
            **(NO_REPOSITORY if self.no_repository else {}),
        }

    def args(self, patch_file: str = "-") -> tuple[str, ...]:
        """git's arguments after `git` (global options, `-C`, go before them): `-` reads stdin."""
        return ("apply", *self.options, patch_file)

    def shell(self) -> str:
        """The command as shell text, without the patch file: the caller appends more options
        (a shell variable among them) and the file."""
        assigned = [f"{name}={value}" for name, value in self.env.items()]
        return " ".join([*assigned, "git", "apply", *self.options])


#: A patch onto an index alone (a private `GIT_INDEX_FILE`), for a commit on the user's own
#: repository: its config is read, for the identity to commit with (`user_git`).
APPLY_TO_INDEX = GitApply(options=("--cached", "--whitespace=nowarn"), user_config=True)


def apply_to_dir(tree: Path, patch: str, *, check_only: bool = False) -> None:
    """`git apply` a patch to a plain directory (no repository), all or nothing."""
    if not patch.strip():
        return
    apply = GitApply(
        options=("--whitespace=nowarn", *(["--check"] if check_only else [])), no_repository=True
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **apply.env,
        "HOME": str(tree),
        "GIT_CEILING_DIRECTORIES": str(tree.parent),
    }
    proc = subprocess.run(
        ["git", *apply.args()], cwd=tree, input=patch.encode(), capture_output=True, env=env,
        check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SandboxError(
            "the patch does not apply: " + proc.stderr.decode(errors="replace").strip()[:500]
        )
