"""A set-up that needs a tool first (sandbox/setup/tool.py): the tool's layer, then the project.

The layer is a set-up image like any other (sandbox/setup/cache.py: the same fence, the same
limits, the same secret scan, the same key), whose command installs the tool and whose tree is
an empty folder, so nothing of the repository under repair is in it. It is tagged
`worker-tool:<name>-<version>-<key>` and every project whose set-up asks for that tool at that
version, on the same base image, starts from it: the project's own set-up image is built on the
layer, and its key takes the layer's image id as its base.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import docker
import docker.errors

from policies.isolation import HARDENED, Isolation
from policies.limits import Limits
from sandbox.container.image import DEFAULT_IMAGE
from sandbox.setup.cache import SetupResult, SetupSpec, prepare_setup_image, setup_key
from sandbox.setup.tool import SetupTool
from sandbox.worktree.workspace import make_run_dir, remove_dir

TOOL_REPOSITORY = "worker-tool"


def prepare_setup(
    client: docker.DockerClient,
    *,
    base_image: str,
    spec: SetupSpec,
    repo: Path,
    limits: Limits,
    isolation: Isolation = HARDENED,
    progress: Callable[[str], None] = lambda _m: None,
    egress_network: str = "bridge",
    environ: Mapping[str, str] | None = None,
    proxy_image: str = DEFAULT_IMAGE,
) -> SetupResult:
    """The set-up image for `repo` (prepare_setup_image), built on its tool's layer where the
    spec names a tool; the layer is built first when this machine has none yet."""
    if spec.tool is not None:
        base_image = tool_layer(
            client, base_image=base_image, spec=spec, limits=limits, isolation=isolation,
            progress=progress, egress_network=egress_network, environ=environ,
            proxy_image=proxy_image,
        )  # fmt: skip
    return prepare_setup_image(
        client, base_image=base_image, spec=spec, repo=repo, limits=limits, isolation=isolation,
        progress=progress, egress_network=egress_network, environ=environ, proxy_image=proxy_image,
    )  # fmt: skip


def tool_layer(
    client: docker.DockerClient,
    *,
    base_image: str,
    spec: SetupSpec,
    limits: Limits,
    isolation: Isolation = HARDENED,
    progress: Callable[[str], None] = lambda _m: None,
    egress_network: str = "bridge",
    environ: Mapping[str, str] | None = None,
    proxy_image: str = DEFAULT_IMAGE,
) -> str:
    """The tag of `spec.tool`'s layer on `base_image`, installed now unless already there. Its
    set-up has the project's network mode and index variables, none of its named secrets."""
    tool = spec.tool
    assert tool is not None
    layer_spec = _layer_spec(spec)
    tag = layer_tag(client, base_image=base_image, spec=spec, environ=environ)
    try:
        client.images.get(tag)
        progress(f"set-up tool: {tool.describe()}, cached: {tag}")
        return tag
    except docker.errors.ImageNotFound:
        pass
    progress(f"set-up tool: {tool.describe()}: installing it once, into {tag}")
    run_dir = make_run_dir("worker-tool-")
    try:
        empty = run_dir / "tree"
        empty.mkdir()
        made = prepare_setup_image(
            client, base_image=base_image, spec=layer_spec, repo=empty, limits=limits,
            isolation=isolation, progress=_said_as(tool, progress),
            egress_network=egress_network, environ=environ, proxy_image=proxy_image,
        )  # fmt: skip
    finally:
        remove_dir(run_dir)
    client.images.get(made.image).tag(TOOL_REPOSITORY, tag.partition(":")[2])
    return tag


def layer_tag(
    client: docker.DockerClient,
    *,
    base_image: str,
    spec: SetupSpec,
    environ: Mapping[str, str] | None = None,
) -> str:
    """The tag `spec.tool`'s layer on `base_image` has (whether built yet or not)."""
    tool = spec.tool
    assert tool is not None
    run_dir = make_run_dir("worker-tool-")
    try:
        empty = run_dir / "tree"
        empty.mkdir()
        key = setup_key(
            client, base_image=base_image, spec=_layer_spec(spec), repo=empty, environ=environ
        )
    finally:
        remove_dir(run_dir)
    return f"{TOOL_REPOSITORY}:{tool.name}-{tool.slug}-{key[:12]}"


def _layer_spec(spec: SetupSpec) -> SetupSpec:
    """The layer's set-up: the tool's install alone, with the project's network and timeout."""
    tool = spec.tool
    assert tool is not None
    return SetupSpec(
        command=tool.install, network=spec.network, timeout_s=spec.timeout_s,
        installer=replace(tool.installer, inputs=(), from_checkout=None),
    )  # fmt: skip


def _said_as(tool: SetupTool, progress: Callable[[str], None]) -> Callable[[str], None]:
    """The layer's own set-up lines, named as the tool's."""
    return lambda line: progress(f"set-up tool {tool.name}: {line.removeprefix('set-up ')}")
