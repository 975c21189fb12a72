"""How a sandbox is locked down: hardened by default, each switch overridable by configuration."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: Where a container's working copy lives (sandbox/container/placement.py): found by a probe
#: (auto), bind-mounted from this machine, or copied in through the Docker API.
Placement = Literal["auto", "mounted", "copied"]
PLACEMENTS: tuple[Placement, ...] = ("auto", "mounted", "copied")


@dataclass(frozen=True, kw_only=True)
class Isolation:
    """The container's hardening switches. The defaults are the safe ones.

    >>> Isolation().network
    False
    >>> Isolation(network=True).weakened()
    ['network']
    """

    network: bool = False  # only loopback; names do not resolve
    read_only_root: bool = True  # writable: /workspace and a size-capped /tmp only
    drop_capabilities: bool = True  # cap_drop ALL
    no_new_privileges: bool = True  # setuid binaries cannot gain privileges
    run_as_root: bool = False  # commands run as uid 1000 unless this is set

    def weakened(self) -> list[str]:
        """The switches set away from their safe default, for the report and a warning."""
        safe = Isolation()
        return [
            name for name in self.__dataclass_fields__ if getattr(self, name) != getattr(safe, name)
        ]


#: The default: every switch on its safe side (frozen, so one shared value is safe).
HARDENED = Isolation()
