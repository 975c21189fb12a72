"""The sandbox image for one Rust: `worker-sandbox:rust1.96`, built once on the default image.

Rust comes from Debian's packages (choice.py: SOURCES), installed by the image build's own
`apt-get` from Debian's mirror: the one build of ours that has a network (the shared builder's
`network_mode`, sandbox/container/image.py). Nothing of a repository is in that build; the
packages are Debian's, signed and checked by apt, and fetching them on the host instead would
mean resolving their dependencies (gcc, libstd-rust, LLVM's libraries) outside apt. The build
checks that `rustc --version` is the release asked for.

The image's environment is the sandbox's Rust: CARGO_HOME on the image's disk
(/home/worker/.cargo), so that the registry index and the crates a set-up fetches are committed
with the set-up image and read by the test runs; CARGO_TARGET_DIR at TARGET_DIR, on the image's
disk too, where set-up compiles the dependencies and the commit keeps them, and which the image
names writable (its label `worker.writable`, sandbox/container/writable.py): each test run's
container gets its own copy of it on the daemon's disk, made by Docker when the container is
created, thrown away with the container, bounded by `[limits] workspace_mb` per command and for
all of a sandbox's commands together (the lesson of node_modules: a test build never writes
where set-up put things; and anyhow's 508 MB of compiled dependencies fit no /tmp tmpfs of the
default 256 MB); rustfmt, for the tests that check formatting (`cargo fmt -- --check`,
once_cell's xtask); no incremental compilation (its cache is large and a fresh build gains
nothing from it); no colour (the output is read, not looked at).
"""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO

import docker

from sandbox.container.toolchain_image import Fetched, ensure_toolchain_image
from sandbox.container.writable import LABEL_WRITABLE
from sandbox.ecosystems.rust.choice import Source, dotted, rust_image_name, source_for
from sandbox.worktree.workspace import SANDBOX_UID

LABEL_RUST = "worker.rust.version"
CARGO_HOME = "/home/worker/.cargo"
#: cargo's target folder: set-up compiles the dependencies here (the image's disk, so the commit
#: keeps them), and each test run's container writes its own copy of it (LABEL_WRITABLE).
TARGET_DIR = "/home/worker/.cargo-target"

Progress = Callable[[str], None]


def dockerfile(source: Source) -> str:
    line = dotted(source.version, line=True)
    return f"""\
# Rust {line} from Debian's packages ({source.said}); the build reaches Debian's mirror
# (sandbox/ecosystems/rust/image.py), nothing else.
ARG BASE=worker-sandbox:latest
FROM ${{BASE}}
ARG UID={SANDBOX_UID}
USER root
RUN set -e; echo '{source.apt_line}' > /etc/apt/sources.list.d/worker-rust.list; \\
    apt-get update -qq; \\
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
        {" ".join(source.packages)} > /dev/null; \\
    rm -rf /var/lib/apt/lists/* /etc/apt/sources.list.d/worker-rust.list; \\
    rustc --version; cargo --version; \\
    rustc --version | grep -q '^rustc {line}\\.'; \\
    rustfmt --version; \\
{environment()}"""


def environment() -> str:
    """The end of a Rust image's Dockerfile (after a RUN line's `\\`, as root): cargo's folders
    made the sandbox user's, the environment, that user."""
    return f"""\
    mkdir -p {CARGO_HOME} {TARGET_DIR}; chown -R ${{UID}}:${{UID}} {CARGO_HOME} {TARGET_DIR}
ENV CARGO_HOME={CARGO_HOME} \\
    CARGO_TARGET_DIR={TARGET_DIR} \\
    CARGO_INCREMENTAL=0 \\
    CARGO_TERM_COLOR=never \\
    CARGO_TERM_PROGRESS_WHEN=never
USER ${{UID}}:${{UID}}
"""


@dataclass(frozen=True, kw_only=True)
class RustImage:
    """A Rust sandbox image made sure of; `built_s` None when it was there already."""

    name: str
    rust: str  # the release inside: "1.96.0"
    built_s: float | None = None


def ensure_rust_image(
    client: docker.DockerClient, *, line: str, progress: Progress, name: str | None = None
) -> RustImage:
    """Make sure the image for Rust `line` ("1.96") exists and is current, building it on the
    default sandbox image from its Debian packages (WrongRust: no source has that line).
    Workers on one host build it one at a time; the others wait, then find it."""
    if not re.fullmatch(r"\d+\.\d+", line):
        raise ValueError(f"not a Rust release line: {line!r}")
    source = source_for(line)
    name = name or rust_image_name(line)
    recipe = dockerfile(source)

    def fits(labels: Mapping[str, str]) -> bool:
        return labels.get(LABEL_RUST, "").startswith(line + ".")

    def fetch() -> Fetched:
        labels = {LABEL_RUST: dotted(source.version), LABEL_WRITABLE: json.dumps([TARGET_DIR])}
        return labels, lambda out: _write_context(out, recipe)

    labels, built_s = ensure_toolchain_image(
        client, name=name, version=line, dockerfile=recipe, fits=fits, fetch=fetch,
        progress=progress, network_mode="default",
    )  # fmt: skip
    if built_s is not None:
        progress(f"built {name} (Rust {labels[LABEL_RUST]}) in {built_s:.0f} s")
    return RustImage(name=name, rust=labels.get(LABEL_RUST, ""), built_s=built_s)


def _write_context(out: IO[bytes], recipe: str) -> None:
    data = recipe.encode()
    with tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
