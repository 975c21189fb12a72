"""Everything before a sandbox can start: the daemon, the image, the cached set-up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker

from policies.isolation import HARDENED, Isolation, Placement
from policies.limits import Limits
from policies.paths import Protection
from policies.secrets import NO_SECRETS, Secrets
from sandbox.container.client import connect
from sandbox.container.image import DEFAULT_IMAGE, ensure_image
from sandbox.container.local_sandbox import LOCAL_SANDBOX_WARNING
from sandbox.container.placement import configure as configure_placement
from sandbox.container.prune import sweep_leftovers
from sandbox.ecosystems.base import Toolchain
from sandbox.errors import SandboxError
from sandbox.on_thread import OnThread
from sandbox.session import Backend, BoxSpec, SandboxSession
from sandbox.setup.cache import SetupResult, SetupSpec
from sandbox.setup.tool_layer import prepare_setup


@dataclass(frozen=True, kw_only=True)
class Prepared:
    """What a session starts from; `pending_setup` is a set-up still to run in the session
    (the local backend has no image to cache it in); `setup` is the cached set-up's record;
    `image_built_s` the seconds the chosen Python's image took to build (None: it was there)."""

    backend: Backend
    isolation: Isolation
    client: docker.DockerClient | None
    image: str
    pending_setup: str | None = None
    setup_cached: bool = False
    setup: SetupResult | None = None
    image_built_s: float | None = None
    secrets: Secrets = NO_SECRETS  # masked in every sandbox's output and logs

    def spec(
        self, *, limits: Limits, protect: Callable[[str], Protection | None] | None = None
    ) -> BoxSpec:
        """The sandbox to start from here, with these limits and this path protection."""
        return BoxSpec(
            client=self.client,
            image=self.image,
            limits=limits,
            backend=self.backend,
            isolation=self.isolation,
            protect=protect,
            overlay=self.tree_overlay,
            secrets=self.secrets,
        )

    @property
    def tree_overlay(self) -> Path | None:
        """The files the cached set-up wrote into the tree, for each new copy of it."""
        return self.setup.tree if self.setup is not None else None


def prepare(
    *,
    backend: Backend,
    repo: Path,
    image: str | None,
    setup: SetupSpec | None,
    limits: Limits,
    progress: Callable[[str], None],
    isolation: Isolation = HARDENED,
    placement: Placement = "auto",
    toolchain: Toolchain | None = None,
    before_setup: Callable[[docker.DockerClient | None, str], object] | None = None,
    secrets: Secrets = NO_SECRETS,
) -> Prepared:
    """Connect (exit 3 when Docker is missing: never a silent fall-back), build, set up; with
    no `image` named, the image of the `toolchain` the project's ecosystem chose (the Python,
    the Node it asks for: sandbox/ecosystems/), built once and said in one line;
    `before_setup(client, image)` runs once the image is there, before the set-up does;
    `secrets` are masked in the output of every sandbox started from what this returns.
    `placement` is where containers keep the working copy (sandbox/container/placement.py)."""
    configure_placement(placement)
    if backend == "local":
        progress(LOCAL_SANDBOX_WARNING)
        sweep_leftovers(None, progress=progress)
        if before_setup is not None:
            before_setup(None, "")
        return Prepared(
            backend=backend,
            isolation=isolation,
            client=None,
            image="",
            pending_setup=_in_place(setup),
            secrets=secrets,
        )
    if isolation.weakened():
        weakened = ", ".join(isolation.weakened())
        progress(f"warning: sandbox hardening turned off by configuration: {weakened}")
    client = connect()
    # What workers killed before they could clean up left: swept on a thread while the images
    # are checked (both wait on the daemon: 15-30 ms off a run's start), done before set-up.
    sweeping = OnThread(lambda: sweep_leftovers(client, progress=progress), name="sweep")
    sweeping.begin()
    try:
        name, built_s, ensured = image or DEFAULT_IMAGE, None, None
        if image is None and toolchain is not None:
            name = ensured = toolchain.image
            built_s = toolchain.ensure(client, progress=progress)
            progress(toolchain.describe(built_s))
        # The set-up's filtering proxy runs from the default image (it holds tinyproxy).
        proxy = setup is not None and setup.network == "index"
        if (name == DEFAULT_IMAGE or proxy) and ensured != DEFAULT_IMAGE:
            ensure_image(client, progress=progress)
    finally:
        sweeping.settle()
    sweeping.wait()
    if before_setup is not None:
        before_setup(client, name)
    done = None
    if setup is not None:
        done = prepare_setup(
            client,
            base_image=name,
            spec=setup,
            repo=repo,
            limits=limits,
            isolation=isolation,
            progress=progress,
        )
    return Prepared(
        backend=backend,
        isolation=isolation,
        client=client,
        image=done.image if done else name,
        setup_cached=bool(done and done.cached),
        setup=done,
        image_built_s=built_s,
        secrets=secrets,
    )


def _in_place(setup: SetupSpec | None) -> str | None:
    """The set-up the local backend runs in its session: with no image to layer on, a tool it
    needs is installed first, in a throwaway folder."""
    if setup is None or setup.tool is None:
        return setup.command if setup else None
    return setup.tool.inline(setup.command, home="/tmp/worker-lock-tool")


def run_pending_setup(prepared: Prepared, session: SandboxSession, *, timeout_s: float) -> None:
    """Run a set-up the backend could not cache, in the session itself, before anything else."""
    if not prepared.pending_setup:
        return
    result = session.box.run(prepared.pending_setup, timeout_s=timeout_s)
    if not result.ok:
        raise SandboxError(
            f"set-up command failed ({result.describe()}): "
            f"{prepared.pending_setup}\n{result.output[-2000:]}"
        )
