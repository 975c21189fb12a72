"""The set-up a Go developer runs on a fresh clone: `go mod download`, through the set-up fence.

Read, never run: go.mod and vendor/modules.txt (through sandbox/worktree/repo_files.py). The
fence's only way out is the module proxy (sandbox/setup/network.py): the hosts GOPROXY names
(`https://goproxy.corp,direct`: each URL's host; `direct` and `off` name none, and a VCS host
`direct` would reach stays outside), else the public proxy and its checksum database. The
variables a private proxy's users set (GOPRIVATE, GONOSUMDB, GONOPROXY, GOSUMDB, GOFLAGS,
GOINSECURE, GOAUTH) are passed as they are. The modules land in GOMODCACHE, on the image's disk
(sandbox/ecosystems/go/image.py), and so in the committed set-up image, where the test runs read
them with no network; then the packages the tests import are compiled into a build cache on the
image's disk, which each test run copies into its GOCACHE (image.py: warm_command,
seed_command): the agent's first `go test` compiles what it changed, not the dependencies. A
module with a vendor/ folder downloads nothing: Go builds it with -mod=vendor from the tree,
and its set-up only compiles the vendored packages into the build cache. A module that
requires nothing needs no set-up.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sandbox.ecosystems.go.image import warm_command
from sandbox.ecosystems.go.modules import GoModules, find_modules
from sandbox.setup.installer import Installer
from sandbox.setup.plan import SetupPlan
from sandbox.worktree.repo_files import RepoFiles

PUBLIC_HOSTS = ("proxy.golang.org", "sum.golang.org")
PASSED = ("GOPRIVATE", "GONOSUMDB", "GONOPROXY", "GOSUMDB", "GOFLAGS", "GOINSECURE", "GOAUTH")
GO_INSTALLER = Installer(
    name="go",
    hosts=PUBLIC_HOSTS,
    url_variables=("GOPROXY",),
    passed=PASSED,
    env={"GOTOOLCHAIN": "local"},
    # What decides a Go set-up: every module's requirements and sums, the workspace's, and
    # what a vendoring module says it vendors.
    inputs=("**/go.mod", "**/go.sum", "go.work", "go.work.sum", "**/vendor/modules.txt"),
    widen_hint=(
        "a module proxy named in GOPROXY joins them; --setup-network full allows any host "
        "(and so `direct` fetches from version control)"
    ),
)
#: What the go command says of a module it could not have (set-up's download, a test run), and
#: how it is said back.
_NOT_ON_PROXY = "the module proxy has no {}"
_NOT_DOWNLOADED = "the module {} is not downloaded (set-up did not fetch it)"
_DOWNLOADING = re.compile(r"^go: downloading (\S+) (v\S+)$", re.M)
_NO_DOWNLOAD = re.compile(
    r"pkg/mod/cache\S*: read-only file system|dial tcp|network is unreachable"
)
_MISSING = (
    (re.compile(r"^go: (?:downloading )?(\S+@\S+): reading \S+: (?:404|410) ", re.M),
     _NOT_ON_PROXY),
    (re.compile(r"^go: (\S+@\S+): (?:invalid version|unknown revision)", re.M), _NOT_ON_PROXY),
    (re.compile(r"^go: (\S+@\S+): module lookup disabled by GOPROXY=off", re.M),
     _NOT_DOWNLOADED),
    (re.compile(r"no required module provides package (\S+?)[;:]", re.M),
     "go.mod requires no module that provides the package {}"),
    # The same, as `go test -mod=readonly` says it (the set-up's flag: nothing is added).
    (re.compile(r"cannot find module providing package (\S+?): import lookup disabled", re.M),
     "go.mod requires no module that provides the package {}"),
    (re.compile(r"missing go\.sum entry for module providing package (\S+)", re.M),
     "go.sum has no entry for the module providing the package {}"),
)  # fmt: skip


def infer_go_setup(repo: Path) -> SetupPlan:
    """`go mod download` for a module that requires others and vendors none, then the build
    cache the test runs start from (image.py: warm_command), also for a module that vendors
    its own (from vendor/, no network); of the modules a run tests (modules.py: `tested`),
    each one's in its folder."""
    modules = find_modules(repo)
    if modules.beyond_root:
        return _several(repo, modules)
    files = RepoFiles(repo)
    own = modules.at(".")
    if own is None:
        return SetupPlan(command=None, summary="no go.mod", installer=GO_INSTALLER)
    mod = own.mod
    if own.vendored:
        return SetupPlan(
            command=warm_command(),
            sources=("go.mod", "vendor/modules.txt"),
            summary="nothing to download: vendor/ holds the modules (built with -mod=vendor); "
            "the packages the tests import compiled into the build cache",
            installer=GO_INSTALLER,
        )
    if not mod.requires:
        return SetupPlan(
            command=None,
            sources=("go.mod",),
            summary="nothing to download: go.mod requires no module",
            installer=GO_INSTALLER,
        )
    return SetupPlan(
        command=f"go mod download && {warm_command()}",
        sources=("go.mod", *(("go.sum",) if files.exists("go.sum") else ())),
        summary=f"go mod download ({len(mod.requires)} modules required in go.mod), then the "
        "packages the tests import compiled into the build cache",
        installer=GO_INSTALLER,
    )


def _several(repo: Path, modules: GoModules) -> SetupPlan:
    """Set-up of several modules: `go mod download` in each that requires modules and vendors
    none (a module of the repository it requires is replaced by its folder or in go.work,
    else it comes from the proxy like any other), then all of them warmed."""
    files = RepoFiles(repo)
    sources = [f for f in ("go.work", "go.work.sum") if files.exists(f)]
    downloads: list[str] = []
    required = 0
    for module in modules.tested:
        base = "" if module.folder == "." else module.folder + "/"
        sources += [f"{base}{f}" for f in ("go.mod", "go.sum") if files.exists(f"{base}{f}")]
        if module.vendored:
            sources.append(f"{base}vendor/modules.txt")
        elif module.mod.requires:
            required += len(module.mod.requires)
            downloads.append(f"(cd {shlex.quote(module.folder)} && go mod download)")
    tested = modules.tested
    named = ", ".join(m.folder for m in tested)
    warmed = [m.folder for m in tested if m.vendored or m.mod.requires]
    if not warmed:
        return SetupPlan(
            command=None,
            sources=tuple(sources),
            summary=f"nothing to download in the {len(tested)} modules ({named}): "
            "none requires a module",
            installer=GO_INSTALLER,
        )
    return SetupPlan(
        command=" && ".join([*downloads, warm_command(warmed)]),
        sources=tuple(sources),
        summary=f"go mod download in {len(downloads)} of {len(tested)} modules "
        f"({named}; {required} requires), then the packages their tests import compiled "
        "into the build cache",
        installer=GO_INSTALLER,
    )


def missing_modules(output: str) -> list[str]:
    """Each module (or package) the go command said it could not have, once each:
    `the module proxy has no example.com/gone@v1.0.0`; in a test run, a module it set out to
    download (`go: downloading m v1.0.0`) where the module cache cannot be written or the
    network reached (the sandbox's), as set-up left it out."""
    found: dict[str, str] = {}
    for pattern, said in _MISSING:
        for match in pattern.finditer(output):
            found.setdefault(match.group(1), said.format(match.group(1)))
    if _NO_DOWNLOAD.search(output):
        for match in _DOWNLOADING.finditer(output):
            name = f"{match.group(1)}@{match.group(2)}"
            found.setdefault(name, _NOT_DOWNLOADED.format(name))
    return list(found.values())
