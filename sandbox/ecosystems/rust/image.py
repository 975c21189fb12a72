"""The sandbox image for one Rust: `worker-sandbox:rust1.96`, built once on the default image.

Rust comes from Debian's packages (choice.py: SOURCES), installed by the image build's own
`apt-get` from Debian's mirror: the one build of ours that has a network (the shared builder's
`network_mode`, sandbox/container/image.py). Nothing of a repository is in that build; the
packages are Debian's, signed and checked by apt, and fetching them on the host instead would
mean resolving their dependencies (gcc, libstd-rust, LLVM's libraries) outside apt. The build
checks that `rustc --version` is the release asked for.

The image's environment is the sandbox's Rust: CARGO_HOME on the image's disk
(/home/worker/.cargo), so that the registry index and the crates a set-up fetches are
committed with the set-up image and read by the test runs; CARGO_TARGET_DIR on /tmp, the one
place a test run under a read-only root may write, filled before each run from what set-up
compiled (seed_command: the lesson of node_modules, a test build never writes where set-up
put things); no incremental compilation (its cache is large and a fresh copy gains nothing);
no colour (the output is read, not looked at).
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO

import docker

from sandbox.container.toolchain_image import Fetched, ensure_toolchain_image
from sandbox.ecosystems.rust.choice import Source, dotted, rust_image_name, source_for
from sandbox.worktree.workspace import SANDBOX_UID

LABEL_RUST = "worker.rust.version"
CARGO_HOME = "/home/worker/.cargo"
TARGET_DIR = "/tmp/cargo-target"
#: Where set-up compiles the dependencies (the image's disk, so the commit keeps them); a test
#: run copies it to TARGET_DIR, timestamps kept, so that cargo finds them fresh.
SETUP_TARGET = "/home/worker/.cargo-target"
#: Room left on /tmp for the build after the seed is copied there.
BUILD_ROOM_KB = 200_000

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
    mkdir -p {CARGO_HOME} {SETUP_TARGET}; chown -R ${{UID}}:${{UID}} {CARGO_HOME} {SETUP_TARGET}
ENV CARGO_HOME={CARGO_HOME} \\
    CARGO_TARGET_DIR={TARGET_DIR} \\
    CARGO_INCREMENTAL=0 \\
    CARGO_TERM_COLOR=never \\
    CARGO_TERM_PROGRESS_WHEN=never
USER ${{UID}}:${{UID}}
"""


def seed_command() -> str:
    """Shell that fills an empty CARGO_TARGET_DIR from set-up's compiled dependencies
    (SETUP_TARGET), timestamps kept (`cp -a`: cargo judges freshness by them); nothing where
    set-up compiled none, or where /tmp has not room for them and BUILD_ROOM_KB more (the
    build then starts cold rather than out of space)."""
    target = f'"${{CARGO_TARGET_DIR:-{TARGET_DIR}}}"'
    return (
        f'if [ ! -e {target} ] && [ -n "$(ls -A {SETUP_TARGET} 2>/dev/null)" ] && '
        f"[ \"$(df -Pk /tmp | awk 'NR==2{{print $4}}')\" -gt "
        f'"$(( $(du -sk {SETUP_TARGET} | cut -f1) + {BUILD_ROOM_KB} ))" ]; then '
        f"cp -a {SETUP_TARGET} {target}; fi"
    )


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
        return {LABEL_RUST: dotted(source.version)}, lambda out: _write_context(out, recipe)

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
