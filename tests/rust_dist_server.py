"""A rustup distribution server for tests: the files static.rust-lang.org serves, made here and
served by Python's http.server on loopback (the host reads a dist server; the image build has
no network). Per release, `dist/channel-rust-<release>.toml` (manifest v2: rustc, cargo and
rust-std for the host's target, each tarball's URL and sha256, the `minimal` profile) and
tarballs in rust-installer's format (`<pkg>-<release>-<target>/components`,
`rust-installer-version`, `<component>/manifest.in`, the files). The components are tiny:
`bin/rustc` and `bin/cargo` are scripts that print the release as the real ones do.

    with dist_server(tmp_path, releases={"1.77.2": "2024-04-09"}) as server:
        server.url  # "http://127.0.0.1:40123"
        server.requested  # the paths asked for
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import io
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.ecosystems.rust.dist import host_target
from tests.loopback import serving

UPSTREAM = "https://static.rust-lang.org"


def _tarball(pkg: str, release: str, target: str, files: dict[str, tuple[str, int]]) -> bytes:
    """rust-installer's tarball of one component `pkg` holding `files` (path: text, mode); a
    folder of them listed as `dir:` where the path has three parts or more (as rust-std's
    `lib/rustlib/<target>` is), else `file:`."""
    top = f"{pkg}-{release}-{target}"
    component = pkg if pkg != "rust-std" else f"rust-std-{target}"
    listed = []
    for path in files:
        parts = path.split("/")
        entry = f"dir:{'/'.join(parts[:3])}" if len(parts) > 3 else f"file:{path}"
        listed.append(entry)
    meta = {
        "components": f"{component}\n",
        "rust-installer-version": "3\n",
        f"{component}/manifest.in": "\n".join(dict.fromkeys(listed)) + "\n",
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:xz") as tar:
        entries = [*((k, (v, 0o644)) for k, v in meta.items()),
                   *((f"{component}/{k}", v) for k, v in files.items())]  # fmt: skip
        for rel, (text, mode) in entries:
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def write_release(root: Path, release: str, date: str, *, target: str | None = None) -> None:
    """One release's manifest and tarballs under `root`, with upstream's URLs (a mirror of
    static.rust-lang.org serves them unchanged; rustup reads them as the mirror's)."""
    target = target or host_target()
    rustc_says = f"rustc {release} (0123456789 {date})"
    components = {
        "rustc": {"bin/rustc": (f"#!/bin/sh\necho '{rustc_says}'\n", 0o755)},
        "cargo": {
            "bin/cargo": (f"#!/bin/sh\necho 'cargo {release} (abcdef0123 {date})'\n", 0o755)
        },  # fmt: skip
        "rust-std": {f"lib/rustlib/{target}/lib/libstd-0123.rlib": ("not a real rlib\n", 0o644)},
    }
    lines = ['manifest-version = "2"', f'date = "{date}"']
    for pkg, files in components.items():
        name = f"{pkg}-{release}-{target}.tar.xz"
        data = _tarball(pkg, release, target, files)
        (root / "dist" / date).mkdir(parents=True, exist_ok=True)
        (root / "dist" / date / name).write_bytes(data)
        lines += [f"[pkg.{pkg}]", f'version = "{release} (0123456789 {date})"',
                  f"[pkg.{pkg}.target.{target}]", "available = true",
                  f'xz_url = "{UPSTREAM}/dist/{date}/{name}"',
                  f'xz_hash = "{hashlib.sha256(data).hexdigest()}"']  # fmt: skip
    lines += ["[profiles]", 'minimal = ["rustc", "cargo", "rust-std"]']
    (root / "dist" / f"channel-rust-{release}.toml").write_text("\n".join(lines) + "\n")


@dataclass
class DistServer:
    """A served dist folder."""

    url: str
    root: Path
    requested: list[str] = field(default_factory=list)


@contextlib.contextmanager
def dist_server(root: Path, *, releases: dict[str, str]) -> Iterator[DistServer]:
    """`releases` (release: date) written under `root` and served on loopback until exit."""
    for release, date in releases.items():
        write_release(root, release, date)
    served = DistServer(url="", root=root)

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self) -> None:
            served.requested.append(self.path)
            super().do_GET()

        def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
            pass

    with serving(Handler) as served.url:
        yield served
