"""The set-up a Rust developer runs on a fresh clone: `cargo fetch`, then the tests built once,
through the set-up fence.

Read, never run: the Cargo.toml files (through sandbox/worktree/repo_files.py). The fence's
only way out is the crate registry: crates.io's sparse index and its download host. A git
dependency, or a registry only the repository's `.cargo/config.toml` names, is reported in
the plan's notes, not let through (the repository is not the one to widen the fence; the user
is, with --setup-network full).

`cargo fetch` (`--locked` where Cargo.lock is committed: the versions CI tested, never a new
resolve) puts the index and the crates in CARGO_HOME, on the image's disk (image.py), and so
in the committed set-up image; a repository with no lockfile gets the Cargo.lock cargo
resolves (the newest versions its rust-version builds), written into the tree, kept with the
image, so that every test run builds the same versions. Then `cargo test --no-run` with the
test command's own selection (its features and packages) compiles every dependency of every
test target into cargo's target folder, on the image's disk (image.py: TARGET_DIR), which each
test run's container gets a writable copy of, its own: the agent's first `cargo test` compiles
the project's own crates, not its dependencies. A project that does not compile yet still
sets up (the build's failure is the tests' to report: `|| true` after a fetch that
succeeded). A project with no dependency needs no set-up.

The registries the *user* names are let through too: each `CARGO_REGISTRIES_<NAME>_INDEX` set
in the environment (passed, its host allowed), and each `[registries.<name>] index` of the
user's own `$CARGO_HOME/config.toml` (~/.cargo/config.toml: its URL given to set-up as
`CARGO_REGISTRIES_<NAME>_INDEX`, its host allowed). A registry's downloads must come from its
index's host (a `dl` elsewhere: --setup-network full). Their tokens
(`CARGO_REGISTRIES_<NAME>_TOKEN`, `CARGO_REGISTRY_TOKEN`, from the environment or from their own
`$CARGO_HOME/credentials.toml`: credentials.py) reach `cargo fetch` alone: the build that
follows, whose build scripts are the repository's code, runs without them.

A mirror the user puts in crates.io's place (`[source.crates-io] replace-with` in their own
configuration, replacement.py) is let through instead of crates.io, and the replacement is
written into the sandbox's CARGO_HOME before the fetch (never into the tree): the set-up image
keeps it, so the offline test runs read the crates from the mirror's cache.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import tomllib

from sandbox.ecosystems.rust.choice import DEPENDENCY_TABLES, manifests
from sandbox.ecosystems.rust.command import CargoTest
from sandbox.ecosystems.rust.credentials import CredentialTokens, token_names
from sandbox.ecosystems.rust.image import CARGO_HOME, TARGET_DIR
from sandbox.ecosystems.rust.replacement import Replacement, user_replacement
from sandbox.setup.installer import Installer
from sandbox.setup.plan import SetupPlan
from sandbox.worktree.repo_files import RepoFiles

PUBLIC_HOSTS = ("index.crates.io", "static.crates.io")
RUST_INSTALLER = Installer(
    name="cargo",
    hosts=PUBLIC_HOSTS,
    url_variables=(),
    # A resolve (no committed Cargo.lock) picks versions the project's rust-version builds, as
    # resolver v3 does by default (cargo 1.84+; older cargo ignores the variable): the newest
    # trybuild needs Rust 1.88, and thiserror 2.0.19 gets 1.85 (bench/corpus-rust.toml).
    env={
        "CARGO_TARGET_DIR": TARGET_DIR,
        "CARGO_NET_RETRY": "3",
        "CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS": "fallback",
    },
    # What decides a cargo set-up: every manifest, the lockfile, the toolchain file and cargo's
    # configuration (a registry, a source replacement, build flags). Not build.rs: it changes
    # what compiles, not what is downloaded, and the test run compiles it anew.
    inputs=(
        "**/Cargo.toml",
        "Cargo.lock",
        "rust-toolchain",
        "rust-toolchain.toml",
        ".cargo/config",
        ".cargo/config.toml",
    ),
    widen_hint="--setup-network full allows any host (a git dependency, another registry)",
)


_INDEX_VARIABLE = re.compile(r"CARGO_REGISTRIES_(\w+)_INDEX")
_TOKEN_VARIABLE = re.compile(r"CARGO_REGISTRIES_\w+_TOKEN|CARGO_REGISTRY_TOKEN")


@dataclass(frozen=True, kw_only=True)
class UserCargo:
    """What the user's own cargo configuration and environment change of set-up."""

    installer: Installer
    #: The registries they name, as a Cargo.toml's `registry = "name"` says them.
    registries: set[str]
    #: The mirror they put in crates.io's place, if set-up takes it.
    replacement: Replacement | None = None
    #: What of theirs set-up does not take, and why (a mirror in a folder of their machine).
    notes: tuple[str, ...] = ()
    #: The names of the tokens their credentials file gives (credentials.py), never the values.
    file_tokens: tuple[str, ...] = ()


