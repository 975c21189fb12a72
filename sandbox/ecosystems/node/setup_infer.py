"""Infer the set-up a Node developer runs on a fresh clone: the install their lockfile asks for.

Read, never run: package.json (its `packageManager`, its dependencies), the lockfile, .yarnrc.yml
(through sandbox/worktree/repo_files.py: no symlinks, size caps). The command is the one the
maintainers' CI runs:

    package-lock.json, npm-shrinkwrap.json   npm ci
    yarn.lock (Yarn 1)                      yarn install --frozen-lockfile
    yarn.lock (Berry: packageManager yarn@>=2, a .yarnrc.yml, or a Berry lockfile)
                                            yarn install --immutable
    pnpm-lock.yaml                          pnpm install --frozen-lockfile
    no lockfile                             npm install (said: versions are resolved afresh)

`packageManager` (corepack's field) names the tool and its exact version, and wins over the
lockfile's kind. Yarn and pnpm run through the Node image's corepack shims
(sandbox/ecosystems/node/image.py); the release itself (the one named, else the one corepack
would take, made its default) comes from a cached tool layer
(sandbox/ecosystems/node/corepack_tool.py), downloaded from the registry (COREPACK_NPM_REGISTRY,
or the npm registry; inside the fence) once per release into COREPACK_HOME, so the project's
set-up and the tests' `yarn test` find it with corepack offline. npm runs with
`--no-audit --no-fund`, plus the resolution flags the CI's own install gives (`--legacy-peer-deps`:
sandbox/ecosystems/node/ci_install.py, said with its file and line); never `--ignore-engines` (an
engines mismatch is the project's to say).
Install scripts (postinstall, prepare) are the repository's code: they run in the set-up
container, inside its fence, never on the host.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.ecosystems.node.ci_build import ci_node_build
from sandbox.ecosystems.node.ci_install import ci_npm_flags
from sandbox.ecosystems.node.corepack_tool import corepack_tool
from sandbox.ecosystems.node.registries import (
    URL_VARIABLES,
    registry_hosts,
    repository_hosts,
)
from sandbox.ecosystems.python.setup_infer import SetupPlan
from sandbox.setup.installer import CACHE_DIR, DEPS_DIR, Installer
from sandbox.setup.tool import SetupTool
from sandbox.worktree.repo_files import RepoFiles

NPM_FLAGS = "--no-audit --no-fund"
#: Lockfiles by the tool that reads them, in the order one is chosen when several are there.
LOCKFILES = (
    ("pnpm-lock.yaml", "pnpm"),
    ("yarn.lock", "yarn"),
    ("npm-shrinkwrap.json", "npm"),
    ("package-lock.json", "npm"),
)
DEPENDENCY_FIELDS = ("dependencies", "devDependencies", "optionalDependencies")
#: What corepack installs by default, by pnpm lockfile version, when nothing names a version.
PNPM_BY_LOCKFILE = (("9.", "pnpm@10"), ("6.", "pnpm@8"), ("5.", "pnpm@7"))
_PACKAGE_MANAGER = re.compile(r"^(npm|yarn|pnpm)@(\d+)(\.[0-9A-Za-z.-]+)?(\+[\w.=-]+)?$")
_PNPM_LOCK_VERSION = re.compile(r"^lockfileVersion:\s*['\"]?([\d.]+)", re.MULTILINE)
_YARN_PATH = re.compile(r"^yarnPath:", re.MULTILINE)
#: Yarn 1 where nothing names a version, exact: a range ("yarn@1") makes corepack list the
#: releases, which Node 16's and 18's corepack asks repo.yarnpkg.com/tags for, whatever
#: COREPACK_NPM_REGISTRY says (HTTP 500 through the fence: redux-thunk's set-up). An exact
#: version is one download from the registry. 1.22.22 (2024-03) is Yarn 1's last release.
YARN_CLASSIC = "yarn@1.22.22"

#: Variables a Node user may have set, passed to set-up as they are. NODE_EXTRA_CA_CERTS: behind
#: a TLS-inspecting proxy Node (npm, corepack) trusts only its own CAs, not the system's store
#: that set-up mounts at the host's path (/etc/ssl/certs), which is where the variable points.
PASSED = ("COREPACK_INTEGRITY_KEYS", "YARN_UNSAFE_HTTP_WHITELIST", "NODE_EXTRA_CA_CERTS")
#: Where npm, Yarn Berry and pnpm read a proxy besides HTTP(S)_PROXY: told the fence's.
PROXY_VARIABLES = (
    *("npm_config_proxy", "npm_config_https_proxy"),
    *("YARN_HTTP_PROXY", "YARN_HTTPS_PROXY"),
)
#: Caches on the set-up container's disk (not its small /tmp), removed before the commit.
CACHE_ENV = {
    "npm_config_cache": f"{CACHE_DIR}/npm",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
    "YARN_CACHE_FOLDER": f"{CACHE_DIR}/yarn",
    "npm_config_store_dir": f"{CACHE_DIR}/pnpm-store",
    # Through the fence's one proxy: fewer sockets at once (npm 10's, Node 18's and later here; npm
    # 8's proxy agent ignores maxsockets and asks for every tarball at once, which the fence's proxy
    # queues: sandbox/setup/network.py, MAX_CLIENTS), and a dropped one tried again (npm's default,
    # 2 retries after 10 s, lost a tarball of jest's 300 to a reset here). The resets are
    # tinyproxy's: it answers HTTP/1.1 with no `Connection: close` and then closes, so npm reuses a
    # dead socket for an http:// registry. Retried soon (1, 2, 4 ... 32 s), not after npm's factor
    # of 10 (2, 20, 60 s): jest's npm ci took 88 s through the fence, 11 s so.
    "npm_config_maxsockets": "8",
    "npm_config_fetch_retries": "6",
    "npm_config_fetch_retry_mintimeout": "1000",
    "npm_config_fetch_retry_factor": "2",
    # A fetch that stalls is given up after 2 min, not npm's 5: the corpus's js-yaml and
    # class-transformer set-ups (Node 16's npm 8, 2026-12-07) had batches of 8 tarball fetches
    # hang through the fence until the 5-min timeout, each then fetched at its 2nd or 3rd try,
    # and ran past set-up's 900 s. The stalls were the fence's (sandbox/setup/network.py:
    # SIDECAR_PIDS, SIDECAR_ENV); this bounds any stall left.
    "npm_config_fetch_timeout": "120000",
    # Yarn Berry's fetch, likewise (50 at once by default: 17 of sapphiredev/utilities' 1,500
    # tarballs came back as the fence's 500, and the install failed).
    "YARN_NETWORK_CONCURRENCY": "8",
    "YARN_HTTP_RETRY": "5",
    # Node's own fetch through HTTPS_PROXY (the fence's): corepack 0.36 (Node 24 and later's)
    # has no proxy agent of its own and fetches pnpm and Yarn with it; so do install scripts.
    "NODE_USE_ENV_PROXY": "1",
}
#: No prompt, no edit of package.json (the Node image says so too), no look-up of the newest
#: release when a version is named (corepack asks the registry for it otherwise), and Yarn
#: Berry's global cache, which .pnp.cjs points into, on the image's disk (its default is under
#: HOME, which is /tmp for set-up).
COREPACK_ENV = {
    "COREPACK_ENABLE_DOWNLOAD_PROMPT": "0",
    "COREPACK_ENABLE_AUTO_PIN": "0",
    "COREPACK_DEFAULT_TO_LATEST": "0",
    "YARN_GLOBAL_FOLDER": f"{DEPS_DIR}/yarn-berry",
    "YARN_ENABLE_TELEMETRY": "0",
}
WIDEN_HINT = (
    "a registry named in npm_config_registry, YARN_NPM_REGISTRY_SERVER or COREPACK_NPM_REGISTRY, "
    "or in your ~/.npmrc, joins them; --setup-network full allows any host"
)


@dataclass(frozen=True, kw_only=True)
class PackageManager:
    """The tool a project installs with: `version` as `packageManager` gives it, else None."""

    tool: str  # npm, yarn, pnpm
    version: str | None = None
    berry: bool = False  # Yarn 2 or later
    #: The hash `packageManager` pins (`+sha512.abc...`), checked when corepack downloads it.
    build: str | None = None

    @property
    def corepack(self) -> bool:
        """Whether it runs through corepack: Yarn and pnpm always, npm when a version is named."""
        return self.tool != "npm" or self.version is not None


def infer_node_setup(repo: Path, environ: Mapping[str, str] | None = None) -> SetupPlan:
    """The set-up command for the Node project at `repo`, read from its files (nothing in it is
    run); `environ` (os.environ by default) names the registries the user trusts."""
    environ = os.environ if environ is None else environ
    tree = RepoFiles(repo)
    package = _package_json(tree)
    if package is None:
        return SetupPlan(command=None, notes=tuple(tree.notes), summary="no package.json")
    declared = _declared(tree, package)
    lockfile, lock_tool = _lockfile(tree, declared)
    manager = declared or PackageManager(
        tool=lock_tool or "npm", berry=lock_tool == "yarn" and _berry(tree, None)
    )
    sources = [f"package.json packageManager {package['packageManager']}"] if declared else []
    sources += [lockfile] if lockfile else ["package.json"]
    # Said even with nothing to install: a plain-node build runs in every test run all the same.
    build = ci_node_build(tree, _scripts(package))
    before = f"CI's build {build.command} ({build.source})" if build else None
    if before is not None:
        sources.append(f"{before}, run before each test run")
    if lockfile is None and not _has_dependencies(package):
        return SetupPlan(
            command=None,
            sources=tuple(sources),
            notes=tuple(tree.notes),
            summary="nothing to install (package.json names no dependencies, and no lockfile)",
            installer=node_installer(manager, hosts=registry_hosts(repo, environ)),
            before_tests=before,
        )
    ci = ci_npm_flags(tree) if manager.tool == "npm" else None
    command, summary = _command(tree, manager, lockfile, ci.flags if ci else ())
    hosts = registry_hosts(repo, environ, tool=manager.tool)
    installer = node_installer(manager, hosts=hosts)
    tool = _corepack_tool(tree, manager, installer) if manager.corepack else None
    if ci is not None:
        sources.append(f"{' '.join(ci.flags)} from {ci.source}")
        summary = f"{summary or command}; {' '.join(ci.flags)} as CI gives it ({ci.source})"
    trusted = set(hosts)
    for rel, named in repository_hosts(tree).items():
        if others := [h for h in named if h not in trusted]:
            tree.notes.append(
                f"{rel} names {', '.join(others[:3])}: not let through the set-up fence (a "
                "repository's files cannot widen it); name it in npm_config_registry or your "
                "~/.npmrc, or pass --setup-network full"
            )
    return SetupPlan(
        command=command,
        sources=tuple(sources),
        notes=tuple(tree.notes),
        summary=summary,
        installer=installer,
        tool=tool,
        before_tests=before,
    )


#: What decides a Node set-up: the manifest, the lockfiles, the package managers' settings.
INPUTS = (
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "pnpm-workspace.yaml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pnpmfile.cjs",
)


#: What test tools write inside node_modules while the tests run, as links to the run's /tmp:
#: find-cache-dir's `.cache` (ava, babel-loader, nyc), vite's and vitest's caches (`.vitest`:
#: vitest before 1.0, whose run fails at its end without it), vite's bundled config
#: (`.vite-temp`, written before any test of a `vitest.config.mts` project), and the build
#: info of vitest's type check (`--typecheck`: tsc writes it into vitest's own dist folder, as
#: npm and yarn place it and as pnpm does).
SCRATCH = tuple(
    f"node_modules/{name}"
    for name in (
        ".cache", ".vite", ".vite-temp", ".vitest", ".vitest-cache",
        "vitest/dist/tsconfig.tmp.tsbuildinfo",
        ".pnpm/vitest@*/node_modules/vitest/dist/tsconfig.tmp.tsbuildinfo",
    )
)  # fmt: skip


def node_installer(manager: PackageManager, *, hosts: tuple[str, ...]) -> Installer:
    """The set-up's view of `manager`: the fence's hosts, the variables, node_modules kept."""
    corepack = manager.corepack
    env = {**CACHE_ENV, **(COREPACK_ENV if corepack else {})}
    tree_dirs = ("node_modules", ".yarn/cache", ".yarn/unplugged") if manager.berry else ()
    return Installer(
        name=manager.tool,
        hosts=hosts,
        url_variables=URL_VARIABLES,
        passed=PASSED,
        proxy_variables=PROXY_VARIABLES,
        env=env,
        # The tests' sandbox has no network: corepack says so at once, not after a DNS wait.
        image_env={**COREPACK_ENV, "COREPACK_ENABLE_NETWORK": "0"} if corepack else {},
        tree_dirs=tree_dirs or ("node_modules",),
        scratch=SCRATCH,
        widen_hint=WIDEN_HINT,
        inputs=INPUTS,
    )


def _command(
    tree: RepoFiles, manager: PackageManager, lockfile: str | None, ci_flags: tuple[str, ...]
) -> tuple[str, str | None]:
    """The command, and a summary when it says more than the command does; `ci_flags`: npm's
    flags the CI gives (sandbox/ecosystems/node/ci_install.py)."""
    npm_flags = " ".join((NPM_FLAGS, *ci_flags))
    if not manager.corepack:
        if lockfile is None:
            command = f"npm install {npm_flags} --no-package-lock"
            why = "no lockfile: npm install resolves versions afresh"
            return command, f"{command} (from package.json; {why})"
        return f"npm ci {npm_flags}", None
    tool = manager.tool
    frozen = lockfile is not None and _lock_tool(lockfile) == tool
    if tool == "npm":
        install = f"npm {'ci' if frozen else 'install'} {npm_flags}"
        return f"corepack {install}", None
    # Berry and pnpm refuse to write a lockfile under CI=1 (set-up's, as the tests'): told to.
    if tool == "yarn" and manager.berry:
        install = f"yarn install {'--immutable' if frozen else '--no-immutable'}"
    elif tool == "yarn":
        install = "yarn install" + (" --frozen-lockfile" if frozen else "")
    else:
        install = f"pnpm install {'--frozen-lockfile' if frozen else '--no-frozen-lockfile'}"
    command = install
    kind = "Yarn Berry" if manager.berry else ("Yarn 1" if tool == "yarn" else "pnpm")
    version = f" {manager.version}" if manager.version else ""
    where = lockfile or "package.json"
    afresh = "" if frozen else "; no lockfile of its own: versions are resolved afresh"
    return command, f"{install} ({kind}{version} by corepack; from {where}{afresh})"


def _corepack_tool(tree: RepoFiles, manager: PackageManager, installer: Installer) -> SetupTool:
    """The package manager as a set-up tool: the release `packageManager` names (with its hash),
    else the one corepack would take, made its default (`-g`) for the tests' runs offline."""
    if manager.version is not None:
        spec = f"{manager.tool}@{manager.version}{manager.build or ''}"
        why = "package.json packageManager"
    else:
        spec = _default_version(tree, manager)
        why = "no packageManager: corepack's default"
    return corepack_tool(spec, why=why, installer=installer)


