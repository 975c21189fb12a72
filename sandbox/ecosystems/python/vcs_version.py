"""The version the user's checkout has, for builds that ask git for it.

setuptools-scm, hatch-vcs, pdm-backend's scm source, poetry-dynamic-versioning and pbr read the
project's version from git when it is built. The set-up's copy of the tree has no `.git` (history
is where answers leak), so their builds fail (`LookupError: setuptools-scm was unable to detect
version`). Two ways out: a `.git` holding the one commit and its tags, or the version itself,
handed over through the variables those tools document for builds without git (the way distro
packagers build from a tarball). We take the second: nothing of the history enters the sandbox,
not even a commit message, and one string is all the build needs.

The version is read from the user's repository with `user_git` (nothing of its config runs a
program) and shaped as setuptools-scm's default scheme shapes it: the tag's version on a tagged
commit, else the next patch release with `.devN` (N commits since the tag), else `0.1.devN`
without tags. The local part (`+g<sha>`) is left out: the set-up image is cached by the nearest
tag, not by commit, so a red build on every new commit does not set up anew.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.worktree.user_git import user_git

#: What a project's build files say when its version comes from version control.
VCS_BACKENDS = (
    "setuptools_scm",
    "setuptools-scm",
    "hatch-vcs",
    "hatch_vcs",
    "versioningit",
    "poetry-dynamic-versioning",
    "poetry_dynamic_versioning",
    "dunamai",
    "pbr",
    'source = "scm"',  # pdm-backend's [tool.pdm.version]
    "use_scm_version",
    *(PKG_INFO_READERS := ("setuptools-git-versioning", "setuptools_git_versioning")),
)
BUILD_FILES = ("pyproject.toml", "setup.cfg", "setup.py")
MAX_BYTES = 1_000_000
_TAG_VERSION = re.compile(
    r"^[^\d]*?(\d+(?:\.\d+)*)((?:[-_.]?(?:alpha|beta|a|b|c|rc|pre|post|dev)[-_.]?\d*)*)$", re.I
)
_SPELLING = {"alpha": "a", "beta": "b", "c": "rc", "pre": "rc"}
_DESCRIBE = re.compile(r"^(?P<tag>.+)-(?P<distance>\d+)-g(?P<sha>[0-9a-f]+)$")


@dataclass(frozen=True, kw_only=True)
class VcsVersion:
    """The version handed to the set-up's build, and what decides the cached image."""

    version: str
    tag: str | None  # the nearest tag it was read from; None without tags
    distance: int  # commits since that tag (or since the root, without tags)
    #: Whether the build reads it from a `PKG-INFO` alone (setuptools-git-versioning has no
    #: variable for a build without git; it reads an sdist's `Version:` line first).
    pkg_info: bool = False

    @property
    def key(self) -> str:
        """The part of the version that decides the set-up image: the nearest tag."""
        return f"tag={self.tag or ''}"

    def env(self) -> dict[str, str]:
        """The variables each tool reads when there is no git to ask."""
        return {
            "SETUPTOOLS_SCM_PRETEND_VERSION": self.version,  # setuptools-scm, hatch-vcs
            "VCS_VERSIONING_PRETEND_VERSION": self.version,  # setuptools-scm 10 underneath
            "PDM_BUILD_SCM_VERSION": self.version,  # pdm-backend
            "POETRY_DYNAMIC_VERSIONING_BYPASS": self.version,
            "PBR_VERSION": self.version,
            "VERSIONINGIT_VERSION": self.version,
            "DUNAMAI_VERSION": self.version,
        }

    def files(self) -> dict[str, str]:
        """The files the build reads it from, written into set-up's copy where it has none."""
        if not self.pkg_info:
            return {}
        return {"PKG-INFO": f"Metadata-Version: 1.0\nVersion: {self.version}\n"}


def asks_git_for_version(repo: Path, markers: tuple[str, ...] = VCS_BACKENDS) -> bool:
    """Whether the project's build files name a tool that reads the version from git (`markers`:
    those tools' names; read, never run; links and files over 1 MB are not read)."""
    for name in BUILD_FILES:
        path = repo / name
        if path.is_symlink() or not path.is_file():
            continue
        try:
            if path.stat().st_size > MAX_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if any(marker in text for marker in markers):
            return True
    return False


def checkout_version(repo: Path) -> VcsVersion | None:
    """The version `repo`'s HEAD has by its tags, None where `repo` is no git checkout (an
    sdist's tree has PKG-INFO, which those tools read instead: nothing must override it)."""
    head = user_git(repo, "rev-parse", "--verify", "-q", "HEAD")
    if head.returncode != 0:
        return None
    described = user_git(repo, "describe", "--tags", "--long", "--abbrev=12", "--match", "*[0-9]*")
    match = _DESCRIBE.match(described.stdout.decode("utf-8", "replace").strip())
    release = _release(match["tag"]) if match else None
    if match is None or release is None:
        count = user_git(repo, "rev-list", "--count", "HEAD")
        distance = int(count.stdout.strip() or 0) if count.returncode == 0 else 0
        return VcsVersion(version=f"0.1.dev{distance}", tag=None, distance=distance)
    distance = int(match["distance"])
    return VcsVersion(
        version=release if distance == 0 else f"{_next(release)}.dev{distance}",
        tag=match["tag"],
        distance=distance,
    )


def _release(tag: str) -> str | None:
    """A tag as a PEP 440 version (`v1.2.3` -> `1.2.3`, `release-2.0rc1` -> `2.0rc1`), None when
    it is none.

    >>> _release("v1.2.3"), _release("1.0.0-rc.1"), _release("latest")
    ('1.2.3', '1.0.0rc1', None)
    """
    match = _TAG_VERSION.match(tag.strip())
    if match is None:
        return None
    parts = re.findall(r"(alpha|beta|rc|pre|post|dev|a|b|c)[-_.]?(\d*)", match[2].lower())
    return match[1] + "".join(_SPELLING.get(word, word) + (n or "0") for word, n in parts)


def _next(release: str) -> str:
    """The release a dev version leads to: the last number up by one, past any pre-release.

    >>> _next("1.2.3"), _next("2.0rc1"), _next("4")
    ('1.2.4', '2.0', '5')
    """
    numbers = re.match(r"\d+(?:\.\d+)*", release)
    assert numbers is not None
    parts = numbers[0].split(".")
    if numbers[0] != release and not release[len(numbers[0]) :].startswith("post"):
        return numbers[0]  # 2.0rc1 leads to 2.0
    return ".".join([*parts[:-1], str(int(parts[-1]) + 1)])
