"""Build the sandbox image, offline when no registry is reachable.

Order of preference for the base: an image the user named; else the registry image of the
release's Python (`python:3.11-slim`) if present or pullable; else `worker-base:bookworm` (or the
base of another release in sandbox/container/suites.py), made from Debian packages with debootstrap
and
`docker import`. The Dockerfile is then built on top. Every step is skipped when its result
already exists, so a second `worker sandbox build` is a no-op in seconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO

import docker
import docker.errors

from sandbox.container.suites import DEFAULT_SUITE, Suite
from sandbox.errors import ImageError
from sandbox.home import worker_home

DEFAULT_IMAGE = DEFAULT_SUITE.image
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = (
    "python3",
    "python3-venv",
    "python3-pytest",
    "python3-pip",
    "git",
    "ca-certificates",
    "tinyproxy-bin",  # the set-up's filtering proxy (sandbox/setup/network.py); needs libc only
    # What a CI runner's image has for Python projects: a C toolchain with the headers and the
    # -dev libraries common extensions link against, and programs test suites shell out to.
    # The Dockerfile installs any of these a base lacks (a registry image, an older base).
    "python3-dev",
    "gcc",
    "g++",
    "make",
    "pkg-config",
    "libffi-dev",
    "libssl-dev",
    "zlib1g-dev",
    "libyaml-dev",
    "libxml2-dev",
    "libxslt1-dev",
    "libjpeg-dev",
    "libsqlite3-dev",
    "libbz2-dev",
    "liblzma-dev",
    "less",
    "patch",
    "diffutils",
    "file",
    "procps",
    "gettext",
    "locales",
    "tzdata",
    "unzip",
    "zip",
    "xz-utils",
    "bzip2",
)
LABEL_RECIPE = "worker.recipe"

Progress = Callable[[str], None]


@dataclass(frozen=True, kw_only=True)
class ImageState:
    """A sandbox image made sure of: its id, and the seconds its build took (None: it was
    up to date, nothing was built)."""

    id: str
    short_id: str
    built_s: float | None = None


def dockerfile_text() -> str:
    """The Dockerfile of the default sandbox image (shipped inside the package)."""
    return resources.files("sandbox").joinpath("Dockerfile").read_text(encoding="utf-8")


def image_exists(client: docker.DockerClient, name: str) -> bool:
    """True when `name` is present locally."""
    try:
        client.images.get(name)
    except docker.errors.ImageNotFound:
        return False
    return True


def recipe_hash(dockerfile: str, base_id: str) -> str:
    """What determines the built image: the Dockerfile and the exact base image."""
    return hashlib.sha256(f"{base_id}\n{dockerfile}".encode()).hexdigest()


def ensure_image(
    client: docker.DockerClient,
    *,
    name: str = DEFAULT_IMAGE,
    base: str | None = None,
    suite: Suite = DEFAULT_SUITE,
    progress: Progress = lambda _msg: None,
) -> ImageState:
    """Make sure the sandbox image `name` exists and is current, on `base` or else on `suite`'s
    (made if need be); the build's steps go to `progress`, whether it was up to date is for the
    caller to say. Workers on one host build an image one at a time: the others wait and then
    find it current."""
    if (ready := _current(client, name=name, base=base, suite=suite)) is not None:
        return ready
    with one_builder(name, progress):
        started = time.monotonic()
        base_name = base or _choose_base(client, suite, progress)
        return _current(client, name=name, base=base_name, suite=suite) or _build(
            client, name=name, base_name=base_name, started=started, progress=progress
        )


def _current(
    client: docker.DockerClient, *, name: str, base: str | None, suite: Suite
) -> ImageState | None:
    """`name`, when it is there and built from this Dockerfile on this base (given, else the
    first of the suite's there); None when a build is due. Builds nothing."""
    # One inspection per image (this runs before every run's first container): the image's
    # labels, and the first base there, whose id the recipe needs.
    try:
        current = client.images.get(name)
    except docker.errors.ImageNotFound:
        return None
    for candidate in (base,) if base else (suite.registry_base, suite.base):
        try:
            base_id = client.images.get(candidate).id
        except docker.errors.ImageNotFound:
            continue
        if current.labels.get(LABEL_RECIPE) != recipe_hash(dockerfile_text(), base_id):
            return None
        return ImageState(id=str(current.id), short_id=str(current.short_id))
    return None


def _recipe(client: docker.DockerClient, base_name: str) -> str:
    try:
        base_id = client.images.get(base_name).id
    except docker.errors.ImageNotFound as exc:
        raise ImageError(
            f"base image {base_name} is not present: pull or load it first, or leave out --base "
            "to build one offline"
        ) from exc
    return recipe_hash(dockerfile_text(), base_id)


@contextlib.contextmanager
def one_builder(name: str, progress: Progress) -> Iterator[None]:
    """Hold the build lock of image `name` (under $WORKER_HOME/locks): workers on one host
    build an image one at a time."""
    folder = worker_home() / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(
        folder / ("image-" + re.sub(r"[^\w.-]", "_", name)), os.O_RDONLY | os.O_CREAT, 0o644
    )
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress(f"waiting for another worker building {name}")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _build(
    client: docker.DockerClient, *, name: str, base_name: str, started: float, progress: Progress
) -> ImageState:
    text = dockerfile_text()
    recipe = _recipe(client, base_name)
    progress(f"building {name} on {base_name}")
    tail: list[str] = []
    with tempfile.TemporaryDirectory(prefix="worker-build-") as ctx:
        Path(ctx, "Dockerfile").write_text(text, encoding="utf-8")
        try:
            # The low-level call streams the build log, so each step shows as it starts.
            for chunk in client.api.build(
                path=ctx,
                tag=name,
                buildargs={"BASE": base_name},
                labels={LABEL_RECIPE: recipe},
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
            ):
                if "error" in chunk:
                    raise ImageError(
                        f"building {name} failed: {chunk['error'].strip()}\n"
                        + "\n".join(tail[-15:])
                    )
                line = str(chunk.get("stream", "")).strip()
                if line:
                    tail.append(line)
                if line.startswith("Step "):
                    progress(line[:120])
        except docker.errors.APIError as exc:
            raise ImageError(f"building {name} failed: {exc.explanation or exc}") from exc
    image = client.images.get(name)
    built_s = round(time.monotonic() - started, 1)
    progress(f"built {name} ({image.short_id}) in {built_s:.0f} s")
    return ImageState(id=str(image.id), short_id=str(image.short_id), built_s=built_s)


def build_from_context(
    client: docker.DockerClient,
    *,
    name: str,
    write_context: Callable[[IO[bytes]], None],
    labels: dict[str, str],
    progress: Progress,
    network_mode: str = "none",
    base: str = DEFAULT_IMAGE,
) -> None:
    """Build `name` from the tar build context `write_context` writes (its Dockerfile and files),
    FROM the sandbox image `base` (the build argument BASE; the default image unless a toolchain
    is one another Debian release packages), with no network (`network_mode` "default": the
    Dockerfile's own RUN steps reach the network, for a toolchain from Debian's apt mirror; no
    code of a repository runs in such a build) and nothing pulled; a failure is an ImageError
    with the build's last lines."""
    progress(f"building {name}")
    tail: list[str] = []
    with tempfile.TemporaryFile(prefix="worker-context-") as context:
        write_context(context)
        context.seek(0)
        try:
            for chunk in client.api.build(
                fileobj=context,
                custom_context=True,
                tag=name,
                buildargs={"BASE": base},
                labels=labels,
                network_mode=network_mode,
                rm=True,
                forcerm=True,
                pull=False,
                decode=True,
            ):
                if "error" in chunk:
                    said = "\n".join(tail[-15:])
                    raise ImageError(f"building {name} failed: {chunk['error'].strip()}\n{said}")
                if line := str(chunk.get("stream", "")).strip():
                    tail.append(line)
        except docker.errors.APIError as exc:
            raise ImageError(f"building {name} failed: {exc.explanation or exc}") from exc


def _choose_base(client: docker.DockerClient, suite: Suite, progress: Progress) -> str:
    registry = suite.registry_base
    for candidate in (registry, suite.base):
        if image_exists(client, candidate):
            return candidate
    progress(f"pulling {registry}")
    try:
        client.images.pull(registry)
        return registry
    except docker.errors.APIError as exc:
        progress(f"cannot pull {registry} ({_first_line(exc)}); building a base offline")
    build_offline_base(client, suite=suite, progress=progress)
    return suite.base


def build_offline_base(
    client: docker.DockerClient,
    *,
    suite: Suite = DEFAULT_SUITE,
    name: str | None = None,
    progress: Progress,
) -> None:
    """debootstrap a minimal Debian `suite` with Python, pytest and git, and `docker import` it
    as `name` (the suite's base)."""
    name = name or suite.base
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise ImageError(
            "no base image can be pulled and debootstrap is missing: "
            "install it (apt-get install -y debootstrap) or pass --base IMAGE"
        )
    with tempfile.TemporaryDirectory(prefix="worker-rootfs-") as root:
        cmd = [
            debootstrap,
            "--variant=minbase",
            f"--include={','.join(DEBIAN_PACKAGES)}",
            suite.name,
            root,
            DEBIAN_MIRROR,
        ]
        progress(f"debootstrap {suite.name} (a few minutes)")
        _run_streaming(cmd, progress, every=40)
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            shutil.rmtree(Path(root, junk), ignore_errors=True)
        progress(f"importing the root filesystem as {name}")
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        try:
            assert tar.stdout is not None
            client.api.import_image_from_data(
                tar.stdout, repository=name.split(":")[0], tag=name.split(":")[1]
            )
        finally:
            if tar.stdout is not None:
                tar.stdout.close()
            tar.wait()
    if not image_exists(client, name):
        raise ImageError(f"docker import did not produce {name}")
    progress(f"base image {name} ready")


def _run_streaming(cmd: list[str], progress: Progress, *, every: int) -> None:
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
    )
    assert proc.stdout is not None
    tail: list[str] = []
    for n, line in enumerate(proc.stdout):
        tail = (tail + [line.rstrip()])[-20:]
        if n % every == 0:
            progress(f"  {line.strip()[:100]}")
    if proc.wait() != 0:
        raise ImageError(
            f"{Path(cmd[0]).name} failed (exit {proc.returncode}):\n" + "\n".join(tail)
        )


def _first_line(exc: Exception) -> str:
    text = str(getattr(exc, "explanation", None) or exc)
    return text.splitlines()[0][:160] if text else type(exc).__name__
