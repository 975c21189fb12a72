"""What one ecosystem's installer needs from the set-up around its command.

The set-up phase (sandbox/setup/cache.py) is the same for every ecosystem: a throwaway copy of
the tree, a fenced network, a committed image. What differs is data, given here: the registry
hosts the fence lets through (sandbox/setup/network.py), the host variables the command is told,
the fixed variables it runs with (where its caches go), the folders it writes inside the tree
that belong to the environment (`node_modules`: moved into the image and linked from each copy
of the tree, sandbox/setup/tree_dirs.py), and what the committed image keeps in its own
environment (where Yarn Berry keeps the packages its .pnp.cjs points into), the files whose
content decides what it installs (`inputs`: the set-up image's cache key hashes exactly those),
and what the build reads from the user's checkout rather than the tree (`from_checkout`: a
version from git). Each language package makes its own (pip's in sandbox/ecosystems/python/,
Node's from the repository's files); `PLAIN` is a given command's where no language is known.

Never a secret here: the values are fixed strings, the same for every user, and part of the
cache key. A host variable's value reaches the command alone, through its exec environment; so
do those `host_config` reads from the user's own configuration when set-up runs (a Maven
settings.xml's mirror and its password).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol


class FromCheckout(Protocol):
    """What a build reads from the user's checkout, not the tree (a version from git)."""

    @property
    def version(self) -> str: ...

    @property
    def key(self) -> str:
        """The part of it that decides the set-up image."""
        ...

    def env(self) -> dict[str, str]:
        """The variables the build reads it from."""
        ...

    def files(self) -> dict[str, str]:
        """The files the build reads it from (a `PKG-INFO`), by path in the tree: written into
        set-up's copy of the tree before the command, never kept with the image."""
        ...


#: Where set-up's own folders go in the image: the moved tree folders, corepack's downloads.
DEPS_DIR = "/opt/worker-deps"
#: A folder on the set-up container's disk for an installer's caches: removed before the commit.
CACHE_DIR = "/var/tmp/worker-cache"


@dataclass(frozen=True, kw_only=True)
class Installer:
    """An ecosystem's installer as the set-up phase sees it (see the module docstring)."""

    name: str
    #: Always on the fence's allow-list.
    hosts: tuple[str, ...]
    #: Host variables naming registry URLs: passed to the command, their hosts allowed.
    url_variables: tuple[str, ...]
    #: Other host variables passed to the command as they are, when set.
    passed: tuple[str, ...] = ()
    #: Variables told the fence's proxy URL, besides HTTP(S)_PROXY (an installer that reads
    #: its own: npm's `npm_config_https_proxy`, Yarn Berry's `YARN_HTTPS_PROXY`).
    proxy_variables: tuple[str, ...] = ()
    #: Fixed variables for the set-up command (where its caches go, no prompts).
    env: dict[str, str] = field(default_factory=dict)
    #: Fixed variables the committed image keeps, so the tests find what set-up left.
    image_env: dict[str, str] = field(default_factory=dict)
    #: Folders set-up writes inside the tree that belong to the environment: a bare name is
    #: looked for at any depth (the outermost ones), a path with a slash at the root only.
    tree_dirs: tuple[str, ...] = ()
    #: Folders inside those (`FOLDER/NAME`) that test tools write while the tests run, under
    #: the sandbox's read-only root: each is a link to the run's /tmp (sandbox/setup/move_dirs.py).
    scratch: tuple[str, ...] = ()
    #: How the fence's refusal names the ways to widen it.
    widen_hint: str = ""
    #: The files whose content decides what set-up installs, relative to the root: names, or
    #: globs (`**/go.mod` at any depth). The set-up image's cache key hashes exactly these.
    inputs: tuple[str, ...] = ()
    #: What the build reads from the user's checkout (None: nothing), part of the key.
    from_checkout: Callable[[Path], FromCheckout | None] | None = None
    #: Variables read from the user's own configuration on this machine when set-up runs (a
    #: Maven settings.xml's mirror and its server's credentials), as if set in the environment:
    #: one of `url_variables` or `passed` is passed as the host's would be, any other as if
    #: named with --setup-env (masked, searched for before the commit). Names in the key, never
    #: values. None: none.
    host_config: Callable[[], Mapping[str, str]] | None = None
    #: Whether the key takes the installer's own fields (a pip key predates them, and stays).
    keyed_by_fields: bool = True
    #: Whether the command writes under DEPS_DIR of its own accord (a tool layer's install).
    writes_deps_dir: bool = False

    def key_parts(self) -> tuple[str, ...]:
        """What the cache key adds for this installer's fields (see `keyed_by_fields`)."""
        if not self.keyed_by_fields:
            return ()
        env = [f"{k}={v}" for k, v in sorted(self.env.items())]
        image = [f"{k}={v}" for k, v in sorted(self.image_env.items())]
        scratch = ("|", *self.scratch) if self.scratch else ()
        return (self.name, *env, "|", *image, "|", *self.tree_dirs, *scratch)

    @property
    def needs_deps_dir(self) -> bool:
        """Whether set-up writes under DEPS_DIR (made writable for it before it runs)."""
        inside = (*self.env.values(), *self.image_env.values())
        writes = self.writes_deps_dir or bool(self.tree_dirs)
        return writes or any(v.startswith(DEPS_DIR) for v in inside)


#: A given set-up command's where no language package knows the repository: no registry is
#: let through unless the user names one (--setup-network full lets any).
PLAIN = Installer(
    name="command",
    hosts=(),
    url_variables=(),
    widen_hint="--setup-network full allows any host",
)