def user_installer(environ: Mapping[str, str], home: Path | None) -> UserCargo:
    """RUST_INSTALLER with the registries and the crates.io mirror the user names (the module
    docstring)."""
    named = sorted(n for n in environ if _INDEX_VARIABLE.fullmatch(n) and environ[n])
    tokens = sorted(n for n in environ if _TOKEN_VARIABLE.fullmatch(n))
    names = {
        m.group(1).lower().replace("_", "-") for n in named if (m := _INDEX_VARIABLE.fullmatch(n))
    }
    env = dict(RUST_INSTALLER.env)
    config = _user_config(home)
    mirror, why_not = user_replacement(config)
    hosts = [mirror.host] if mirror is not None else list(RUST_INSTALLER.hosts)
    for name, table in sorted((config.get("registries") or {}).items()):
        index = table.get("index") if isinstance(table, dict) else None
        variable = f"CARGO_REGISTRIES_{name.upper().replace('-', '_')}_INDEX"
        if not isinstance(index, str) or variable in named:
            continue
        host = urlsplit(index).hostname or ""
        if not host:
            continue
        env[variable] = index
        hosts.append(host.lower())
        names.add(name.lower())
    installer = replace(
        RUST_INSTALLER,
        hosts=tuple(dict.fromkeys(hosts)),
        url_variables=tuple(named),
        passed=tuple(tokens),
        env=env,
    )
    from_file = token_names(home, environ)
    if from_file and home is not None:
        installer = replace(installer, host_config=CredentialTokens(home, environ))
    notes = (why_not,) if why_not else ()
    return UserCargo(
        installer=installer,
        registries=names,
        replacement=mirror,
        notes=notes,
        file_tokens=from_file,
    )


