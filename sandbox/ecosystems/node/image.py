"""The sandbox image for one Node: `worker-sandbox:node22`, built once on the default image.

Node, npm and corepack come from the npm registry (sandbox/ecosystems/node/registry.py),
downloaded and checked on the host; the build gets them in a context tar made here and runs
with no network. The tree is laid out as Node's own Linux distribution lays it out under
/usr/local: `bin/node`, `include/node` (node-gyp builds native add-ons against it, with no
download), `lib/node_modules/{npm,corepack}` with `npm`, `npx`, `corepack` and corepack's
`yarn`/`pnpm` shims on PATH. npm is the newest release whose `engines.node` accepts the Node,
within the major that Node's own release line ships (NPM_MAJOR) where there is one.

An image is current while its recipe label matches (this Dockerfile, the base image's id, the
version asked for): checking that needs no network, and a new npm or Node patch does not
rebuild it ("built once"). `version` is a major ("22": the newest 22.x the registry lists when
it is built) or an exact version ("22.12.0": its own image, `worker-sandbox:node22.12.0`).
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors

from sandbox.container.toolchain_image import Fetched, ensure_toolchain_image
from sandbox.ecosystems.node.errors import WrongNode
from sandbox.ecosystems.node.registry import (
    Release,
    download,
    node_package,
    registry_url,
    releases,
)
from sandbox.ecosystems.node.semver import accepts, parse_version
from sandbox.errors import ImageError
from sandbox.worktree.workspace import SANDBOX_UID

IMAGE_PREFIX = "worker-sandbox:node"
LABEL_NODE = "worker.node.version"
LABEL_NPM = "worker.npm.version"
LABEL_COREPACK = "worker.corepack.version"
#: The npm major each Node line ships with (Node's own release tarballs), preferred when the
#: registry has a release of it that accepts the Node.
NPM_MAJOR = {16: 8, 18: 10, 20: 10, 22: 10, 24: 11}
MAX_UNPACKED_BYTES = 1_500_000_000
#: Where corepack keeps the yarn and pnpm it fetches: a folder the sandbox user owns on the
#: image's disk, so a set-up's download is committed with the set-up image (a tmpfs /tmp is
#: not); npm's cache stays in /tmp, writable under the read-only root of a test run.
COREPACK_HOME = "/home/worker/.cache/node/corepack"
DOCKERFILE = f"""\
# Node, npm and corepack under /usr/local, as Node's Linux distribution lays them out; the
# context tar (sandbox/ecosystems/node/image.py) holds the tree, the build needs no network.
ARG BASE=worker-sandbox:latest
FROM ${{BASE}}
ARG UID={SANDBOX_UID}
USER root
COPY root/ /
RUN set -e; cd /usr/local/bin; \\
    for tool in npm npx; do \\
        chmod 755 ../lib/node_modules/npm/bin/$tool-cli.js; \\
        ln -sf ../lib/node_modules/npm/bin/$tool-cli.js $tool; \\
    done; \\
    if [ -d ../lib/node_modules/corepack ]; then \\
        chmod 755 ../lib/node_modules/corepack/dist/*.js; \\
        ln -sf ../lib/node_modules/corepack/dist/corepack.js corepack; \\
        ./corepack enable --install-directory /usr/local/bin; \\
    fi; \\
    mkdir -p {COREPACK_HOME}; chown -R ${{UID}}:${{UID}} /home/worker/.cache; \\
    node --version; npm --version
ENV npm_config_cache=/tmp/.npm \\
    npm_config_update_notifier=false \\
    npm_config_fund=false \\
    npm_config_audit=false \\
    npm_config_nodedir=/usr/local \\
    COREPACK_HOME={COREPACK_HOME} \\
    COREPACK_ENABLE_DOWNLOAD_PROMPT=0 \\
    COREPACK_ENABLE_AUTO_PIN=0 \\
    YARN_ENABLE_TELEMETRY=0 \\
    DO_NOT_TRACK=1
USER ${{UID}}:${{UID}}
"""

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class NodeImage:
    """A Node sandbox image made sure of; `built_s` None when it was there already."""

    name: str
    node: str  # the version inside: "22.12.0"
    npm: str
    corepack: str | None
    built_s: float | None = None


def node_image_name(version: str) -> str:
    """`worker-sandbox:node22` for "22", `worker-sandbox:node22.12.0` for "22.12.0"."""
    return IMAGE_PREFIX + version


def ensure_node_image(
    client: docker.DockerClient,
    *,
    version: str,
    progress: Progress,
    registry: str | None = None,
    name: str | None = None,
    engines: str | None = None,
) -> NodeImage:
    """Make sure the image for Node `version` ("22" or "22.12.0") exists and is current,
    building it on the default sandbox image (made if need be) from the tarballs of `registry`
    (else npm_config_registry, else the public one); `name` defaults to node_image_name(version).
    An image there already whose Node `engines` (a range: engines.node) refuses is rebuilt with
    the newest release of its line. Workers on one host build it one at a time; the others
    wait, then find it current."""
    if not re.fullmatch(r"\d+(\.\d+\.\d+)?", version):
        raise ValueError(f"not a Node major or exact version: {version!r}")
    name = name or node_image_name(version)

    def fits(labels: Mapping[str, str]) -> bool:
        inside = parse_version(labels.get(LABEL_NODE, ""))
        return not engines or inside is None or accepts(engines, inside) is not False

    def fetch() -> Fetched:
        url = registry_url(registry)
        node, npm, corepack = _pick(version, registry=url, progress=progress)
        tarballs = [(r, download(r, registry=url, progress=progress)) for r in (node, npm)]
        if corepack is not None:
            tarballs.append((corepack, download(corepack, registry=url, progress=progress)))
        held = {
            LABEL_NODE: node.version,
            LABEL_NPM: npm.version,
            LABEL_COREPACK: corepack.version if corepack else "",
        }
        return held, lambda out: _write_context(out, tarballs)

    labels, built_s = ensure_toolchain_image(
        client, name=name, version=version, dockerfile=DOCKERFILE, fits=fits, fetch=fetch,
        progress=progress,
    )  # fmt: skip
    image = _from_labels(name, labels, built_s=built_s)
    if built_s is not None:
        progress(f"built {name} (Node {image.node}, npm {image.npm}) in {built_s:.0f} s")
    return image


def _from_labels(name: str, labels: dict[str, str], *, built_s: float | None = None) -> NodeImage:
    return NodeImage(
        name=name,
        node=labels.get(LABEL_NODE, ""),
        npm=labels.get(LABEL_NPM, ""),
        corepack=labels.get(LABEL_COREPACK) or None,
        built_s=built_s,
    )


def _pick(
    version: str, *, registry: str, progress: Progress
) -> tuple[Release, Release, Release | None]:
    """The Node release for `version`, and the npm and corepack releases that go with it."""
    package = node_package()
    listed = releases(package, registry=registry, progress=progress)
    if "." in version:
        node = listed.get(version)
    else:
        line = [r for r in listed.values() if str(r.release[0]) == version]
        node = max(line, key=lambda r: r.release) if line else None
    if node is None:
        known = sorted((r.release for r in listed.values()), reverse=True)
        newest = ".".join(map(str, known[0])) if known else "none"
        raise WrongNode(
            f"the registry {registry} has no {package}@{version} (the newest it lists: {newest})"
        )
    npm = _companion("npm", node, registry=registry, progress=progress, prefer=NPM_MAJOR)
    if npm is None:
        raise WrongNode(f"the registry {registry} has no npm release for Node {node.version}")
    corepack = _companion("corepack", node, registry=registry, progress=progress, prefer={})
    return node, npm, corepack


def _companion(
    package: str, node: Release, *, registry: str, progress: Progress, prefer: dict[int, int]
) -> Release | None:
    """The newest release of `package` whose `engines.node` accepts `node` (within the major
    `prefer` names for that Node line, when there is one)."""
    fits = [
        r
        for r in releases(package, registry=registry, progress=progress).values()
        if r.engines_node is None or accepts(r.engines_node, node.release)
    ]
    major = prefer.get(node.release[0])
    preferred = [r for r in fits if r.release[0] == major]
    return max(preferred or fits, key=lambda r: r.release, default=None)


def _write_context(out: IO[bytes], tarballs: list[tuple[Release, Path]]) -> None:
    """The build context: the Dockerfile and `root/usr/local/...` unpacked from the tarballs."""
    with tarfile.open(fileobj=out, mode="w") as tar:
        dockerfile = DOCKERFILE.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(dockerfile), 0o644
        tar.addfile(info, io.BytesIO(dockerfile))
        total = 0
        for release, path in tarballs:
            for info, data in _members(release, path):
                total += info.size
                if total > MAX_UNPACKED_BYTES:
                    raise ImageError(f"the Node tarballs unpack to over {MAX_UNPACKED_BYTES} bytes")
                tar.addfile(info, data)


def _members(release: Release, path: Path) -> Iterator[tuple[tarfile.TarInfo, IO[bytes] | None]]:
    """The tarball's plain files and folders, renamed to where they go under root/usr/local;
    links, devices and names leaving the package are left out."""
    node = release.package.startswith("node-")
    with tarfile.open(path, mode="r:gz") as src:
        for member in src:
            parts = posixpath.normpath(member.name.lstrip("/")).split("/")
            rel = "/".join(parts[1:])  # the tarball's top folder, "package/"
            if not rel or ".." in parts or not (member.isfile() or member.isdir()):
                continue
            if node:
                top = rel.split("/")[0]
                if top not in ("bin", "include", "share", "LICENSE"):
                    continue
                dest = "share/doc/node/LICENSE" if rel == "LICENSE" else rel
            else:
                dest = f"lib/node_modules/{release.package}/{rel}"
            info = tarfile.TarInfo(f"root/usr/local/{dest}")
            info.uid = info.gid = 0
            info.mtime = int(member.mtime)
            if member.isdir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                yield info, None
                continue
            info.size, info.mode = member.size, 0o755 if member.mode & 0o111 else 0o644
            data = src.extractfile(member)
            assert data is not None
            yield info, data
