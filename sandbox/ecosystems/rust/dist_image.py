"""The sandbox image of a toolchain from the user's rustup dist server (dist.py):
`worker-sandbox:rust-1.77.2-dist-<server>`, built once per (server, channel) on the default
sandbox image, with no network.

The host downloads the components (sha256 checked against the channel manifest) and lays them
out as rustup does: each tarball is rust-installer's (`<pkg>-<ver>-<target>/components` names
its components, `<component>/manifest.in` lists `file:PATH` and `dir:PATH` under
`<component>/`), and each listed path goes to the same path under /usr/local, so `rustc` and
`cargo` are on PATH and rustc finds its standard library beside itself (`lib/rustlib`). The
build copies that tree in and checks `rustc --version` is the manifest's release: no network,
no rustup in the image (its `cargo` would be rustup's proxy, which reads the repository's own
rust-toolchain file on every call and tries to install what it names). The image's environment
is the Debian images' (image.py). Its recipe names each component's sha256, so a moving channel
(`stable`, `1.77`) that the server moves gets a new image.
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

import docker

from sandbox.container.toolchain_image import Fetched, ensure_toolchain_image
from sandbox.container.writable import LABEL_WRITABLE
from sandbox.ecosystems.rust.dist import DistToolchain, DistUnavailable, Progress, download
from sandbox.ecosystems.rust.image import LABEL_RUST, TARGET_DIR, RustImage, environment
from sandbox.worktree.workspace import SANDBOX_UID

PREFIX = "/usr/local"
LABEL_DIST = "worker.rust.dist"  # the server's host and the channel, never its whole URL


def dockerfile(toolchain: DistToolchain) -> str:
    sums = "".join(f"\n#   {c.filename} {c.sha256}" for c in toolchain.components)
    return f"""\
# Rust {toolchain.release} {toolchain.said}, channel {toolchain.channel}, for {toolchain.target}
# (sandbox/ecosystems/rust/dist_image.py): components checked on the host, no network here.{sums}
ARG BASE=worker-sandbox:latest
FROM ${{BASE}}
ARG UID={SANDBOX_UID}
USER root
COPY rust/ {PREFIX}/
RUN set -e; rustc --version; cargo --version; \\
    rustc --version | grep -qF 'rustc {toolchain.release} '; \\
{environment()}"""


def ensure_dist_image(
    client: docker.DockerClient,
    toolchain: DistToolchain,
    *,
    progress: Progress,
    name: str | None = None,
    cache: Path | None = None,
) -> RustImage:
    """Make sure the image of `toolchain` exists and is current, building it (no network) from
    the server's tarballs. Workers on one host build it one at a time."""
    recipe = dockerfile(toolchain)
    name = name or toolchain.image

    def fits(labels: Mapping[str, str]) -> bool:
        return labels.get(LABEL_RUST) == toolchain.release

    def fetch() -> Fetched:
        tarballs = [download(c, progress=progress, cache=cache) for c in toolchain.components]
        labels = {
            LABEL_RUST: toolchain.release,
            LABEL_DIST: f"{toolchain.server.host} {toolchain.channel}",
            LABEL_WRITABLE: json.dumps([TARGET_DIR]),
        }
        return labels, lambda out: write_context(out, recipe, tarballs)

    labels, built_s = ensure_toolchain_image(
        client, name=name, version=f"{toolchain.server.key} {toolchain.channel}",
        dockerfile=recipe, fits=fits, fetch=fetch, progress=progress,
    )  # fmt: skip
    if built_s is not None:
        progress(f"built {name} (Rust {toolchain.release}) in {built_s:.0f} s")
    return RustImage(name=name, rust=labels.get(LABEL_RUST, ""), built_s=built_s)


def write_context(out: IO[bytes], recipe: str, tarballs: list[Path]) -> None:
    """The build context: the Dockerfile, and each tarball's components under `rust/`."""
    with tarfile.open(fileobj=out, mode="w") as context:
        data = recipe.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(data), 0o644
        context.addfile(info, io.BytesIO(data))
        for path in tarballs:
            with tarfile.open(path, mode="r:*") as tarball:
                for member, rel in installed(tarball, name=path.name):
                    _add(context, tarball, member, rel)


def installed(tarball: tarfile.TarFile, *, name: str) -> Iterator[tuple[tarfile.TarInfo, str]]:
    """Each member rust-installer's manifests install, with its path under the prefix."""
    members = tarball.getmembers()
    tops = {m.name.split("/", 1)[0] for m in members}
    if len(tops) != 1:
        raise DistUnavailable(f"{name} is not a rust-installer tarball (one top folder)")
    top = tops.pop()
    listed = _read(tarball, f"{top}/components", name=name).split()
    wanted: dict[str, str] = {}  # a member's path in the tarball -> its path under the prefix
    folders: dict[str, str] = {}
    for component in listed:
        _check(component, name)
        for line in _read(tarball, f"{top}/{component}/manifest.in", name=name).splitlines():
            kind, _, rel = line.strip().partition(":")
            if not line.strip():
                continue
            _check(rel, name)
            if kind == "file":
                wanted[f"{top}/{component}/{rel}"] = rel
            elif kind == "dir":
                folders[f"{top}/{component}/{rel}/"] = rel
            else:
                raise DistUnavailable(f"{name}: {component}'s manifest.in has {line.strip()!r}")
    for member in members:
        if member.name in wanted:
            yield member, wanted[member.name]
            continue
        for folder, rel in folders.items():
            if member.name.startswith(folder):
                yield member, f"{rel}/{member.name[len(folder) :]}"
                break


def _check(rel: str, name: str) -> None:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or ".." in parts or posixpath.normpath(rel) != rel:
        raise DistUnavailable(f"{name} installs outside its prefix ({rel!r})")


def _read(tarball: tarfile.TarFile, member: str, *, name: str) -> str:
    try:
        handle = tarball.extractfile(member)
    except KeyError:
        handle = None
    if handle is None:
        raise DistUnavailable(f"{name} is not a rust-installer tarball (no {member})")
    return handle.read().decode("utf-8", "replace")


def _add(
    context: tarfile.TarFile, tarball: tarfile.TarFile, member: tarfile.TarInfo, rel: str
) -> None:
    info = tarfile.TarInfo(f"rust/{rel}")
    info.mtime = member.mtime
    if member.isdir():
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        context.addfile(info)
    elif member.issym():
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, member.linkname, 0o777
        context.addfile(info)
    elif member.isfile():
        info.size, info.mode = member.size, 0o755 if member.mode & 0o111 else 0o644
        context.addfile(info, tarball.extractfile(member))
    # hard links, devices, fifos: nothing rustup installs
