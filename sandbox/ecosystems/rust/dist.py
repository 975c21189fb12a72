"""A rustup distribution server the user names (RUSTUP_DIST_SERVER, their mirror of
static.rust-lang.org): its channel manifests read on the host, its component tarballs
downloaded on the host and checked against the manifest's sha256, both cached.

A dist server is static files: `dist/channel-rust-<name>.toml` (manifest v2: per package and
target, the tarball's URL and sha256; a dated channel under `dist/<date>/`) and the tarballs it
names. What the repository asks for reaches the server only as a release (`1.77`, `1.77.2`) or
a channel (`stable`, `beta`, `nightly`, `nightly-2024-05-01`): no other text becomes a path.
A manifest's URLs on static.rust-lang.org are read as the server's (rustup's own rewrite, so a
mirror serving the upstream manifests works); a URL on any other host is refused, so nothing is
fetched from anywhere but the server. A URL with credentials in it is refused (one line, the
credentials never repeated): nothing stores them.

The manifests are cached under worker_home()/rust/dist/: a release's (`1.77.2`, a dated
nightly) for good, a moving channel's (`1.77`, `stable`, `nightly`) for a day, an older copy
when the server does not answer; a tarball by its sha256.
"""

from __future__ import annotations

import hashlib
import platform
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomllib

from sandbox.ecosystems.rust.errors import WrongRust
from sandbox.home import worker_home, write_atomic

VARIABLE = "RUSTUP_DIST_SERVER"
UPSTREAM = "https://static.rust-lang.org"
TIMEOUT_S = 30
MAX_MANIFEST_BYTES = 16_000_000  # channel-rust-stable.toml is about 1 MB
MAX_TARBALL_BYTES = 600_000_000  # rustc 1.77's .tar.gz is about 170 MB
MAX_AGE_S = 24 * 3600
#: rustup's `minimal` profile; rustfmt too where the server has it (tests that check formatting).
REQUIRED = ("rustc", "cargo", "rust-std")
OPTIONAL = (("rustfmt", "rustfmt-preview"),)
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_DATED = re.compile(r"^(stable|beta|nightly)-(\d{4}-\d{2}-\d{2})$")
_NAME = re.compile(r"^(?:stable|beta|nightly|\d+\.\d+(?:\.\d+)?)$")
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")

Version = tuple[int, int, int]
Progress = Callable[[str], None]


class DistUnavailable(WrongRust):
    """The user's dist server cannot give the toolchain (unreachable, a manifest that names
    no tarball for this machine, a URL on another host, a sha256 that differs)."""


@dataclass(frozen=True)
class DistServer:
    """The root the user names, with no trailing slash: `https://mirror.example/rust`."""

    url: str

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.url).netloc

    @property
    def said(self) -> str:
        return f"your {VARIABLE} ({self.host})"

    @property
    def key(self) -> str:
        """Eight hex digits naming the server in image names and the cache."""
        return hashlib.sha256(self.url.encode()).hexdigest()[:8]


def dist_server(environ: Mapping[str, str]) -> DistServer | None:
    """The server RUSTUP_DIST_SERVER names, None when unset; DistUnavailable for one that is
    not an http(s) URL or holds credentials (the message names its host alone)."""
    raw = environ.get(VARIABLE, "").strip()
    if not raw:
        return None
    parts = urllib.parse.urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DistUnavailable(f"your {VARIABLE} is not an http(s) URL: not taken")
    if parts.username is not None or parts.password is not None:
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        raise DistUnavailable(
            f"your {VARIABLE} ({parts.scheme}://...@{host}) holds credentials in its URL: not "
            "taken (nothing here stores them; a mirror that needs them is out of reach)"
        )
    return DistServer(urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"),
                                               "", "")))  # fmt: skip


@dataclass(frozen=True)
class Component:
    """One tarball of a toolchain: the package's name, where it is, its sha256."""

    name: str
    url: str
    sha256: str

    @property
    def filename(self) -> str:
        return urllib.parse.unquote(urllib.parse.urlsplit(self.url).path.rsplit("/", 1)[-1])


