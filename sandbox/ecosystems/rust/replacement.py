"""The mirror the user puts in crates.io's place: `[source.crates-io] replace-with` in their own
cargo configuration (~/.cargo/config.toml, never the repository's).

A developer behind a company mirror writes

    [source.crates-io]
    replace-with = "mirror"
    [source.mirror]
    registry = "sparse+https://crates.corp.example/index/"   # or a git index: "https://..."

(or names a `[registries.mirror] index = "..."` in `replace-with`). Taken: set-up's fence
lets the mirror's host through *instead of* crates.io's (its summary says so), and the
replacement is written into the sandbox's own CARGO_HOME (`config_toml`, by set-up's
command, so the set-up image keeps it): `cargo fetch` reads the mirror, and every offline test
run after it finds the crates in the mirror's cache, where cargo put them. Nothing is written
into the repository's tree.

Not taken, said in the plan's notes, set-up going to crates.io: a `local-registry` or
`directory` source (a folder on the user's machine, which no sandbox sees), a `git` source, a
replacement naming a source the configuration does not define, a URL with credentials in it
(the command and the image are no place for a secret: a registry's token goes by
CARGO_REGISTRIES_<NAME>_TOKEN), a URL with no host.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True, kw_only=True)
class Replacement:
    """crates.io replaced by the user's mirror `name` at `url` (its index; host `host`)."""

    name: str
    url: str
    host: str
    #: Which table defines it: "source" (`registry = url`) or "registries" (`index = url`).
    table: str

    @property
    def config_toml(self) -> str:
        """The replacement as cargo's configuration says it (written into CARGO_HOME)."""
        key = "registry" if self.table == "source" else "index"
        name = json.dumps(self.name)  # a TOML basic string: JSON's escapes are TOML's
        return (
            f"[source.crates-io]\nreplace-with = {name}\n"
            f"[{self.table}.{name}]\n{key} = {json.dumps(self.url)}\n"
        )

    @property
    def said(self) -> str:
        """The mirror as the set-up's summary names it."""
        return f"from your crates.io mirror {self.name!r} ({self.url}), not crates.io"


def user_replacement(config: dict[str, Any]) -> tuple[Replacement | None, str | None]:
    """The mirror `config` (the user's cargo configuration, parsed) puts in crates.io's place,
    or None and why not (None and None: it replaces nothing)."""
    sources = config.get("source")
    crates_io = sources.get("crates-io") if isinstance(sources, dict) else None
    name = crates_io.get("replace-with") if isinstance(crates_io, dict) else None
    if not isinstance(name, str) or not name:
        return None, None
    said = f"your ~/.cargo/config.toml replaces crates.io with {name!r}"
    source = sources.get(name) if isinstance(sources, dict) else None
    registries = config.get("registries")
    registry = registries.get(name) if isinstance(registries, dict) else None
    if isinstance(source, dict):
        table, url = "source", source.get("registry")
        for kind in ("local-registry", "directory"):
            if kind in source:
                return None, (
                    f"{said}, a {kind} at {source[kind]}: a folder on this machine, which no "
                    "sandbox sees; set-up goes to crates.io"
                )
        if "git" in source:
            return None, f"{said}, a git source: not taken; set-up goes to crates.io"
    elif isinstance(registry, dict):
        table, url = "registries", registry.get("index")
    else:
        return None, f"{said}, which it does not define; set-up goes to crates.io"
    if not isinstance(url, str):
        return None, f"{said}, which names no registry URL; set-up goes to crates.io"
    parts = urlsplit(url.removeprefix("sparse+"))
    if parts.username or parts.password:
        return None, (
            f"{said}, whose URL holds credentials: not taken (a token goes by "
            "CARGO_REGISTRIES_<NAME>_TOKEN); set-up goes to crates.io"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None, f"{said}, at {url}: no http(s) host; set-up goes to crates.io"
    return Replacement(name=name, url=url, host=parts.hostname.lower(), table=table), None