def _user_config(home: Path | None) -> dict[str, Any]:
    """The user's own cargo configuration (never the repository's), {} when none is read."""
    if home is None:
        return {}
    for name in ("config.toml", "config"):
        try:
            return tomllib.loads((home / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
    return {}


def infer_rust_setup(
    repo: Path,
    test_cmd: str,
    *,
    environ: Mapping[str, str] | None = None,
    cargo_home: Path | None = None,
) -> SetupPlan:
    """`cargo fetch` and `cargo test --no-run` (the module docstring) for a project that
    depends on any crate; none for one that depends on none. `environ` (os.environ by
    default) and `cargo_home` (its CARGO_HOME, else ~/.cargo) name the user's registries."""
    environ = os.environ if environ is None else environ
    if cargo_home is None:
        cargo_home = Path(environ.get("CARGO_HOME") or Path.home() / ".cargo")
    user = user_installer(environ, cargo_home)
    installer = user.installer
    files = RepoFiles(repo)
    found = manifests(files)
    if not found:
        return SetupPlan(command=None, summary="no Cargo.toml", installer=installer)
    sources = tuple(name for name, _ in found)
    count, notes = _dependencies(found, user.registries)
    notes += [*user.notes, *_repository_registries(files)]
    if count == 0:
        return SetupPlan(
            command=None,
            sources=sources,
            notes=tuple(notes),
            summary="nothing to fetch: no Cargo.toml depends on a crate",
            installer=installer,
        )
    locked = files.exists("Cargo.lock")
    parsed = CargoTest.parse(test_cmd)
    flags = [] if parsed is None else _build_flags(parsed)
    fetch = "cargo fetch --locked" if locked else "cargo fetch"
    # The tokens reach the fetch alone: the build runs the repository's build scripts.
    unset = [w for t in (*installer.passed, *user.file_tokens) for w in ("-u", t)]
    build = shlex.join([*(["env", *unset] if unset else []), "cargo", "test", "--no-run", *flags])
    command = f"{fetch} && {{ {build} || true; }}"
    if user.replacement is not None:
        config = f"{CARGO_HOME}/config.toml"
        write = f"printf %s {shlex.quote(user.replacement.config_toml)} > {config}"
        command = f"mkdir -p {CARGO_HOME} && {write} && {command}"
    return SetupPlan(
        command=command,
        sources=(*sources, *(("Cargo.lock",) if locked else ())),
        notes=tuple(notes),
        summary=f"{fetch} ({count} {'dependency' if count == 1 else 'dependencies'} in "
        f"{len(found)} Cargo.toml"
        f"{', as Cargo.lock pins them' if locked else ''}"
        f"{f', {user.replacement.said}' if user.replacement else ''}"
        "), then the tests' dependencies "
        "compiled (cargo test --no-run)",
        installer=installer,
    )


def _build_flags(parsed: CargoTest) -> list[str]:
    """The test command's flags that decide what is built (features, packages, targets)."""
    return [f for f in parsed.cargo_flags() if not f.startswith("--message-format")
            and f != "--no-fail-fast"]  # fmt: skip


def _dependencies(
    found: list[tuple[str, dict[str, Any]]], registries: set[str]
) -> tuple[int, list[str]]:
    count = 0
    notes: list[str] = []
    for name, manifest in found:
        tables: list[Any] = [manifest.get(t) for t in DEPENDENCY_TABLES]
        tables.append((manifest.get("workspace") or {}).get("dependencies"))
        for target in (manifest.get("target") or {}).values():
            if isinstance(target, dict):
                tables += [target.get(t) for t in DEPENDENCY_TABLES]
        for table in tables:
            if not isinstance(table, dict):
                continue
            for crate, spec in table.items():
                if isinstance(spec, dict) and "path" in spec and "git" not in spec:
                    continue  # a crate of the repository's own
                count += 1
                if isinstance(spec, dict) and "git" in spec:
                    notes.append(
                        f"{name}: {crate} is a git dependency ({spec['git']}): the fence lets "
                        "only the crate registry through (--setup-network full for more)"
                    )
                elif isinstance(spec, dict) and str(spec.get("registry", "")).lower() not in (
                    "",
                    *registries,
                ):
                    notes.append(
                        f"{name}: {crate} comes from the registry {spec['registry']!r}: not "
                        "let through unless you name it (CARGO_REGISTRIES_<NAME>_INDEX or your "
                        "~/.cargo/config.toml)"
                    )
    return count, notes


def _repository_registries(files: RepoFiles) -> list[str]:
    notes = []
    for name in (".cargo/config.toml", ".cargo/config"):
        config = files.toml(name)
        if not config:
            continue
        for key in ("registries", "source"):
            if isinstance(config.get(key), dict) and config[key]:
                notes.append(
                    f"{name} names {key} ({', '.join(sorted(config[key]))}): reported, not "
                    "let through (the repository does not widen the fence)"
                )
    return notes
