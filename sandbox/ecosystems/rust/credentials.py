"""Registry tokens from the user's own cargo credentials file: `$CARGO_HOME/credentials.toml`
(or the older `credentials`), `[registry] token` for crates.io and `[registries.<name>] token`
for a registry of theirs.

The file is the user's, read on this machine; the repository's own files are never read for
it. Its values are read when set-up runs (an installer's `host_config`), not when the plan is
made: the plan holds the variables' names alone (CARGO_REGISTRY_TOKEN,
CARGO_REGISTRIES_<NAME>_TOKEN), which `cargo fetch` reads its tokens from. sandbox/setup/cache.py
(`with_host_config`) passes each value as if it were named with --setup-env: masked in
set-up's log, searched for before the set-up image is committed. The build that follows the
fetch runs the repository's build scripts and gets none of them (setup_infer.py unsets them).
A token already in the environment wins over the file's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

FILES = ("credentials.toml", "credentials")


def token_variables(home: Path | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The tokens of the user's credentials file in `home` (their CARGO_HOME), as the variables
    cargo reads them from; those set in `environ` already are left to it. {} when none."""
    found: dict[str, str] = {}
    data = _read(home)
    registry = data.get("registry")
    if isinstance(registry, dict) and isinstance(registry.get("token"), str):
        found["CARGO_REGISTRY_TOKEN"] = registry["token"]
    for name, table in sorted((data.get("registries") or {}).items()):
        if isinstance(table, dict) and isinstance(table.get("token"), str):
            found[f"CARGO_REGISTRIES_{name.upper().replace('-', '_')}_TOKEN"] = table["token"]
    return {k: v for k, v in found.items() if v and not environ.get(k)}


def token_names(home: Path | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """The names alone of `token_variables` (what a plan may hold)."""
    return tuple(token_variables(home, environ))


@dataclass(frozen=True)
class CredentialTokens:
    """`token_variables(home, environ)` when called: an installer's `host_config`, which reads
    the file when set-up runs. Its repr never shows the environment."""

    home: Path
    environ: Mapping[str, str] = field(repr=False, compare=False)

    def __call__(self) -> dict[str, str]:
        return token_variables(self.home, self.environ)


def _read(home: Path | None) -> dict[str, Any]:
    if home is None:
        return {}
    for name in FILES:
        try:
            return tomllib.loads((home / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
    return {}
