"""A toolchain's image (Node's, Go's, the next language's): built on the default sandbox image
from an archive its language package fetches, labelled with its recipe and what it holds, and
rebuilt when the recipe changes or the image no longer fits what the project asks. What is the
same for every toolchain lives here once; what to fetch and how to unpack it is the language's."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping
from typing import IO

import docker

from sandbox.container.image import (
    LABEL_RECIPE,
    Progress,
    build_from_context,
    ensure_image,
    image_exists,
    one_builder,
)
from sandbox.container.suites import DEFAULT_SUITE, Suite

#: What a language builds its image from once it has fetched its archives: the labels that
#: say what the image holds, and what writes its build context (a Dockerfile and the files).
Fetched = tuple[Mapping[str, str], Callable[[IO[bytes]], None]]


def ensure_toolchain_image(
    client: docker.DockerClient,
    *,
    name: str,
    version: str,
    dockerfile: str,
    fits: Callable[[Mapping[str, str]], bool],
    fetch: Callable[[], Fetched],
    progress: Progress,
    network_mode: str = "none",
    suite: Suite = DEFAULT_SUITE,
) -> tuple[dict[str, str], float | None]:
    """The labels of image `name` for toolchain `version`, built now (by what `fetch` returns)
    unless there already from the same base, version and Dockerfile and `fits` its labels;
    the seconds the build took, None when it was there. `network_mode`: the build's
    (build_from_context); "none" unless the Dockerfile installs from a package mirror.
    `suite`: the Debian release whose sandbox image it is built on (a toolchain that release
    packages). Workers on one host build it one at a time; the others wait, then find it
    current."""
    base = ensure_image(client, name=suite.image, suite=suite, progress=progress)
    recipe = hashlib.sha256(f"{base.id}\n{version}\n{dockerfile}".encode()).hexdigest()

    def current() -> dict[str, str] | None:
        if not image_exists(client, name):
            return None
        labels = dict(client.images.get(name).labels or {})
        return labels if labels.get(LABEL_RECIPE) == recipe and fits(labels) else None

    if (ready := current()) is not None:
        return ready, None
    with one_builder(name, progress):
        if (ready := current()) is not None:
            return ready, None
        started = time.monotonic()
        held, write_context = fetch()
        labels = {LABEL_RECIPE: recipe, **held}
        build_from_context(
            client, name=name, write_context=write_context, labels=labels, progress=progress,
            network_mode=network_mode, base=suite.image,
        )  # fmt: skip
        return labels, round(time.monotonic() - started, 1)
