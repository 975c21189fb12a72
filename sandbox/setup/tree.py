"""What set-up writes into the tree, kept with the environment and laid over every new copy.

A build may write files inside the repository: setuptools-scm's `_version.py` beside the package,
the compiled extensions of an editable install. They are written into the set-up container's copy
of the tree, a bind mount that `docker commit` does not keep, so the agent's sandbox would start
without them ("the project is not installed", which is false). They belong to the environment,
never to the model's patch: they are copied into the committed set-up image (`IMAGE_DIR`, so the
image alone is enough), kept on the host beside the worker's other caches, and laid over each new
working copy before its snapshot is taken: the copy's diff, and so `fix.patch`, never holds them.

Only regular files set-up added, outside tooling folders (`__pycache__`, `*.egg-info`, a
top-level `build/` or `dist/`...), and at most `MAX_FILES` files and `MAX_BYTES` in all: more is
said in a note, not kept. A file of the tree that set-up rewrote is not kept: the repository's
build code is hostile input, and what it does to the project's own files (its tests, say) must
not reach every copy, the clean one that decides the verdict included.

Beside the files, links: a folder set-up wrote that belongs to the environment (`node_modules`)
lives in the image (sandbox/setup/tree_dirs.py), and each copy gets a link to it in its place.
The host folder holds those links as links; the image lists them in a label.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from sandbox.container.create import ContainerSpec, create_container
from sandbox.errors import SandboxError
from sandbox.setup.tree_dirs import LINKS_LABEL, link_paths
from sandbox.worktree.overlay import link_target

IMAGE_DIR = "/opt/worker-setup-tree"
MAX_FILES = 2_000
MAX_BYTES = 256 * 1024 * 1024
SKIPPED_DIRS = frozenset(
    {
        ".git",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".eggs",
        ".tox",
        ".nox",
        ".venv",
        "venv",
        "node_modules",
        ".cache",
    }
)
TOP_LEVEL_SKIPPED = frozenset({"build", "dist"})

Manifest = dict[str, tuple[int, int]]  # relative path -> (size, mtime in ns)


@dataclass(frozen=True, kw_only=True)
class TreeFiles:
    """The files set-up added to the tree (relative paths), and what was left out."""

    files: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    total_bytes: int = 0


def manifest(root: Path) -> Manifest:
    """Every regular file under `root` (outside tooling folders) with its size and time."""
    found: Manifest = {}
    for top, dirs, names in os.walk(root):
        rel_top = os.path.relpath(top, root)
        dirs[:] = [
            d
            for d in dirs
            if d not in SKIPPED_DIRS
            and not d.endswith(".egg-info")
            and not (rel_top == "." and d in TOP_LEVEL_SKIPPED)
            and not os.path.islink(os.path.join(top, d))
        ]
        for name in names:
            if name == ".git":  # a gitfile (a link to a repository elsewhere): not the project's
                continue
            path = os.path.join(top, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if os.path.isfile(path) and not os.path.islink(path):
                found[os.path.normpath(os.path.join(rel_top, name))] = (st.st_size, st.st_mtime_ns)
    return found


def added_files(before: Manifest, after: Manifest) -> TreeFiles:
    """The files of `after` that are not in `before`, within the caps.

    >>> added_files({"a.py": (1, 1)}, {"a.py": (9, 9), "pkg/_version.py": (20, 5)}).files
    ('pkg/_version.py',)
    """
    kept: list[str] = []
    left_out: list[str] = []
    total = 0
    for rel in sorted(after):
        if rel in before:
            continue
        size = after[rel][0]
        if len(kept) >= MAX_FILES or total + size > MAX_BYTES or rel.endswith(".pyc"):
            left_out.append(rel)
            continue
        kept.append(rel)
        total += size
    return TreeFiles(files=tuple(kept), left_out=tuple(left_out), total_bytes=total)


def store(
    client: docker.DockerClient,
    container_id: str,
    tree: Path,
    found: TreeFiles,
    host_dir: Path,
    *,
    links: tuple[str, ...] = (),
) -> None:
    """Copy `found` from `tree` into the container (at IMAGE_DIR, to be committed with it) and
    into `host_dir` (replaced whole; empty when set-up wrote nothing), with a link at each of
    `links` to the folder moved into the image (the image's label lists them)."""

    def fill(dest: Path) -> None:
        _copy(tree, found.files, dest)
        _links(links, dest)

    if not found.files:
        _replace_dir(host_dir, fill)
        return
    with tempfile.TemporaryFile() as tar_file:
        with tarfile.open(fileobj=tar_file, mode="w") as tar:
            root = tarfile.TarInfo(IMAGE_DIR.strip("/"))
            root.type, root.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(root)
            for rel in found.files:
                info = tar.gettarinfo(str(tree / rel), arcname=f"{IMAGE_DIR.strip('/')}/{rel}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                with open(tree / rel, "rb") as data:
                    tar.addfile(info, data)
        tar_file.seek(0)
        try:
            client.api.put_archive(container_id, "/", tar_file.read())
        except docker.errors.APIError as exc:
            raise SandboxError(f"cannot keep the files set-up wrote: {exc.explanation}") from exc
    _replace_dir(host_dir, fill)


def ensure_on_host(client: docker.DockerClient, image: str, host_dir: Path) -> Path | None:
    """The host copy of the files `image` keeps at IMAGE_DIR (and of the links its label
    lists), made from the image when this machine has none yet; None when it keeps none."""
    if host_dir.is_dir():
        return host_dir if any(host_dir.iterdir()) else None
    labels = client.images.get(image).attrs.get("Config", {}).get("Labels") or {}
    try:
        links = link_paths(json.loads(labels.get(LINKS_LABEL, "[]")))
    except ValueError:
        links = ()
    # Never started, so nothing to harden: a handle on the image's files.
    spec = ContainerSpec(image=image, command=["true"], hardening=None, network=None)
    container = create_container(client, spec)
    try:
        try:
            stream, _ = container.get_archive(IMAGE_DIR)
            data: io.BytesIO | None = io.BytesIO(b"".join(stream))
        except docker.errors.NotFound:
            data = None  # none: an empty folder says so, and the image is not asked again
    finally:
        container.remove(force=True)

    def unpack(dest: Path) -> None:
        _links(links, dest)
        if data is None:
            return
        with tarfile.open(fileobj=data) as tar:
            prefix = Path(IMAGE_DIR).name + "/"
            for member in tar.getmembers():
                if not member.name.startswith(prefix) or not (member.isfile() or member.isdir()):
                    continue
                member.name = member.name[len(prefix) :]
                tar.extract(member, dest, filter="data")

    _replace_dir(host_dir, unpack)
    return host_dir if any(host_dir.iterdir()) else None


def _links(rels: tuple[str, ...], dest: Path) -> None:
    for rel in rels:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link_target(rel), dest / rel)


def _copy(tree: Path, files: tuple[str, ...], dest: Path) -> None:
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(tree / rel, dest / rel)


def _replace_dir(host_dir: Path, fill: Callable[[Path], None]) -> None:
    """Fill a new folder beside `host_dir` and rename it into place: a reader sees all or none."""
    host_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=host_dir.name + ".", dir=host_dir.parent))
    try:
        fill(staging)
        shutil.rmtree(host_dir, ignore_errors=True)
        staging.rename(host_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
