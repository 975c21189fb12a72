"""A tool set-up installs before the project's own dependencies (poetry, pdm, uv), as data.

Such a tool is the same for every project that asks for the same version, so it is installed
once, on an empty tree, into an image of its own: the tool layer (sandbox/setup/tool_layer.py),
keyed like any set-up image by its base image, its command (name and version) and its network.
A project's set-up then starts from that layer and only installs the project's own dependencies.
Nothing of the repository under repair is in the layer: it is built before the project's set-up,
from an empty folder, and a later set-up's changes land in that set-up's own image only.

Each language package makes its own (Python's in sandbox/ecosystems/python/lock_tools.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.setup.installer import DEPS_DIR, Installer

#: Where tools live in their layer: under DEPS_DIR, which set-up may write (root's /opt is not).
TOOLS_DIR = f"{DEPS_DIR}/tools"


@dataclass(frozen=True, kw_only=True)
class SetupTool:
    """One tool at one version, how it is installed, and why that version."""

    name: str
    #: A version ("2.5.1"), or the project's constraint where no pinned default meets it.
    version: str
    #: Why that version: "the pinned default", "pyproject.toml's requires-poetry ==2.4.1".
    why: str
    #: The command that installs it at `home`, run on an empty tree behind the set-up fence.
    install: str
    #: The registry it comes from: hosts the fence lets through, the index variables.
    installer: Installer

    @property
    def home(self) -> str:
        """Where the layer holds it."""
        return f"{TOOLS_DIR}/{self.name}-{self.slug}"

    @property
    def slug(self) -> str:
        """The version as a path and image tag may hold it.

        >>> from sandbox.setup.installer import PLAIN
        >>> SetupTool(name="uv", version=">=0.5,<1", why="", install="", installer=PLAIN).slug
        'ge0.5_lt1'
        """
        text = self.version.replace(">=", "ge").replace("<=", "le").replace("==", "")
        text = (
            text.replace(">", "gt").replace("<", "lt").replace("~=", "compat").replace("!=", "ne")
        )
        return "".join(c if c.isalnum() or c in ".-" else "_" for c in text)[:60] or "any"

    def inline(self, command: str, *, home: str) -> str:
        """`command` with the tool installed before it at `home`, for a backend with no image to
        layer on (the local one): the set-up of before the layers.

        >>> from sandbox.setup.installer import PLAIN
        >>> home = "/opt/worker-deps/tools/uv-1"
        >>> t = SetupTool(name="uv", version="1", why="", install=f"mk {home}", installer=PLAIN)
        >>> t.inline(f"{home}/bin/uv export", home="/tmp/x")
        'mk /tmp/x && /tmp/x/bin/uv export'
        """
        return f"{self.install} && {command}".replace(self.home, home)

    def describe(self) -> str:
        """ "uv 0.13.9 (the pinned default)"."""
        return f"{self.name} {self.version} ({self.why})"
