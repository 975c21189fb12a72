"""Which Rust a project gets: what it asks for, and the toolchain a source here has.

What a project asks, first found wins (rustup's own order of precedence, then the
least-version hints): `rust-toolchain.toml`'s `[toolchain] channel` or a bare
`rust-toolchain` file (a pin); else the CI workflow's toolchain step (`dtolnay/rust-toolchain@1.80`
or its `toolchain:` input, `actions-rs/toolchain`'s `toolchain:`, a `rustup toolchain install`,
`rustup default` or `rustup override set` line: a pin too; a release or `stable`, never a
channel such as `nightly`: `_ci`); else `.tool-versions`' `rust` line;
else the greatest `rust-version` of the root Cargo.toml, its `[workspace.package]` and its
members' (a minimum). A pin `stable` (or none at all) is the newest there is; `1.80` or
`1.80.1`, that release or, where no source has it, the lowest newer one (a release newer than
asked builds what the older one did: Rust's stability promise), the pin named as passed over;
a minimum, the lowest release that satisfies it: the one whose behaviour CI's oldest job
checks. A project that depends on crates gets no release whose cargo cannot reach crates.io
here (1.63: no sparse index), the next one instead, the first named as passed over. A
channel no source has (`nightly`, `beta`, a dated one) or a release newer than any:
`WrongRust`, exit 6, naming what was asked and what exists.

The sources are Debian's packages (SOURCES; Debian's mirror is reachable for the image build
only, image.py) and, when the user names one (RUSTUP_DIST_SERVER), their rustup dist server
(dist.py, dist_image.py). Debian's first, offline-first: the server is asked only for what
Debian's packages lack, a pin whose release line no package has (`1.77`, `1.77.2`: that exact
toolchain beats Debian's newer release that would merely build it), a channel (`nightly`,
`beta`, a dated one) or a minimum newer than any package. A server that does not have it (or
does not answer) is named in the line, and the choice is Debian's, or WrongRust naming both.
Each toolchain is its own image, built once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import tomllib

from sandbox.ecosystems.rust.dist import (
    DistToolchain,
    DistUnavailable,
    dist_server,
    server_toolchain,
)
from sandbox.ecosystems.rust.errors import WrongRust
from sandbox.worktree.repo_files import RepoFiles

IMAGE_PREFIX = "worker-sandbox:rust"
MAX_MANIFESTS = 200  # workspace members read for their rust-version
Version = tuple[int, int, int]


@dataclass(frozen=True)
class Source:
    """A Rust release an image can be built with: Debian packages, from which suite."""

    version: Version
    packages: tuple[str, ...]  # `apt-get install` arguments (pinned where a suite has several)
    apt_line: str  # the sources.list line the packages come from
    said: str  # the source in the user's words

    @property
    def image(self) -> str:
        return rust_image_name(dotted(self.version, line=True))


_BOOKWORM = "deb http://deb.debian.org/debian bookworm main"
_SECURITY = "deb http://deb.debian.org/debian-security bookworm-security main"
#: The releases this project's images are built from, oldest first: bookworm's `rustc` and
#: `cargo` (1.63), its `rustc-web`/`cargo-web` of the point release (1.85) and of the security
#: suite (1.96). All on the default (bookworm) sandbox image, so the image's C toolchain and
#: libraries are the sandbox's own.
SOURCES: tuple[Source, ...] = (
    Source((1, 63, 0), ("rustc", "cargo", "rustfmt"), _BOOKWORM, "Debian bookworm's rustc"),
    Source((1, 85, 0), ("rustc-web=1.85.0+dfsg3-1~deb12u3", "cargo-web=1.85.0+dfsg3-1~deb12u3",
                        "libstd-rust-web-dev=1.85.0+dfsg3-1~deb12u3",
                        "rustfmt-web=1.85.0+dfsg3-1~deb12u3"), _BOOKWORM,
           "Debian bookworm's rustc-web"),
    Source((1, 96, 0), ("rustc-web", "cargo-web", "rustfmt-web"), _SECURITY,
           "Debian bookworm-security's rustc-web"),
)  # fmt: skip


def dotted(version: Version, *, line: bool = False) -> str:
    return f"{version[0]}.{version[1]}" if line else ".".join(map(str, version))


def rust_image_name(line: str) -> str:
    """`worker-sandbox:rust1.96` for "1.96"."""
    return IMAGE_PREFIX + line


def source_for(line: str) -> Source:
    """The source of release line `line` ("1.96"); WrongRust naming those there are."""
    for source in SOURCES:
        if dotted(source.version, line=True) == line:
            return source
    raise WrongRust(f"no source here has Rust {line}; {_available()}")


def _available() -> str:
    return "available: " + ", ".join(f"{dotted(s.version, line=True)} ({s.said})" for s in SOURCES)


_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> Version | None:
    """`1.80` -> (1, 80, 0); anything else (a channel, a dated toolchain) None."""
    match = _VERSION.match(text.strip())
    if not match:
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)


@dataclass(frozen=True)
class Ask:
    """What a project asks: `text` as written, where, and whether it is a pin (a toolchain
    to use) or a minimum (`rust-version`)."""

    text: str
    where: str
    pin: bool


@dataclass(frozen=True, kw_only=True)
class RustChoice:
    """The Rust (and so the image) a run gets, and why."""

    source: Source | DistToolchain
    why: str
    passed_over: tuple[str, ...] = ()

    @property
    def line(self) -> str:
        return dotted(self.source.version, line=True)

    @property
    def image(self) -> str:
        return self.source.image

    def describe(self, built: str | None = None, built_s: float | None = None) -> str:
        why = "; ".join((self.why, *(f"passed over {p}" for p in self.passed_over)))
        how = (
            ""
            if built is None
            else (", up to date" if built_s is None else f", built once in {built_s:.0f} s")
        )
        return f"Rust {built or self.line} ({why}; {self.source.said}): image {self.image}{how}"

    def to_dict(self, *, built: str | None = None, built_s: float | None = None) -> dict[str, Any]:
        return {
            "version": built or self.line,
            "image": self.image,
            "why": self.why,
            "source": self.source.said,
            "passed_over": list(self.passed_over),
            "built_s": built_s,
        }


#: Cargo reads crates.io's sparse index from 1.68 on; an older one clones the git index from
#: github.com, which the set-up fence never lets through (either 1.17.0's set-up, refused).
SPARSE_SINCE: Version = (1, 68, 0)
DEPENDENCY_TABLES = ("dependencies", "dev-dependencies", "build-dependencies")


def choose_rust(
    repo: Path, *, environ: Mapping[str, str] | None = None, cache: Path | None = None
) -> RustChoice:
    """The Rust for a run on `repo` (the module docstring): Debian's, or the toolchain of the
    user's rustup dist server (RUSTUP_DIST_SERVER in `environ`, os.environ by default) where
    Debian's lack what the project asks. A server not taken or lacking it is said, in the
    choice's line or in the refusal's, never silently passed over."""
    ask = asked(repo)
    fetches = depends_on_crates(RepoFiles(repo))
    debian: RustChoice | None = None
    try:
        debian = pick_rust(ask, fetches=fetches)
    except WrongRust as exc:
        missing = exc
    said = ""
    try:
        server = dist_server(os.environ if environ is None else environ)
    except DistUnavailable as exc:
        server, said = None, str(exc)
    if server is not None and ask is not None and _server_asked(ask, debian):
        try:
            toolchain, said = server_toolchain(
                server, ask.text, pin=ask.pin, oldest=SPARSE_SINCE if fetches else (0, 0, 0),
                cache=cache,
            )  # fmt: skip
        except DistUnavailable as exc:
            toolchain, said = None, str(exc)
        if toolchain is not None:
            how = "that toolchain" if ask.pin else f"its {toolchain.channel}"
            kind = "asks for" if ask.pin else "needs at least"
            return RustChoice(source=toolchain, why=f"{ask.where} {kind} {ask.text}: {how}")
    if server is not None and not said:
        said = f"{server.said}: not needed, {debian.source.said if debian else ''} has it"
    if debian is None:
        raise WrongRust(f"{missing}; {said}" if said else str(missing)) from missing
    return replace(debian, passed_over=(*debian.passed_over, said)) if said else debian


def _server_asked(ask: Ask, debian: RustChoice | None) -> bool:
    """Whether the user's server is asked: Debian's have nothing for `ask`, or `ask` pins a
    release line none of them is."""
    if debian is None:
        return True
    wanted = parse_version(ask.text)
    return ask.pin and wanted is not None and debian.source.version[:2] != wanted[:2]


def depends_on_crates(files: RepoFiles) -> bool:
    """Whether a manifest names a crate that is not a path of the repository's own."""
    for _, manifest in manifests(files):
        tables: list[Any] = [manifest.get(t) for t in DEPENDENCY_TABLES]
        tables.append((manifest.get("workspace") or {}).get("dependencies"))
        for target in (manifest.get("target") or {}).values():
            if isinstance(target, dict):
                tables += [target.get(t) for t in DEPENDENCY_TABLES]
        for table in tables:
            if isinstance(table, dict) and any(
                not (isinstance(spec, dict) and "path" in spec and "git" not in spec)
                for spec in table.values()
            ):
                return True
    return False


