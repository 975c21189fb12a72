"""A broken environment told from a bug, for Node: the tests before any change fail to load a
package that the repository does not define (sandbox/ecosystems/python/missing_modules.py is
the Python twin).

No edit of the code can mend that (package.json and the lockfile are not writable), so the run
stops before the first model call. What the repository defines is the code's business: a
relative or absolute path (`./util`, a missing file is a bug), its own package name, the
packages of its workspaces, its `#imports`, and an alias its tsconfig `paths` or jest's
`moduleNameMapper` declares, or a folder at its root or in src/ (a `baseUrl` or `moduleDirectories`
import). A missing `node:` module is a Node too old for the tests (`node:test` on Node 16).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.worktree.repo_files import RepoFiles

if TYPE_CHECKING:
    from sandbox.ecosystems.base import FailedRun

#: How node, jest, vitest and tsc say a package is not there.
NOT_FOUND = (
    re.compile(r"Cannot find module '([^'\s]+)'"),  # require(), jest, tsc's TS2307
    re.compile(r'Cannot find module "([^"\s]+)"'),
    re.compile(r"Cannot find package '([^'\s]+)'"),  # import: ERR_MODULE_NOT_FOUND
    re.compile(r"Failed to load url (\S+) \(resolved id"),  # vite (vitest)
    re.compile(r"Failed to resolve import \"([^\"\s]+)\""),  # vite
)
NPM_NAME = re.compile(r"^(?:@[A-Za-z0-9][\w.~-]*/)?[A-Za-z0-9][\w.~-]*$")
DEPENDENCY_FIELDS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")
MAX_WORKSPACES = 200
_JSONC_NOISE = r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/'  # strings kept, comments out


@dataclass(frozen=True, kw_only=True)
class MissingPackage:
    """A package the tests could not load, and whether package.json declares it."""

    package: str  # `lodash`, `@scope/name`, or `node:test`
    where: str  # the first test (or "the test command") that failed on it
    declared: bool = False  # in package.json's dependencies: set-up did not install it

    @property
    def builtin(self) -> bool:
        return self.package.startswith("node:")

    def describe(self) -> str:
        """One line: what is missing, and why no edit of the code mends it."""
        if self.builtin:
            return (
                f"the tests cannot load {self.package!r} ({self.where}): the Node in the "
                "sandbox is too old for them"
            )
        if self.declared:
            return (
                f"the tests cannot load {self.package!r} ({self.where}): package.json "
                "declares it, but it is not installed in the sandbox"
            )
        return (
            f"the tests cannot load {self.package!r} ({self.where}): it is not installed, "
            "and package.json does not declare it"
        )


def missing_packages(run: FailedRun, tree: Path) -> list[MissingPackage]:
    """Packages the failing tests (or the whole command, without a report) could not load and
    that the repository at `tree` does not define; one entry per package."""
    return find_missing(run.failure_texts(), RepoFiles(tree))


def find_missing(texts: Iterable[tuple[str, str]], files: RepoFiles) -> list[MissingPackage]:
    """`missing_packages` over (where, text) pairs, the repository read through `files`."""
    repo = _Repository(files)
    found: dict[str, MissingPackage] = {}
    for where, text in texts:
        for pattern in NOT_FOUND:
            for spec in pattern.findall(text):
                package = package_of(spec)
                if package is None or package in found or repo.defines(spec, package):
                    continue
                found[package] = MissingPackage(
                    package=package, where=where, declared=package in repo.declared
                )
    return list(found.values())


def package_of(spec: str) -> str | None:
    """The package an import specifier names; None for a path or a subpath import.

    >>> [package_of(s) for s in ("lodash/fp", "@a/b/c", "./x", "/w/x.js", "#db", "node:test")]
    ['lodash', '@a/b', None, None, None, 'node:test']
    """
    if spec.startswith("node:"):
        return spec
    if spec.startswith((".", "/", "#", "file:", "~", "\\")) or re.match(r"[A-Za-z]:[\\/]", spec):
        return None
    parts = spec.split("/")
    name = "/".join(parts[:2]) if spec.startswith("@") else parts[0]
    return name if NPM_NAME.match(name) else None


class _Repository:
    """What the repository defines and declares, read from its package.json and tsconfig."""

    def __init__(self, files: RepoFiles) -> None:
        self.files = files
        manifest = _json(files, "package.json")
        self.names = {str(manifest.get("name"))} if manifest.get("name") else set()
        self.declared: set[str] = set()
        for field_name in DEPENDENCY_FIELDS:
            deps = manifest.get(field_name)
            if isinstance(deps, dict):
                self.declared |= {str(k) for k in deps}
        self.names |= self._workspace_names(manifest)
        self.globs, self.patterns = self._aliases(manifest)

    def defines(self, spec: str, package: str) -> bool:
        if package in self.names:
            return True
        if any(fnmatchcase(spec, g) for g in self.globs):
            return True
        if any(p.search(spec) for p in self.patterns):
            return True
        top = package.split("/")[0]
        return any(
            self.files.inside(p) and (self.files.root / p).exists() for p in (top, f"src/{top}")
        )

    def _workspace_names(self, manifest: dict[str, Any]) -> set[str]:
        patterns = manifest.get("workspaces")
        if isinstance(patterns, dict):
            patterns = patterns.get("packages")
        globs = [p for p in patterns if isinstance(p, str)] if isinstance(patterns, list) else []
        pnpm = self.files.read("pnpm-workspace.yaml") or ""
        globs += re.findall(r"^\s*-\s*['\"]?([^'\"#\s]+)", pnpm, re.M)
        names: set[str] = set()
        for glob in globs[:MAX_WORKSPACES]:
            folder, _, last = glob.rstrip("/").rpartition("/")
            candidates = (
                [f"{folder}/{n}" if folder else n for n in self.files.listed(folder or ".")]
                if "*" in last
                else [glob.rstrip("/")]
            )
            for candidate in candidates[:MAX_WORKSPACES]:
                name = _json(self.files, f"{candidate}/package.json").get("name")
                if isinstance(name, str):
                    names.add(name)
        return names

    def _aliases(self, manifest: dict[str, Any]) -> tuple[list[str], list[re.Pattern[str]]]:
        """tsconfig `paths` keys (globs) and jest `moduleNameMapper` keys (regexes)."""
        globs: list[str] = []
        for name in ("tsconfig.json", "jsconfig.json"):
            options = _json(self.files, name, comments=True).get("compilerOptions")
            paths = options.get("paths") if isinstance(options, dict) else None
            if isinstance(paths, dict):
                globs += [str(k) for k in paths]
        jest = manifest.get("jest")
        mapper = jest.get("moduleNameMapper") if isinstance(jest, dict) else None
        patterns: list[re.Pattern[str]] = []
        for key in mapper if isinstance(mapper, dict) else ():
            try:
                patterns.append(re.compile(str(key)))
            except re.error:
                continue
        return globs, patterns


def _json(files: RepoFiles, rel: str, *, comments: bool = False) -> dict[str, Any]:
    text = files.read(rel)
    if text is None:
        return {}
    if comments:  # tsconfig is JSON with comments and trailing commas
        text = re.sub(_JSONC_NOISE, lambda m: m.group(1) or "", text, flags=re.S)
        text = re.sub(r",(\s*[}\]])", r"\1", text)
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
