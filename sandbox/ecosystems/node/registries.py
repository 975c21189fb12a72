"""Which npm registry hosts a Node set-up may reach through the fence (sandbox/setup/network.py).

Allowed: the default registry (registry.npmjs.org; for Yarn also registry.yarnpkg.com, its
alias and Yarn 1's default, and repo.yarnpkg.com, where corepack fetches Yarn Berry), and the
hosts the *user* names: the registry variables of their environment (`npm_config_registry`,
`YARN_NPM_REGISTRY_SERVER`, `COREPACK_NPM_REGISTRY`...; the network plan adds those) and the
`registry=`, `@scope:registry=` and `//host/:_authToken=` lines of their own ~/.npmrc
(`NPM_CONFIG_USERCONFIG` where set). The set-up container never reads that file: its hosts are
trusted, its settings and tokens stay on the host (a token reaches set-up by `--setup-env`).

Not allowed by themselves: the hosts the *repository* names (its .npmrc, .yarnrc, .yarnrc.yml,
the `resolved` URLs of its lockfile). The repository is hostile input, and a host it picks could
be any name, one that resolves to the cloud metadata address included; the fence exists to keep
install scripts from exactly that. Such a host is let through when the user names it too, and
otherwise said in a note before set-up runs (`repository_hosts`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from sandbox.worktree.repo_files import MAX_BYTES, RepoFiles

NPM_REGISTRY = "registry.npmjs.org"
YARN_HOSTS = ("registry.yarnpkg.com", "repo.yarnpkg.com")
#: Host variables naming a registry URL: passed to set-up, their hosts allowed.
URL_VARIABLES = (
    "npm_config_registry",
    "NPM_CONFIG_REGISTRY",
    "YARN_REGISTRY",
    "YARN_NPM_REGISTRY_SERVER",
    "COREPACK_NPM_REGISTRY",
)
_NPMRC_REGISTRY = re.compile(r"^\s*(?:@[\w.-]+:)?registry\s*=\s*(\S+)", re.MULTILINE)
_NPMRC_AUTH = re.compile(r"^\s*//([^/:\s]+)(?::\d+)?/[^\s=]*:_\w+\s*=", re.MULTILINE)
_YARNRC_REGISTRY = re.compile(r"^\s*registry\s+\"?([^\"\s]+)", re.MULTILINE)
_YARNRC_YML = re.compile(r"^\s*npmRegistryServer:\s*[\"']?([^\"'\s]+)", re.MULTILINE)
_YARN_RESOLVED = re.compile(r"^\s+resolved\s+\"([^\"]+)\"", re.MULTILINE)


def default_hosts(tool: str) -> tuple[str, ...]:
    """The registry hosts `tool` (npm, yarn, pnpm) reaches with nothing configured."""
    return (NPM_REGISTRY, *YARN_HOSTS) if tool == "yarn" else (NPM_REGISTRY,)


def user_hosts(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The hosts the user names: in the registry variables set, and in their ~/.npmrc."""
    found = [h for name in URL_VARIABLES if (h := url_host(environ.get(name, "")))]
    home = environ.get("HOME")
    config = environ.get("NPM_CONFIG_USERCONFIG") or environ.get("npm_config_userconfig")
    path = Path(config) if config else (Path(home) / ".npmrc" if home else None)
    if path is not None:
        found += npmrc_hosts(_read(path))
    return tuple(dict.fromkeys(found))


def registry_hosts(repo: Path, environ: Mapping[str, str], *, tool: str = "npm") -> tuple[str, ...]:
    """The hosts a Node set-up of `repo` by `tool` may reach (see the module docstring)."""
    del repo  # what the repository names is noted (repository_hosts), never allowed by itself
    return tuple(dict.fromkeys((*default_hosts(tool), *user_hosts(environ))))


def repository_hosts(tree: RepoFiles) -> dict[str, tuple[str, ...]]:
    """The registry hosts the repository's own files name, by file: .npmrc, .yarnrc,
    .yarnrc.yml, and the hosts of its lockfile's `resolved` URLs."""
    found: dict[str, tuple[str, ...]] = {}
    for rel, hosts in (
        (".npmrc", npmrc_hosts(tree.read(".npmrc") or "")),
        (".yarnrc", [url_host(u) for u in _YARNRC_REGISTRY.findall(tree.read(".yarnrc") or "")]),
        (".yarnrc.yml", [url_host(u) for u in _YARNRC_YML.findall(tree.read(".yarnrc.yml") or "")]),
        ("yarn.lock", [url_host(u) for u in _YARN_RESOLVED.findall(tree.read("yarn.lock") or "")]),
        ("package-lock.json", _lock_hosts(tree.read("package-lock.json"))),
        ("npm-shrinkwrap.json", _lock_hosts(tree.read("npm-shrinkwrap.json"))),
    ):
        if kept := tuple(dict.fromkeys(h for h in hosts if h)):
            found[rel] = kept
    return found


def npmrc_hosts(text: str) -> list[str]:
    """The hosts of an .npmrc's `registry=`, `@scope:registry=` and `//host/:_authToken=`
    lines (`${VAR}` references are left as they are, and so name no host)."""
    hosts = [url_host(u) for u in _NPMRC_REGISTRY.findall(text)]
    hosts += [h.lower() for h in _NPMRC_AUTH.findall(text)]
    return [h for h in hosts if h]


def url_host(url: str) -> str:
    """The host of a registry URL, lower case; "" when it has none (a `${VAR}`, a path)."""
    url = url.strip().strip("\"'")
    if "://" not in url or "${" in url:
        return ""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return ""
    return host.lower()


def _lock_hosts(text: str | None) -> list[str]:
    try:
        data = json.loads(text) if text else {}
    except ValueError:
        return []
    packages = data.get("packages") if isinstance(data, dict) else None
    if not isinstance(packages, dict):
        return []
    urls = [p.get("resolved") for p in packages.values() if isinstance(p, dict)]
    return [url_host(u) for u in urls if isinstance(u, str)]


def _read(path: Path) -> str:
    try:
        if path.is_file() and path.stat().st_size <= MAX_BYTES:
            return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        pass
    return ""