def pick_rust(ask: Ask | None, *, fetches: bool = False) -> RustChoice:
    """The source for `ask`; a project that `fetches` crates gets none whose cargo cannot
    reach crates.io here (SPARSE_SINCE), the lowest passed over named."""
    newest = SOURCES[-1]
    if ask is None:
        return RustChoice(source=newest, why="no Rust version asked for: the newest")
    text = ask.text.strip()
    channel = text.split("-", 1)[0]
    if channel == "stable":
        return RustChoice(source=newest, why=f"{text} in {ask.where}: the newest")
    wanted = parse_version(text)
    if wanted is None:
        plain = " (a nightly toolchain: none is here)" if channel in ("nightly", "beta") else ""
        raise WrongRust(
            f"{ask.where} asks for Rust {text!r}{plain}; only stable releases are: {_available()}"
        )
    # A pin's patch release is the line's (1.96.1 runs on 1.96.0: bug fixes alone); a
    # minimum is cargo's to check, and cargo compares the whole version.
    fits = [s for s in SOURCES if (s.version[:2] >= wanted[:2] if ask.pin else s.version >= wanted)]
    unreachable = [s for s in fits if fetches and s.version < SPARSE_SINCE]
    fits = [s for s in fits if s not in unreachable]
    if not fits:
        raise WrongRust(
            f"{ask.where} asks for Rust {text} or newer; the newest here is "
            f"{dotted(newest.version, line=True)}: {_available()}"
        )
    kind = "asks for" if ask.pin else "needs at least"
    chosen = fits[0]
    passed: tuple[str, ...] = ()
    if unreachable:
        passed = (f"Rust {dotted(unreachable[0].version, line=True)} (its cargo has no sparse "
                  "index: crates.io is out of its reach here)",)  # fmt: skip
    elif ask.pin and chosen.version[:2] != wanted[:2]:
        passed = (f"Rust {text} (no source here has it)",)
    how = "the lowest that satisfies it" if not ask.pin else "that release line"
    return RustChoice(source=chosen, why=f"{ask.where} {kind} {text}: {how}", passed_over=passed)


