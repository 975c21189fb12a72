"""A real sparse cargo registry for tests: plain files (config.json, one index file per crate,
the .crate archives) packaged here from sources the test names, served by Python's http.server
from a hardened container on Docker's default bridge (the network set-up's proxy goes out by).
Cargo reads it as it reads crates.io's own sparse index; no request leaves the host.

    with cargo_mirror(client, image=rust_image, crates={"tinybits": LIB_RS}, root=tmp) as mirror:
        mirror.url  # "sparse+http://172.17.0.5:8000/<random>/"
        mirror.requested()  # the paths cargo asked for
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker

from tests.pkg_index import PORT, serve_folder


@dataclass(frozen=True)
class CargoMirror:
    """A served sparse registry."""

    url: str
    container: Any

    def requested(self) -> str:
        """The server's access log: each path asked for."""
        return bytes(self.container.logs()).decode(errors="replace")


def package_crate(name: str, version: str, lib_rs: str) -> bytes:
    """A .crate as `cargo package` makes one: a gzipped tar of `name-version/`."""
    manifest = f'[package]\nname = "{name}"\nversion = "{version}"\nedition = "2021"\n'
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for rel, text in (("Cargo.toml", manifest), ("src/lib.rs", lib_rs)):
            data = text.encode()
            info = tarfile.TarInfo(f"{name}-{version}/{rel}")
            info.size, info.mode, info.mtime = len(data), 0o644, 1
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


def index_path(name: str) -> str:
    """Where a crate's index file lies in a sparse (or git) index."""
    if len(name) <= 2:
        return f"{len(name)}/{name}"
    if len(name) == 3:
        return f"3/{name[0]}/{name}"
    return f"{name[:2]}/{name[2:4]}/{name}"


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.chmod(path, 0o644)


@contextlib.contextmanager
def cargo_mirror(
    client: docker.DockerClient, *, image: str, crates: dict[str, str], root: Path
) -> Iterator[CargoMirror]:
    """Serve `crates` (name: its src/lib.rs, each version 0.1.0) as a sparse registry; yields
    it, its URL as cargo's configuration names it. Removed on exit."""
    prefix = uuid.uuid4().hex[:12]
    served = root / prefix
    served.mkdir(parents=True)
    with serve_folder(client, image=image, network="bridge", root=root) as box:
        box.container.reload()  # the default bridge has no names: its address
        ip = box.container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
        base = f"http://{ip}:{PORT}/{prefix}"
        config = {"dl": f"{base}/crates/{{crate}}-{{version}}.crate", "api": None}
        _write(served / "config.json", json.dumps(config).encode())
        for name, lib_rs in crates.items():
            archive = package_crate(name, "0.1.0", lib_rs)
            _write(served / "crates" / f"{name}-0.1.0.crate", archive)
            entry = {"name": name, "vers": "0.1.0", "deps": [], "features": {},
                     "cksum": hashlib.sha256(archive).hexdigest(), "yanked": False}  # fmt: skip
            _write(served / index_path(name), json.dumps(entry).encode() + b"\n")
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            os.chmod(folder, 0o755)
        yield CargoMirror(url=f"sparse+{base}/", container=box.container)
