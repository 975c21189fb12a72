"""A copy of the user's working tree for one run, and the diff of what the run changed.

The copy holds the files git would show (tracked, with uncommitted edits, plus untracked files that
are not ignored) and no `.git`: history is where answers leak. Links whose target leaves the tree
are not copied. Changes are tracked by a private "shadow" git directory that lives beside the copy,
outside anything the container can see; the user's repository is only ever read.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from policies.paths import Protection
from sandbox.errors import SandboxError, SandboxUsageError
from sandbox.worktree.capped_dir import image_size, mount_capped, unmount_under
from sandbox.worktree.overlay import lay_over
from sandbox.worktree.scratch import make_scratch_dir
from sandbox.worktree.tree_digest import small_tree_digest
from sandbox.worktree.user_git import last_error_line, user_git

#: Tooling output, not the project: never copied from a tree without git, never listed or
#: searched by the tools.
NOISE_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".eggs",
        ".idea",
        ".vscode",
        ".cache",
    }
)
# Never part of a diff, whatever the tree's own .gitignore says.
SHADOW_EXCLUDES = "__pycache__/\n*.pyc\n.pytest_cache/\n*.egg-info/\n"
SANDBOX_UID = 1000


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """A run's copy of the tree (`path`) and its shadow git directory (`git_dir`)."""

    path: Path
    git_dir: Path
    skipped_links: tuple[str, ...] = field(default=())
    tree_bytes: int = 0  # the copy's size, to size a capped clean copy the same way
    files: int = 0
    capped: bool = False  # `path` is a filesystem of its own, of the copy's size plus the cap

    def git(
        self, *args: str, input_bytes: bytes | None = None, env: dict[str, str] | None = None
    ) -> bytes:
        """Run git on the copy with the shadow directory, ignoring every user and system config."""
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.path),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "HOME": str(self.git_dir),
            "LC_ALL": "C",
            **(env or {}),
        }
        proc = subprocess.run(
            [
                "git",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "user.name=worker",
                "-c",
                "user.email=worker@localhost",
                *args,
            ],
            cwd=self.path,
            env=full_env,
            input=input_bytes,
            capture_output=True,
            check=False,
        )
        if proc.returncode != 0:
            raise SandboxError(
                f"git {args[0]} failed: {proc.stderr.decode(errors='replace')[:400]}"
            )
        return proc.stdout

    def diff(self, include: Callable[[str], bool] = lambda _path: True) -> str:
        """The unified diff (binary-safe) from the snapshot to the copy as it is now.

        Only paths `include` accepts are in it, and never a link that leads out of the tree:
        whatever the sandbox's code wrote elsewhere (tests, say) is not part of the result.
        """
        paths, _ = self.split_changes(include)
        if not paths:
            return ""
        return self.git(
            "diff",
            "--cached",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "snapshot",
            "--",
            *(f":(literal){p}" for p in paths),
        ).decode("utf-8", "replace")

    def changed_files(self) -> list[str]:
        """Paths that differ from the snapshot."""
        self.git("add", "-A", ".")
        out = self.git("diff", "--cached", "--name-only", "--no-renames", "-z", "snapshot")
        # surrogateescape: a name that is not UTF-8 must come back to git as the same bytes.
        return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]

    def split_changes(self, include: Callable[[str], bool]) -> tuple[list[str], list[str]]:
        """Changed paths as (kept, left out): left out are those `include` refuses and links
        whose target lies outside the tree."""
        kept: list[str] = []
        left_out: list[str] = []
        for rel in self.changed_files():
            path = self.path / rel
            escapes = path.is_symlink() and not _link_stays_inside(
                self.path, rel, os.readlink(path)
            )
            (left_out if escapes or not include(rel) else kept).append(rel)
        return kept, left_out

    def content_hash(self) -> str:
        """A hash of everything in the copy now: every file's bytes, executable bit and link
        target, ignored files included (git's tree id, built in an index of its own so that the
        diff's index is not touched). Two equal hashes mean two byte-identical trees. A small
        tree is read here instead (sandbox/worktree/tree_digest.py: no git process)."""
        if (small := small_tree_digest(self.path)) is not None:
            return small
        index = self.git_dir / "content-index"
        env = {"GIT_INDEX_FILE": str(index)}
        self.git("add", "--all", "--force", ".", env=env)
        return self.git("write-tree", env=env).decode().strip()

    def original(self, rel: str) -> bytes:
        """The bytes of `rel` as the snapshot has them."""
        return self.git("cat-file", "blob", f"snapshot:{rel}")

    def export_snapshot(self, dest: Path) -> None:
        """Write the original snapshot (not the edits) into the empty directory `dest`."""
        tar = self.git("archive", "--format=tar", "snapshot")
        subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)