def asked(repo: Path) -> Ask | None:
    """What `repo` asks for, by the precedence of the module docstring; None: nothing."""
    files = RepoFiles(repo)
    for found in (_toolchain_file(files), _ci(files), _tool_versions(files)):
        if found is not None:
            return found
    return _rust_version(files)


def _toolchain_file(files: RepoFiles) -> Ask | None:
    for name in ("rust-toolchain.toml", "rust-toolchain"):
        text = files.read(name)
        if text is None:
            continue
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            data = None
        if isinstance(data, dict):
            channel = (data.get("toolchain") or {}).get("channel")
            if isinstance(channel, str) and channel.strip():
                return Ask(channel.strip(), f"{name}'s channel", pin=True)
            continue
        line = text.strip().splitlines()[0].strip() if text.strip() else ""
        if line:
            return Ask(line, name, pin=True)
    return None


_DTOLNAY = re.compile(r"dtolnay/rust-toolchain@([\w.\-]+)")
_TOOLCHAIN_INPUT = re.compile(r"^\s*toolchain:\s*['\"]?([\w.\-]+)['\"]?\s*$", re.M)
_RUSTUP = re.compile(
    r"rustup\s+(?:toolchain\s+install|install|default|override\s+set)\s+"
    r"(?:--\S+\s+)*['\"]?([\w.\-]+)"
)