def _default_version(tree: RepoFiles, manager: PackageManager) -> str:
    if manager.tool == "pnpm":
        found = _PNPM_LOCK_VERSION.search(tree.read("pnpm-lock.yaml") or "")
        for prefix, spec in PNPM_BY_LOCKFILE:
            if found and found.group(1).startswith(prefix):
                return spec
        return "pnpm@latest"
    if manager.berry and not _YARN_PATH.search(tree.read(".yarnrc.yml") or ""):
        return "yarn@stable"
    return YARN_CLASSIC  # Yarn 1 itself, or the one that hands over to the yarnPath release


def _package_json(tree: RepoFiles) -> dict[str, Any] | None:
    text = tree.read("package.json")
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        tree.notes.append(f"package.json: not valid JSON ({exc}); ignored")
        return None
    if not isinstance(data, dict):
        tree.notes.append("package.json: not a JSON object; ignored")
        return None
    return data


def _declared(tree: RepoFiles, package: dict[str, Any]) -> PackageManager | None:
    """The `packageManager` field as a PackageManager, None when absent or unreadable."""
    field = package.get("packageManager")
    if field is None:
        return None
    found = _PACKAGE_MANAGER.match(field) if isinstance(field, str) else None
    if found is None:
        tree.notes.append(f"package.json: packageManager {field!r} not understood; ignored")
        return None
    tool, major = found.group(1), int(found.group(2))
    version = f"{found.group(2)}{found.group(3) or ''}"
    return PackageManager(
        tool=tool, version=version, berry=tool == "yarn" and major >= 2, build=found.group(4)
    )


