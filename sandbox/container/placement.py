"""Where the working copy lives for the container: mounted from this machine, or copied in.

"mounted": the copy is a host folder bind-mounted at /workspace (and the control folder at
/run/worker). Fast, and what a local daemon allows. "copied": the daemon cannot see this
machine's files (GitLab's `docker:dind` service, a job container with the host's socket, a
`DOCKER_HOST` on another machine); the container gets volumes of its own and the files are sent
in as tar archives through the Docker API, which works against a daemon anywhere.

The host copy stays the one the tools read and write in both placements: the model's edits, the
diff, the fixture guard and the clean re-check work on it as before, and code run in the
container can never touch it. In "copied", what changed on the host is sent before each command
(sandbox/container/docker_sandbox.py), and the fixtures are sent again each time, which puts back
whatever a test did to them.

The choice ("auto" by default) is made once per daemon and process: a bind mount whose source the
daemon does not have fails when the container is created ("bind source path does not exist"), and
a copy by the daemon of a folder of the same name is caught when the container's first process
cannot open the file the worker wrote there (`NOT_SHARED`).
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
import tempfile
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

import docker
import docker.errors

from policies.isolation import PLACEMENTS
from policies.isolation import Placement as Asked
from sandbox.errors import SandboxError

Placement = Literal["mounted", "copied"]
#: Set to "mounted" or "copied" to skip the probe (the configuration's `sandbox.placement`).
PLACEMENT_ENV = "WORKER_SANDBOX_PLACEMENT"
#: Owner of the control folder's files in a copied container: nobody, so that no process in the
#: container (root without capabilities included) can change the runner or a staged file.
CONTROL_UID = 65534
NOT_SHARED = (
    "the Docker daemon does not see this machine's files ({detail}): the sandbox copies the "
    "working tree into the container instead; set sandbox.placement: copied to skip this check"
)

_known: dict[str, Placement] = {}
_configured: list[Asked] = ["auto"]
_lock = threading.Lock()


def configure(asked: Asked) -> None:
    """The configuration's `sandbox.placement`, for every sandbox this process starts."""
    _configured[0] = asked


def asked_placement(given: str = "auto") -> Asked:
    """What the user asked for: the environment variable, else `given` (a caller's own), else
    the configuration's, else auto."""
    asked = os.environ.get(PLACEMENT_ENV) or (given if given != "auto" else _configured[0])
    for known_one in PLACEMENTS:
        if asked == known_one:
            return known_one
    raise SandboxError(
        f"{PLACEMENT_ENV}={asked!r}: the placement is one of {', '.join(PLACEMENTS)}"
    )


def _daemon_key(client: docker.DockerClient) -> str:
    return str(getattr(client.api, "base_url", "")) or "default"


def known(client: docker.DockerClient) -> Placement | None:
    """What this process found for `client`'s daemon, if it has started a sandbox on it."""
    with _lock:
        return _known.get(_daemon_key(client))


def remember(client: docker.DockerClient, placement: Placement) -> None:
    with _lock:
        _known[_daemon_key(client)] = placement


def bind_refused(exc: docker.errors.APIError) -> bool:
    """Whether creating a container failed because the daemon has no such host folder."""
    text = str(exc.explanation or exc)
    return "bind source path does not exist" in text or "invalid mount config" in text


@dataclass(frozen=True)
class Entry:
    """One path of the host copy as last sent: enough to see that it changed."""

    mtime_ns: int
    size: int
    mode: int
    uid: int


def scan(root: Path) -> dict[str, Entry]:
    """Every file, link and folder under `root` (relative paths; links not followed)."""
    found: dict[str, Entry] = {}
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            items = list(os.scandir(root / rel_dir if rel_dir else root))
        except OSError:
            continue
        for item in items:
            rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
            try:
                st = item.stat(follow_symlinks=False)
            except OSError:
                continue
            found[rel] = Entry(st.st_mtime_ns, st.st_size, st.st_mode, st.st_uid)
            if stat.S_ISDIR(st.st_mode):
                stack.append(rel)
    return found


def entries(root: Path, rels: Iterable[str]) -> dict[str, Entry | None]:
    """What `scan` would say of each of `rels` (None: not there, or under a link, where `scan`
    does not go), without walking the tree."""
    found: dict[str, Entry | None] = {}
    for rel in sorted(rels, key=lambda r: r.count("/")):  # a folder before what is in it
        parent = rel.rpartition("/")[0]
        above = found.get(parent) if parent in found else _lstat(root / parent) if parent else None
        if parent and (above is None or not stat.S_ISDIR(above.mode)):
            found[rel] = None
        else:
            found[rel] = _lstat(root / rel)
    return found


def _lstat(path: Path) -> Entry | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return Entry(st.st_mtime_ns, st.st_size, st.st_mode, st.st_uid)


def changes(before: dict[str, Entry], now: dict[str, Entry]) -> tuple[list[str], list[str]]:
    """(sent again, removed): paths new or changed since `before`, and paths gone since."""
    changed = [rel for rel, entry in now.items() if before.get(rel) != entry]
    removed = [rel for rel in before if rel not in now]
    return sorted(changed), _tops(removed)