def snapshot(
    repo: Path,
    dest: Path,
    *,
    owner_uid: int | None = SANDBOX_UID,
    exclude: Path | None = None,
    cap_mb: int | None = None,
    on_ready: Callable[[Path], None] | None = None,
    overlay: Path | None = None,
) -> Workspace:
    """Copy the working tree of `repo` into `dest/workspace` and record it as the snapshot.

    `on_ready(folder)` is called once the folder (and its filesystem, when capped) exists and
    before anything is copied into it: a sandbox can start on it while the copy is made.

    Nothing under `dest` or `exclude` is copied (a run's own folder may sit inside the tree).
    With `cap_mb`, the copy is a filesystem of its own holding the tree and `cap_mb` more, where
    this process can mount one (sandbox/worktree/capped_dir.py); `Workspace.capped` says whether it
    is.
    `overlay` is a folder of files set-up wrote into the tree (sandbox/setup/tree.py): laid over
    the copy and made part of its snapshot, even where the tree's .gitignore names them, so no
    diff holds them and a clean copy (`export_snapshot`) has them too."""
    repo = repo.resolve()
    if not repo.is_dir():
        raise SandboxUsageError(f"repository not found: {repo}")
    ours = [p.resolve() for p in (dest, exclude) if p is not None]
    files = [
        rel
        for rel in tree_files(repo)
        if not any((repo / rel).absolute().is_relative_to(p) for p in ours)
    ]
    extra = [p for p in overlay.rglob("*") if p.is_file()] if overlay is not None else []
    tree_bytes = sum(_size(repo / rel) for rel in files) + sum(_size(p) for p in extra)
    count = len(files) + len(extra)
    ws = dest / "workspace"
    ws.mkdir(parents=True)
    capped = cap_mb is not None and mount_capped(
        ws, size_bytes=image_size(tree_bytes=tree_bytes, files=count, cap_mb=cap_mb),
        files=count,
    )  # fmt: skip
    if on_ready is not None:
        on_ready(ws)
    copied: list[str] = []
    skipped: list[str] = []
    for rel in files:
        src = repo / rel
        if src.is_symlink():
            if not _link_stays_inside(repo, rel, os.readlink(src)):
                skipped.append(rel)
                continue
        elif not src.is_file():
            continue  # deleted but still tracked, a submodule, a socket: nothing to copy
        copied.append(rel)
    _copy_files(repo, copied, ws)
    laid = lay_over(overlay, ws) if overlay is not None else []
    workspace = Workspace(
        path=ws,
        git_dir=dest / "shadow.git",
        skipped_links=tuple(skipped),
        tree_bytes=tree_bytes,
        files=count,
        capped=capped,
    )
    workspace.git("init", "-q")
    (workspace.git_dir / "info").mkdir(exist_ok=True)
    (workspace.git_dir / "info" / "exclude").write_text(SHADOW_EXCLUDES)
    # Every file above the big-file threshold is streamed into one pack instead of a loose
    # object file each: measured 1.7 s instead of 8.0 s for 10,000 files. Only for this add:
    # the threshold also makes `git diff` call bigger files binary.
    workspace.git("-c", "core.bigFileThreshold=1", "add", "-A", ".")
    if laid:
        workspace.git("add", "-f", "--", *(f":(literal){rel}" for rel in laid))
    workspace.git("commit", "-q", "--allow-empty", "--no-verify", "-m", "snapshot")
    workspace.git("tag", "snapshot")
    if owner_uid is not None and os.geteuid() == 0:
        chown_tree(ws, owner_uid)
    return workspace


def _copy_files(repo: Path, files: list[str], dest: Path) -> None:
    """Copy `files` (regular files and links, relative to `repo`) into `dest`, keeping modes,
    links as links. One `tar` pipe, not a Python copy per file: as fast as `cp -a`, about
    20% faster than the copy per file (docs/performance.md). Names are read verbatim (a name
    starting with `-` is not an option), hard links become separate files.

    Not the times: every file is as new as the copy, as in CI's fresh clone. A build tool that
    judges by times (cargo's fingerprints, Maven's stale sources, make) must never take what a
    set-up image built, maybe from another state of the tree with the same manifests, for newer
    than the sources: an eval task whose files predate its cached set-up ran the set-up's
    classes, not its own, and "passed" with the planted bug in place."""
    names = b"".join(os.fsencode(rel) + b"\0" for rel in files)
    create = [
        "tar", "-c", "-f", "-", "-C", str(repo), "--no-recursion", "--hard-dereference",
        "--null", "--verbatim-files-from", "-T", "-",
    ]  # fmt: skip
    extract = [
        "tar", "-x", "-f", "-", "-C", str(dest), "--preserve-permissions", "--no-same-owner",
        "--touch",
    ]  # fmt: skip
    # Errors go to files, not pipes: a full stderr pipe could stall one tar and so the other.
    with tempfile.TemporaryFile() as read_err, tempfile.TemporaryFile() as write_err:
        with subprocess.Popen(
            create, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=read_err
        ) as reader:
            assert reader.stdin is not None and reader.stdout is not None
            with subprocess.Popen(extract, stdin=reader.stdout, stderr=write_err) as writer:
                reader.stdout.close()  # the writer holds it now: tar -c stops if tar -x dies
                with contextlib.suppress(BrokenPipeError):
                    reader.stdin.write(names)
                with contextlib.suppress(BrokenPipeError):
                    reader.stdin.close()
        # tar -c exits 1 for a file that changed while it was read: the copy has it as read.
        for proc, err, ok in ((reader, read_err, (0, 1)), (writer, write_err, (0,))):
            if proc.returncode not in ok:
                err.seek(0)
                lines = err.read().decode(errors="replace").strip().splitlines() or ["no message"]
                raise SandboxError(f"cannot copy the files of {repo}: {lines[-1]}")