@dataclass(frozen=True)
class DistToolchain:
    """A toolchain the user's server has: what it was asked by and what rustc's package says."""

    server: DistServer
    channel: str  # "1.77.2", "1.77", "nightly-2024-05-01"
    version: Version
    full: str  # rustc's package version: "1.77.2 (25ef9e3d8 2024-04-09)"
    target: str
    components: tuple[Component, ...]

    @property
    def said(self) -> str:
        return f"from {self.server.said}"

    @property
    def release(self) -> str:
        """ "1.77.2", or "1.80.0-nightly" (what `rustc --version` starts with after `rustc `)."""
        return self.full.split(" ", 1)[0]

    @property
    def image(self) -> str:
        """One image per (server, channel): `worker-sandbox:rust-1.77.2-dist-1a2b3c4d`."""
        return f"worker-sandbox:rust-{self.channel}-dist-{self.server.key}"


def host_target() -> str:
    """The target triple of this machine's processor (the daemon's, on Linux)."""
    machine = platform.machine().lower()
    return f"{_ARCH.get(machine, machine)}-unknown-linux-gnu"


def manifest_path(channel: str) -> str | None:
    """`dist/channel-rust-1.77.toml` for "1.77"; `dist/2024-05-01/channel-rust-nightly.toml`
    for "nightly-2024-05-01"; None for text that is neither a release nor a channel."""
    dated = _DATED.match(channel)
    if dated:
        return f"dist/{dated[2]}/channel-rust-{dated[1]}.toml"
    if _NAME.match(channel):
        return f"dist/channel-rust-{channel}.toml"
    return None


def _moving(channel: str) -> bool:
    return not (_DATED.match(channel) or re.fullmatch(r"\d+\.\d+\.\d+", channel))


def find_toolchain(
    server: DistServer,
    channel: str,
    *,
    target: str | None = None,
    cache: Path | None = None,
    max_age_s: float = MAX_AGE_S,
) -> DistToolchain | None:
    """The toolchain `channel` on `server` for `target` (this machine's by default); None when
    the server has no manifest for it (or `channel` is not a name a server has);
    DistUnavailable when it cannot be read or does not give what a toolchain needs."""
    path = manifest_path(channel)
    if path is None:
        return None
    target = target or host_target()
    cache = (cache or worker_home() / "rust" / "dist") / server.key
    saved = cache / path
    text = _cached(saved, max_age_s=max_age_s if _moving(channel) else float("inf"))
    if text is None:
        try:
            data = _get(f"{server.url}/{path}", limit=MAX_MANIFEST_BYTES)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            text = _stale(saved, server, exc)
        except OSError as exc:
            text = _stale(saved, server, exc)
        else:
            text = data.decode("utf-8", "replace")
            saved.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(saved, data)
    return parse_manifest(text, server=server, channel=channel, target=target)


def _cached(path: Path, *, max_age_s: float) -> str | None:
    try:
        if time.time() - path.stat().st_mtime < max_age_s:
            return path.read_text(encoding="utf-8")
    except OSError:
        pass
    return None


def _stale(path: Path, server: DistServer, exc: Exception) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        raise DistUnavailable(f"{server.said} did not answer ({exc})") from exc


def parse_manifest(text: str, *, server: DistServer, channel: str, target: str) -> DistToolchain:
    """A manifest v2's toolchain for `target`: rustc's version and the tarballs of REQUIRED
    (each available for `target`) and of OPTIONAL where there; DistUnavailable otherwise."""
    where = f"{server.said}'s {manifest_path(channel)}"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DistUnavailable(f"{where} is not a channel manifest ({exc})") from exc
    packages: dict[str, Any] = data["pkg"] if isinstance(data.get("pkg"), dict) else {}
    full = str((packages.get("rustc") or {}).get("version", ""))
    found = _VERSION.match(full)
    if str(data.get("manifest-version")) != "2" or found is None:
        raise DistUnavailable(f"{where} is not a manifest v2 naming rustc's version")
    components = []
    for name in REQUIRED:
        got = _component(packages.get(name), name=name, target=target, server=server)
        if got is None:
            raise DistUnavailable(f"{where} has no {name} for {target}")
        components.append(got)
    for names in OPTIONAL:
        for name in names:
            if (got := _component(packages.get(name), name=name, target=target,
                                  server=server)) is not None:  # fmt: skip
                components.append(got)
                break
    version = (int(found[1]), int(found[2]), int(found[3]))
    return DistToolchain(server=server, channel=channel, version=version, full=full,
                         target=target, components=tuple(components))  # fmt: skip


