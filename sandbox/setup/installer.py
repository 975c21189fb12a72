"""What one ecosystem's installer needs from the set-up around its command.

The set-up phase (sandbox/setup/cache.py) is the same for every ecosystem: a throwaway copy of
the tree, a fenced network, a committed image. What differs is data, given here: the registry
hosts the fence lets through (sandbox/setup/network.py), the host variables the command is told,
the fixed variables it runs with (where its caches go), the folders it writes inside the tree
that belong to the environment (`node_modules`: moved into the image and linked from each copy
of the tree, sandbox/setup/tree_dirs.py), and what the committed image keeps in its own
environment (where Yarn Berry keeps the packages its .pnp.cjs points into). pip's is `PIP`;
Node's is made from the repository's files (sandbox/ecosystems/node/setup_infer.py).

Never a secret here: the values are fixed strings, the same for every user, and part of the
cache key. A host variable's value reaches the command alone, through its exec environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PYPI_HOSTS = ("pypi.org", "files.pythonhosted.org")
#: Variables naming package indexes: their hosts join the allow-list.
INDEX_VARIABLES = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
)
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
    #: How the fence's refusal names the ways to widen it.
    widen_hint: str = ""

    def key_parts(self) -> tuple[str, ...]:
        """What the cache key adds for this installer; nothing for pip (its keys predate it)."""
        if self == PIP:
            return ()
        env = [f"{k}={v}" for k, v in sorted(self.env.items())]
        image = [f"{k}={v}" for k, v in sorted(self.image_env.items())]
        return (self.name, *env, "|", *image, "|", *self.tree_dirs)

    @property
    def needs_deps_dir(self) -> bool:
        """Whether set-up writes under DEPS_DIR (made writable for it before it runs)."""
        inside = (*self.env.values(), *self.image_env.values())
        return bool(self.tree_dirs) or any(v.startswith(DEPS_DIR) for v in inside)


PIP = Installer(
    name="pip",
    hosts=PYPI_HOSTS,
    url_variables=INDEX_VARIABLES,
    passed=("PIP_TRUSTED_HOST",),
    widen_hint=(
        "an index named in PIP_INDEX_URL or UV_INDEX_URL joins them; --setup-network full "
        "allows any host"
    ),
)