def make_run_dir(prefix: str = "worker-run-") -> Path:
    """A private scratch directory for one run, marked as this process's
    (sandbox/worktree/scratch.py):
    the caller removes it; if this process dies first, the next worker start does."""
    return make_scratch_dir(prefix)


def tree_files(repo: Path) -> list[str]:
    """The files a run's copy of `repo` is made of: git's tracked and untracked-not-ignored
    files (git run with nothing of the repository's config that runs a program), with the
    tracked files of the submodules the user's checkout has populated (a test suite's data often
    lives in one: the sandbox fetches nothing, so they come from the checkout or not at all), or
    every file outside the noise folders where `repo` is no repository."""
    proc = user_git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if proc.returncode != 0:  # no repository here (asked only then: one git process a listing)
        if user_git(repo, "rev-parse", "--show-toplevel").returncode != 0:
            return _walk(repo)
        raise SandboxError(f"cannot list the files of {repo}: {last_error_line(proc)}")
    found = {p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}
    if (repo / ".gitmodules").is_file():  # a second git process only where there are some
        found |= _submodule_files(repo)
    return sorted(found)


def _submodule_files(repo: Path) -> set[str]:
    """The tracked files of every populated submodule, as paths in `repo` (an unpopulated one
    lists none: its folder is empty in the checkout)."""
    proc = user_git(repo, "ls-files", "-z", "--cached", "--recurse-submodules")
    if proc.returncode != 0:
        return set()
    return {p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p}


def _walk(repo: Path) -> list[str]:
    """Every file outside the noise folders; never a `.git` of any kind (a gitfile pointing
    elsewhere included): the tree is hostile input, and git would not list one either."""
    found: list[str] = []
    for top, dirs, names in os.walk(repo):
        dirs[:] = [d for d in dirs if d not in NOISE_DIRS]
        for name in names + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            if name != ".git":
                found.append(os.path.relpath(os.path.join(top, name), repo))
    return sorted(found)


def _link_stays_inside(repo: Path, rel: str, link: str) -> bool:
    if os.path.isabs(link):
        return False
    resolved = os.path.normpath(os.path.join(os.path.dirname(rel), link))
    return not (resolved == ".." or resolved.startswith("../") or os.path.isabs(resolved))


@dataclass(frozen=True, kw_only=True)
class Protected:
    """What `protect_files` did: files locked on disk, and fixtures left to a `FixtureGuard`."""

    locked: tuple[str, ...] = ()
    fixtures: tuple[str, ...] = ()


def protect_files(root: Path, protection: Callable[[str], Protection | None]) -> Protected:
    """Keep the files the model may not write (tests, CI config) from code run in the sandbox
    as the sandbox user. "locked" ones become root-owned and read-only, and their folders get
    the sticky bit (as /tmp has): new files can still be made there, but a root-owned file
    cannot be deleted or renamed away. "fixture" ones (a test folder's data, which the tests
    themselves may `utime` or `chmod`) stay the sandbox user's: the caller watches them with a
    `FixtureGuard`, as does an executable fixture, which is locked. Needs root."""
    if os.geteuid() != 0:
        return Protected()
    locked: list[str] = []
    fixtures: list[str] = []
    folders = set()
    for top, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, root)
            kind = None if os.path.islink(path) else protection(rel)
            if kind is None:
                continue
            mode = os.stat(path).st_mode
            if kind == "fixture" and not mode & 0o111:
                fixtures.append(rel)
                continue
            os.chown(path, 0, 0)
            os.chmod(path, 0o444 | (mode & 0o111))
            folders.add(top)
            locked.append(rel)
    for folder in folders:
        os.chown(folder, 0, 0)
        os.chmod(folder, 0o1777)
    return Protected(locked=tuple(locked), fixtures=tuple(fixtures))


def chown_tree(root: Path, uid: int) -> None:
    """Give a tree to the sandbox user (links themselves, not their targets)."""
    os.chown(root, uid, uid)
    for top, dirs, names in os.walk(root):
        for name in dirs + names:
            os.chown(os.path.join(top, name), uid, uid, follow_symlinks=False)


def remove_dir(path: Path) -> None:
    """Remove a run directory even where the container left files owned by another user, and
    where a capped copy is mounted inside it."""
    unmount_under(path)
    shutil.rmtree(path, ignore_errors=True)


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0