def _tops(paths: Iterable[str]) -> list[str]:
    """Only the topmost of nested paths: removing a folder removes what is in it."""
    kept: list[str] = []
    for rel in sorted(paths):
        if not kept or not rel.startswith(kept[-1] + "/"):
            kept.append(rel)
    return kept


def tar_of(root: Path, rels: Iterable[str], *, owner: int, root_entry: bool = False) -> IO[bytes]:
    """A tar (in a temporary file, rewound) of `rels` under `root`, as the container must have
    them: the modes of the host copy, root-owned where the host copy has them root-owned (the
    locked tests), else owned by `owner`; links as links; parent folders before their files."""
    out = tempfile.TemporaryFile()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        if root_entry:
            tar.addfile(_info(tar, root, ".", owner))
        for rel in _with_parents(rels):
            path = root / rel
            try:
                info = _info(tar, path, rel, owner)
            except OSError:
                continue  # gone since the scan: the next sync removes it
            if info.isreg():
                with open(path, "rb") as data:
                    tar.addfile(info, data)
            else:
                tar.addfile(info)
    out.seek(0)
    return out


def _info(tar: tarfile.TarFile, path: Path, rel: str, owner: int) -> tarfile.TarInfo:
    info = tar.gettarinfo(str(path), arcname=rel)
    info.uid = info.gid = 0 if os.geteuid() == 0 and info.uid == 0 else owner
    info.uname = info.gname = ""
    return info


def _with_parents(rels: Iterable[str]) -> Iterator[str]:
    seen: set[str] = set()
    for rel in sorted(rels):
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if prefix not in seen:
                seen.add(prefix)
                yield prefix


def control_tar(files: dict[str, bytes], programs: Iterable[str] = ()) -> IO[bytes]:
    """The control folder's files, owned by nobody and read-only, for a copied container; the
    `programs` among them may run (the git wrapper, checkout_repo.py)."""
    runnable = set(programs)
    out = tempfile.TemporaryFile()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o555 if name in runnable else 0o444
            info.uid = info.gid = CONTROL_UID
            tar.addfile(info, io.BytesIO(data))
    out.seek(0)
    return out


def pull(client: docker.DockerClient, container_id: str, path: str, dest: Path) -> None:
    """Copy the folder `path` of the container into `dest` (its contents, not the folder):
    nothing that would land outside `dest`, no device and no `.git` (the container's own
    repository, sandbox/container/checkout_repo.py) is extracted (tarfile's data filter);
    ownership is this process's."""
    try:
        stream, _ = client.api.get_archive(container_id, path)
    except docker.errors.APIError as exc:
        raise SandboxError(f"cannot copy {path} out of the sandbox: {exc.explanation}") from exc
    top = path.rstrip("/").rsplit("/", 1)[-1]
    with tempfile.TemporaryFile() as raw:
        for chunk in stream:
            raw.write(chunk)
        raw.seek(0)
        with tarfile.open(fileobj=raw, mode="r|") as tar:
            for member in tar:
                if member.name == top or not member.name.startswith(top + "/"):
                    continue
                member.name = member.name[len(top) + 1 :]
                if ".git" in member.name.split("/"):
                    continue
                try:
                    kept = tarfile.data_filter(member, str(dest))
                except tarfile.FilterError:
                    continue
                if kept is not None:
                    tar.extract(kept, str(dest), set_attrs=not kept.isdir(), filter="fully_trusted")


def pull_paths(
    client: docker.DockerClient, container_id: str, root: str, rels: Iterable[str], dest: Path
) -> None:
    """Make each of `rels` in the host copy `dest` what it is in the container's copy at `root`:
    its bytes, mode and kind (a link stays a link, if it stays inside), or gone where the
    container has no such path."""
    for rel in dict.fromkeys(rels):
        host = dest / rel
        try:
            stream, _ = client.api.get_archive(container_id, f"{root}/{rel}")
        except docker.errors.NotFound:
            if host.is_symlink() or host.is_file():
                host.unlink()
            continue
        except docker.errors.APIError as exc:
            raise SandboxError(f"cannot copy {rel} out of the sandbox: {exc.explanation}") from exc
        with tempfile.TemporaryFile() as raw:
            for chunk in stream:
                raw.write(chunk)
            raw.seek(0)
            with tarfile.open(fileobj=raw, mode="r|") as tar:
                member = next(iter(tar), None)
                if member is None or not (member.isreg() or member.issym()):
                    continue  # a folder or a device where a file was patched: left as it is
                host.parent.mkdir(parents=True, exist_ok=True)
                member.name = host.name
                try:
                    kept = tarfile.data_filter(member, str(host.parent))
                except tarfile.FilterError:
                    continue  # a link that leads out: never part of the host copy
                if host.is_symlink() or host.is_file():
                    host.unlink()
                tar.extract(kept, str(host.parent), filter="fully_trusted")
