"""Folders an install writes inside the tree that belong to the environment: `node_modules`.

npm, Yarn and pnpm install into the project's own folder, which in the set-up container is a
bind mount of a throwaway copy: `docker commit` would keep none of it. So once the set-up
command has succeeded, each such folder is moved onto the container's own disk, under
`DEPS_TREE/<its path in the tree>`, by a small script run in the container
(sandbox/setup/move_dirs.py), and is committed with the image. Every later copy of the tree
gets a link in its place (`node_modules -> /opt/worker-deps/tree/node_modules`, laid by
sandbox/setup/tree.py with the files set-up wrote), which resolves inside any sandbox started
from that image. Node's module resolution, npm's `.bin` on PATH, jest's and vitest's
resolvers follow the link like a folder. The link is part of each copy's snapshot, so no diff
and no patch ever holds it; the folders themselves are never in the host's copies at all.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import tarfile
from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import docker
import docker.errors

from sandbox.container.base import Sandbox
from sandbox.errors import SandboxError
from sandbox.setup.installer import DEPS_DIR
from sandbox.worktree.overlay import DEPS_TREE

assert DEPS_TREE == f"{DEPS_DIR}/tree"  # one place says where moved folders live

#: The image label listing the moved folders (a JSON list of paths in the tree).
LINKS_LABEL = "worker.tree_links"
MAX_DEPTH = 6  # packages/*/node_modules is 3 deep; deeper ones are a package's own tooling
MAX_DIRS = 200
_SKIPPED = frozenset({".git", ".hg", ".svn"})


def make_deps_dir(client: docker.DockerClient, container_id: str, *, uid: int) -> None:
    """Make DEPS_DIR in the set-up container, owned by `uid`, the sandbox user's (set-up runs
    as that user, and /opt is root's)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as tar:
        for folder in (DEPS_DIR, f"{DEPS_DIR}/bin"):
            info = tarfile.TarInfo(folder.strip("/"))
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            info.uid = info.gid = uid
            tar.addfile(info)
    try:
        client.api.put_archive(container_id, "/", data.getvalue())
    except docker.errors.APIError as exc:
        raise SandboxError(f"set-up: cannot make {DEPS_DIR}: {exc.explanation or exc}") from exc


def find_tree_dirs(root: Path, wanted: tuple[str, ...]) -> list[str]:
    """The folders of `wanted` under `root` (relative paths): a bare name at any depth up to
    MAX_DEPTH (the outermost only: nothing inside one is looked at), a path at the root."""
    names = {w for w in wanted if "/" not in w}
    found = [w for w in wanted if "/" in w and _plain_dir(root, w)]
    for top, dirs, _files in os.walk(root):
        rel_top = os.path.relpath(top, root)
        depth = 0 if rel_top == "." else rel_top.count(os.sep) + 1
        keep = []
        for d in sorted(dirs):
            rel = d if rel_top == "." else f"{rel_top}/{d}".replace(os.sep, "/")
            if d in _SKIPPED or os.path.islink(os.path.join(top, d)) or rel in found:
                continue
            if d in names:
                found.append(rel)
            elif depth + 1 < MAX_DEPTH:
                keep.append(d)
        dirs[:] = keep
        if len(found) >= MAX_DIRS:
            break
    return sorted(found)[:MAX_DIRS]


def move_tree_dirs(
    box: Sandbox, rels: list[str], *, scratch: tuple[str, ...] = (), timeout_s: float
) -> tuple[str, ...]:
    """Move `rels` out of the container's tree into DEPS_TREE (see the module docstring),
    each with links to /tmp for the folders of `scratch` inside it (`node_modules/.vite-temp`:
    where test tools write under the tests' read-only root); the paths moved. Raises
    SandboxError when the move fails (the set-up would be incomplete)."""
    if not rels:
        return ()
    script = resources.files("sandbox.setup").joinpath("move_dirs.py").read_bytes()
    path = box.stage("move_dirs.py", script)
    quoted = " ".join(_quote(r) for r in (json.dumps(list(scratch)), *rels))
    ran = box.run(f"python3 -S {path} /workspace {DEPS_TREE} {quoted}", timeout_s=timeout_s)
    lines = ran.output.strip().splitlines()
    try:
        moved = json.loads(lines[-1]) if ran.ok and lines else None
    except ValueError:
        moved = None
    if not isinstance(moved, list):
        tail = " ".join(ran.output.split())[-300:]
        raise SandboxError(f"set-up: cannot move {', '.join(rels[:3])} into the image: {tail}")
    return link_paths(moved)


def link_paths(rels: Iterable[object]) -> tuple[str, ...]:
    """The entries of `rels` that are plain relative paths inside a tree (a label's values are
    read back from an image: checked, not trusted)."""
    kept = []
    for rel in rels:
        if not isinstance(rel, str) or not rel or rel.startswith("/") or "\\" in rel:
            continue
        norm = posixpath.normpath(rel)
        if norm == rel and norm != "." and not norm.startswith("../") and norm != "..":
            kept.append(rel)
    return tuple(kept)


def _plain_dir(root: Path, rel: str) -> bool:
    path = root
    for part in rel.split("/"):
        path = path / part
        if path.is_symlink():
            return False
    return path.is_dir()


def _quote(rel: str) -> str:
    return "'" + rel.replace("'", "'\\''") + "'"
