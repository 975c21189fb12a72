"""The image's Python against the project's `requires-python`, checked once the image is
there and before set-up runs (`Python.check_image`): a project that refuses it stops in one
line, before any model call."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import docker
import docker.errors

from sandbox.container.create import ContainerSpec, run_to_end
from sandbox.ecosystems.python.choice import WrongPython
from sandbox.ecosystems.python.pins import python_satisfies

PYTHON_CACHE = "image-python.json"  # image id -> its Python, under the worker's cache folder


def check_python(wanted: str | None, python: tuple[int, int, int] | None, *, image: str) -> None:
    """Stop, in one line, when the project's `requires-python` excludes the image's Python (an
    image named by the user, or a chosen one whose Python is not what its release promised)."""
    if wanted is None or python is None or python_satisfies(wanted, python) is not False:
        return
    have = ".".join(map(str, python))
    raise WrongPython(
        f"the project requires Python {wanted} and the sandbox image {image} has {have}: build "
        "an image for another Python with `worker sandbox build --base IMAGE --image NAME` "
        "(docs/configuration.md) and pass --image NAME"
    )


def image_python(
    client: docker.DockerClient | None, image: str, *, cache_dir: Path
) -> tuple[int, int, int] | None:
    """The Python that `python` runs in `image` (the host's for the local backend), remembered
    by image id so only the first run on an image starts a container for it."""
    if client is None:
        return sys.version_info[:3]
    try:
        image_id = client.images.get(image).id
    except docker.errors.ImageNotFound:
        return None
    cache = cache_dir / PYTHON_CACHE
    known = _read_json(cache)
    if image_id in known:
        return tuple(known[image_id])  # type: ignore[return-value]
    try:
        # Unhardened: only our one-line probe runs, in the image chosen for the run.
        probe = ["python", "-c", "import sys; print(*sys.version_info[:3])"]
        out = run_to_end(client, ContainerSpec(image=image, command=probe, hardening=None))
        version = tuple(int(n) for n in out.decode().split())
    except (docker.errors.DockerException, ValueError):
        return None
    if len(version) != 3:
        return None
    _remember(cache, known, image_id, list(version))
    return version  # type: ignore[return-value]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(path: Path, known: dict[str, Any], key: str, value: list[int]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**known, key: value}), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache: the next run asks the image again