def _lockfile(tree: RepoFiles, declared: PackageManager | None) -> tuple[str | None, str | None]:
    """The lockfile the install reads (the declared tool's first), and its tool."""
    present = [(rel, tool) for rel, tool in LOCKFILES if tree.exists(rel)]
    if declared is not None:
        present.sort(key=lambda found: found[1] != declared.tool)
    if len(present) > 1:
        others = ", ".join(rel for rel, _ in present[1:])
        tree.notes.append(f"{others}: not used (the install reads {present[0][0]})")
    return present[0] if present else (None, None)


def _lock_tool(lockfile: str) -> str:
    return dict(LOCKFILES)[lockfile]


def _berry(tree: RepoFiles, declared: PackageManager | None) -> bool:
    """Yarn 2 or later: declared so, a .yarnrc.yml, or a Berry lockfile (`__metadata:`)."""
    if declared is not None:
        return declared.berry
    if tree.exists(".yarnrc.yml"):
        return True
    head = (tree.read("yarn.lock") or "")[:2000]
    return "__metadata:" in head


def _has_dependencies(package: dict[str, Any]) -> bool:
    fields = [package.get(f) for f in DEPENDENCY_FIELDS]
    return any(isinstance(f, dict) and f for f in fields) or bool(package.get("workspaces"))


def _scripts(package: dict[str, Any]) -> dict[str, str]:
    """package.json's `scripts` (strings only)."""
    scripts = package.get("scripts")
    if not isinstance(scripts, dict):
        return {}
    return {k: v for k, v in scripts.items() if isinstance(k, str) and isinstance(v, str)}
