"""pip as the set-up phase sees it (sandbox/setup/installer.py): PyPI's hosts, the variables
naming another index, the files that decide what it installs, and the version a build reads
from git (vcs_version.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sandbox.ecosystems.python.vcs_version import (
    PKG_INFO_READERS,
    VcsVersion,
    asks_git_for_version,
    checkout_version,
)
from sandbox.setup.installer import Installer

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
#: What decides a Python set-up: the package's metadata, requirement and lock files, and where
#: else the inference (setup_infer.py) reads requirements from.
INPUTS = (
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "requirements-dev.txt",
    "requirements-test.txt",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "uv.lock",
    "pdm.lock",
    "environment.yml",
    "*requirements*.txt",
    "requirements/*.txt",
    "requirements/*.in",
    "tests/requirements*.txt",
    "tox.ini",
    *("GNUmakefile", "makefile", "Makefile"),  # CI's build steps (ci_build.py) run its targets
)


def version_from_git(repo: Path) -> VcsVersion | None:
    """The checkout's version, where the build reads it from git; else None."""
    if not asks_git_for_version(repo) or (version := checkout_version(repo)) is None:
        return None
    pkg_info = repo / "PKG-INFO"
    if not (pkg_info.exists() or pkg_info.is_symlink()) and asks_git_for_version(
        repo, PKG_INFO_READERS
    ):
        return dataclasses.replace(version, pkg_info=True)
    return version


PIP = Installer(
    name="pip",
    hosts=PYPI_HOSTS,
    url_variables=INDEX_VARIABLES,
    passed=("PIP_TRUSTED_HOST",),
    widen_hint=(
        "an index named in PIP_INDEX_URL or UV_INDEX_URL joins them; --setup-network full "
        "allows any host"
    ),
    inputs=INPUTS,
    from_checkout=version_from_git,
    keyed_by_fields=False,
)
