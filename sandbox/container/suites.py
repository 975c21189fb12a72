"""The Debian releases a sandbox image is built on, and the Python each ships.

Debian's own `python3` is what the offline base (debootstrap + `docker import`,
sandbox/container/image.py)
holds, so a Python the project asks for is reachable without a registry exactly when a release in
this table ships it. A newer release joins the table when deb.debian.org serves it and the
Dockerfile builds on it.

>>> suite_for("3.13").image
'worker-sandbox:py3.13'
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Suite:
    """One Debian release: its Python, the sandbox image built on it and that image's base."""

    name: str  # Debian's code name, as debootstrap and the mirror spell it
    python: tuple[int, int]
    patch: int  # the point release Debian ships, for a requires-python that names one
    image: str
    base: str  # made offline by debootstrap when no registry image is at hand

    @property
    def version(self) -> str:
        """Its Python as people write it: "3.13"."""
        return ".".join(map(str, self.python))

    @property
    def python_full(self) -> tuple[int, int, int]:
        """(3, 13, 5)."""
        return (*self.python, self.patch)

    @property
    def registry_base(self) -> str:
        """The registry image with the same Python, preferred when present or pullable."""
        return f"python:{self.version}-slim"

    def describe(self) -> str:
        """ "3.13 (Debian trixie)"."""
        return f"{self.version} (Debian {self.name})"


SUITES = (
    # The default: its image keeps the name every run used before there was a choice.
    Suite(
        name="bookworm",
        python=(3, 11),
        patch=2,
        image="worker-sandbox:latest",
        base="worker-base:bookworm",
    ),
    Suite(
        name="trixie",
        python=(3, 13),
        patch=5,
        image="worker-sandbox:py3.13",
        base="worker-base:trixie",
    ),
)
DEFAULT_SUITE = SUITES[0]


def suite_for(version: str) -> Suite:
    """The release whose Python is `version` ("3.13"); a ValueError naming those there are."""
    for suite in SUITES:
        if suite.version == version.strip():
            return suite
    known = ", ".join(s.describe() for s in SUITES)
    raise ValueError(f"no Debian release here ships Python {version}: known are {known}")
