"""Corepack's package managers (Yarn, pnpm, a pinned npm) as set-up tools (sandbox/setup/tool.py):
each release is installed once, by `corepack install -g <name>@<version>` alone on an empty tree,
into a cached layer that every project asking for that release starts from.

The layer's install runs behind the same fence as a project's set-up, with the Node installer's
variables (COREPACK_NPM_REGISTRY, COREPACK_INTEGRITY_KEYS, the proxy's), and a hash that
`packageManager` pins is checked as corepack downloads (the hash is in the command, so in the
key; the tag and the set-up line name the version alone). The release lands in COREPACK_HOME on the
image's disk (sandbox/ecosystems/node/image.py), made corepack's default (`-g`); the layer keeps
the installer's image variables, COREPACK_ENABLE_NETWORK=0 among them, so the project's own
set-up on it and the tests after find that release with corepack offline.

Its key (sandbox/setup/cache.py) is the Node image's id, the command (name, version, hash), the
fence (its hosts, the registry variables' names) and the installer's fixed variables. A version
that is not exact (`pnpm@10`, `yarn@stable`: corepack's default where nothing names one) is
resolved when the layer is built, and kept until the layer is removed.
"""

from __future__ import annotations

import dataclasses
import shlex

from sandbox.setup.installer import Installer
from sandbox.setup.tool import SetupTool


def corepack_tool(spec: str, *, why: str, installer: Installer) -> SetupTool:
    """`spec` ("pnpm@9.15.0", "yarn@1", "pnpm@9.15.0+sha512.ab") as a set-up tool whose layer
    has `installer`'s fence and variables, and none of the project's tree folders or inputs.

    >>> from sandbox.setup.installer import PLAIN
    >>> t = corepack_tool("pnpm@9.15.0+sha512.ab", why="package.json", installer=PLAIN)
    >>> t.install, t.describe(), t.slug
    ('corepack install -g pnpm@9.15.0+sha512.ab', 'pnpm 9.15.0 (package.json)', '9.15.0')
    """
    name, _, version = spec.partition("@")
    layer = dataclasses.replace(installer, tree_dirs=(), scratch=(), inputs=(), from_checkout=None)
    return SetupTool(
        name=name, version=version.partition("+")[0], why=why,
        install=f"corepack install -g {shlex.quote(spec)}", installer=layer,
    )  # fmt: skip