def _component(package: Any, *, name: str, target: str, server: DistServer) -> Component | None:
    if not isinstance(package, dict):
        return None
    targets = package.get("target") or {}
    entry = targets.get(target) or targets.get("*")  # rust-src and the like: any target
    if not isinstance(entry, dict) or not entry.get("available"):
        return None
    for url_key, hash_key in (("xz_url", "xz_hash"), ("url", "hash")):
        url, sha = entry.get(url_key), entry.get(hash_key)
        if isinstance(url, str) and isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha):
            return Component(name=name, url=_on_server(url, server), sha256=sha)
    return None


def _on_server(url: str, server: DistServer) -> str:
    """`url` as the server's: upstream's prefix replaced by the server's (as rustup does); a
    URL on another host is refused."""
    if url.startswith(UPSTREAM + "/"):
        url = server.url + url[len(UPSTREAM) :]
    parts = urllib.parse.urlsplit(url)
    if (parts.scheme, parts.netloc) != urllib.parse.urlsplit(server.url)[:2]:
        raise DistUnavailable(
            f"{server.said}'s manifest names a tarball on another host ({parts.netloc}): "
            "only the server itself is fetched from"
        )
    return url


def download(component: Component, *, progress: Progress, cache: Path | None = None) -> Path:
    """The tarball of `component`, from the cache or downloaded into it (sha256 checked)."""
    path = (cache or worker_home() / "rust" / "dist") / "tarballs" / component.sha256
    path = path / component.filename
    if path.is_file():
        return path
    progress(f"downloading {component.filename}")
    try:
        data = _get(component.url, limit=MAX_TARBALL_BYTES)
    except OSError as exc:
        raise DistUnavailable(f"cannot download {component.filename}: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != component.sha256:
        raise DistUnavailable(f"{component.filename}: its sha256 is not the manifest's")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return path


class _SameHost(urllib.request.HTTPRedirectHandler):
    """A redirect is followed on the same scheme and host alone; one off the server is an
    HTTPError of its own code."""

    def redirect_request(  # type: ignore[override]
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        here = urllib.parse.urlsplit(req.full_url)[:2]
        if urllib.parse.urlsplit(newurl)[:2] != here:
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _get(url: str, *, limit: int) -> bytes:
    opener = urllib.request.build_opener(_SameHost)
    with opener.open(url, timeout=TIMEOUT_S) as response:
        data: bytes = response.read(limit + 1)
    if len(data) > limit:
        raise DistUnavailable(f"{url} answered over {limit} bytes")
    return data


def server_toolchain(
    server: DistServer,
    text: str,
    *,
    pin: bool,
    oldest: Version = (0, 0, 0),
    cache: Path | None = None,
) -> tuple[DistToolchain | None, str]:
    """The toolchain on `server` for what a project asks (`text`: a release or a channel; a
    `pin` is that toolchain, a minimum the server's release of that line, else its stable,
    whichever satisfies it), none older than `oldest` (a cargo that cannot reach crates.io);
    with None, why not, in a line's words."""
    text = text.strip()
    wanted = _VERSION.match(text + ".0" if text.count(".") == 1 else text)
    names = [text] if pin else [text, "stable"]
    if pin and wanted is not None and text.count(".") == 1:
        names.append(f"{text}.0")  # a server with releases' manifests only
    for channel in names:
        toolchain = find_toolchain(server, channel, cache=cache)
        if toolchain is None:
            continue
        if not pin and wanted is not None:
            if toolchain.version < tuple(int(g) for g in wanted.groups()):
                continue
        if toolchain.version < oldest:
            return None, (f"{server.said}'s Rust {toolchain.release} (its cargo has no sparse "
                          "index: crates.io is out of its reach here)")  # fmt: skip
        return toolchain, ""
    if manifest_path(text) is None:
        return None, f"{server.said}: {text!r} is no toolchain name a dist server has"
    return None, f"{server.said} has no {manifest_path(text)}"