def _ci(files: RepoFiles) -> Ask | None:
    """The first release or `stable` a workflow's steps name, in file order (a matrix's
    `${{ }}` names none). A channel there (`nightly`, `beta`, `miri`) is a job beside the tests
    (miri, docs, minimal versions: anyhow's, thiserror's, either's CI), not what they need; a
    project that needs nightly pins it in rust-toolchain.toml."""
    for name in _workflows(files):
        text = files.read(name) or ""
        for pattern in (_DTOLNAY, _TOOLCHAIN_INPUT, _RUSTUP):
            for match in pattern.finditer(text):
                value = match.group(1)
                if value == "stable" or parse_version(value) is not None:
                    return Ask(value, name, pin=True)
    return None


def _workflows(files: RepoFiles) -> list[str]:
    names = [
        f".github/workflows/{n}"
        for n in files.listed(".github/workflows")
        if n.endswith((".yml", ".yaml"))
    ]
    return sorted(names)


def _tool_versions(files: RepoFiles) -> Ask | None:
    for line in (files.read(".tool-versions") or "").splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) >= 2 and words[0] == "rust":
            return Ask(words[1], ".tool-versions", pin=True)
    return None


def _rust_version(files: RepoFiles) -> Ask | None:
    best: tuple[Version, Ask] | None = None
    for name, manifest in manifests(files):
        for value in _rust_versions(manifest):
            version = parse_version(value)
            if version is not None and (best is None or version > best[0]):
                best = (version, Ask(value, f"{name}'s rust-version", pin=False))
    return best[1] if best else None


def _rust_versions(manifest: dict[str, Any]) -> Iterator[str]:
    for table in (manifest.get("package"), (manifest.get("workspace") or {}).get("package")):
        if isinstance(table, dict) and isinstance(table.get("rust-version"), str):
            yield table["rust-version"]


def read_manifest(files: RepoFiles, name: str) -> dict[str, Any] | None:
    return files.toml(name)


def manifests(files: RepoFiles) -> list[tuple[str, dict[str, Any]]]:
    """The root Cargo.toml and its workspace members' (their globs read one level), parsed."""
    root = read_manifest(files, "Cargo.toml")
    if root is None:
        return []
    out = [("Cargo.toml", root)]
    for folder in member_folders(files, root)[:MAX_MANIFESTS]:
        member = read_manifest(files, f"{folder}/Cargo.toml")
        if member is not None:
            out.append((f"{folder}/Cargo.toml", member))
    return out


def member_folders(files: RepoFiles, root: dict[str, Any]) -> list[str]:
    """The workspace's member folders as the root manifest lists them (a trailing `/*` glob
    expanded one level; `exclude` honoured)."""
    workspace = root.get("workspace")
    if not isinstance(workspace, dict):
        return []
    excluded = {str(e).strip("/") for e in workspace.get("exclude") or []}
    out: list[str] = []
    for member in workspace.get("members") or []:
        member = str(member).strip("/")
        if member.endswith("/*"):
            parent = member[:-2]
            out += [f"{parent}/{n}" for n in sorted(files.listed(parent))
                    if files.exists(f"{parent}/{n}/Cargo.toml")]  # fmt: skip
        elif "*" not in member and member not in (".", ""):
            out.append(member)
    return [m for m in dict.fromkeys(out) if m not in excluded]
