"""A Maven project's `pom.xml` files as read here, never run: the reactor's modules, the Java
release they ask the compiler for, the repositories they declare and the toolchain they name.

Read through sandbox/worktree/repo_files.py (no symlink followed, nothing over 1 MB); a POM
that declares entities is not read (Maven's own parser takes none), and one that is not XML
is a note, not an error. `${property}` references are resolved against the POM's own
properties and its parents' in the tree (a reactor's usual `<java.version>` in the root POM),
as Maven does for these values; what stays unresolved is left out.
"""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from sandbox.ecosystems.java.elements import child as _child
from sandbox.ecosystems.java.elements import children as _children
from sandbox.ecosystems.java.elements import tag as _tag
from sandbox.ecosystems.java.elements import text as _text
from sandbox.worktree.repo_files import RepoFiles

MAX_MODULES = 500  # POMs of one reactor read, at most
_REF = re.compile(r"\$\{([\w.-]+)\}")
#: Where each compiler setting is read, in Maven's order of preference for the release.
COMPILER_PROPERTIES = ("maven.compiler.release", "maven.compiler.source", "maven.compiler.target")


@dataclass(frozen=True, kw_only=True)
class Pom:
    """One POM: where it is, its artifactId, the modules it aggregates (folders relative to its
    own), its properties (its parents' in the tree below its own), its compiler and toolchain
    settings and the repositories it declares."""

    path: str  # "pom.xml", "core/pom.xml"
    artifact: str
    modules: tuple[str, ...]
    properties: dict[str, str]
    compiler: dict[str, str]  # the compiler plugin's <release>, <source>, <target>
    toolchain_jdk: str | None  # maven-toolchains-plugin's <jdk><version>
    repositories: tuple[str, ...]  # <repositories> and <pluginRepositories> URLs
    #: The artifactIds of `<build><plugins>` (the plugins its build runs), profiles' left out.
    plugins: tuple[str, ...] = ()
    #: Each plugin's goals bound by an `<execution>`, in `<plugins>` or `<pluginManagement>`.
    goals: tuple[tuple[str, str], ...] = ()  # (artifactId, goal)

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.path) or "."

    def resolve(self, value: str | None) -> str | None:
        """`value` with `${...}` replaced from the properties; None when one is unknown."""
        if value is None:
            return None
        for _ in range(5):  # a property naming another, a few deep
            if not _REF.search(value):
                return value.strip() or None
            unknown = False

            def sub(match: re.Match[str]) -> str:
                nonlocal unknown
                got = self.properties.get(match.group(1))
                if got is None:
                    unknown = True
                    return match.group(0)
                return got

            value = _REF.sub(sub, value)
            if unknown:
                return None
        return None

    def java_level(self) -> tuple[str, str] | None:
        """The Java release the compiler is asked for, and where it is said: the compiler
        plugin's own `<release>`, `<source>`, `<target>`, else the `maven.compiler.*`
        properties (release before source before target), resolved."""
        for name in ("release", "source", "target"):
            if (got := self.resolve(self.compiler.get(name))) is not None:
                return got, f"the compiler plugin's <{name}> {got} in {self.path}"
        for name in COMPILER_PROPERTIES:
            if (got := self.resolve(self.properties.get(name))) is not None:
                return got, f"{name} {got} in {self.path}"
        return None


@dataclass(frozen=True)
class Reactor:
    """The POMs of a repository: the root's and every module's it aggregates, in the tree."""

    poms: tuple[Pom, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def root(self) -> Pom | None:
        return self.poms[0] if self.poms and self.poms[0].path == "pom.xml" else None

    @property
    def several(self) -> bool:
        """A multi-module build: its tests' ids say their module."""
        return any(p.modules for p in self.poms)

    def module_folders(self) -> list[str]:
        """The folders of the modules that are not aggregators (the ones with code)."""
        return [p.folder for p in self.poms if not p.modules]

    def repositories(self) -> list[str]:
        return list(dict.fromkeys(r for p in self.poms for r in p.repositories))


def read_reactor(files: RepoFiles) -> Reactor:
    """The root pom.xml and, breadth first, every module it (and its modules) aggregate."""
    poms: list[Pom] = []
    notes: list[str] = []
    queue: list[tuple[str, dict[str, str]]] = [("pom.xml", {})]
    seen: set[str] = set()
    while queue and len(poms) < MAX_MODULES:
        path, inherited = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        pom = read_pom(files, path, inherited=inherited, notes=notes)
        if pom is None:
            continue
        poms.append(pom)
        for module in pom.modules:
            rel = files.inside(module, pom.folder if pom.folder != "." else "")
            if rel is None:
                notes.append(f"{path}: module {module!r} is outside the tree; not read")
                continue
            queue.append((rel if rel.endswith(".xml") else f"{rel}/pom.xml", pom.properties))
    return Reactor(tuple(poms), tuple(notes))


def read_pom(
    files: RepoFiles, path: str, *, inherited: dict[str, str], notes: list[str]
) -> Pom | None:
    """One POM, None when absent or unreadable (a note then)."""
    text = files.read(path)
    if text is None:
        return None
    if "<!ENTITY" in text:
        notes.append(f"{path}: declares XML entities; not read")
        return None
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        notes.append(f"{path}: not XML ({exc}); not read")
        return None
    if _tag(root) != "project":
        notes.append(f"{path}: not a Maven POM (root <{_tag(root)}>); not read")
        return None
    properties = dict(inherited)
    if (props := _child(root, "properties")) is not None:
        properties.update({_tag(p): (p.text or "").strip() for p in props})
    artifact = _text(_child(root, "artifactId")) or ""
    properties.setdefault("project.artifactId", artifact)
    modules = tuple(m.text.strip() for m in _children(_child(root, "modules"), "module") if m.text)
    compiler: dict[str, str] = {}
    toolchain: str | None = None
    goals: dict[tuple[str, str], None] = {}
    for plugin in _plugins(root):
        name = _text(_child(plugin, "artifactId"))
        for execution in _children(_child(plugin, "executions"), "execution"):
            for goal in _children(_child(execution, "goals"), "goal"):
                if name and (text := _text(goal)):
                    goals[(name, text)] = None
        config = _child(plugin, "configuration")
        if config is None:
            continue
        if name == "maven-compiler-plugin":
            for key in ("release", "source", "target"):
                if (value := _text(_child(config, key))) is not None:
                    compiler.setdefault(key, value)
        elif name == "maven-toolchains-plugin":
            jdk = _child(_child(config, "toolchains"), "jdk")
            toolchain = _text(_child(jdk, "version")) or toolchain
    repositories = tuple(
        url
        for kind in ("repositories", "pluginRepositories")
        for holder in _all(root, kind)
        for repo in holder
        if (url := _text(_child(repo, "url")))
    )
    return Pom(
        path=path,
        artifact=artifact,
        modules=modules,
        properties=properties,
        compiler=compiler,
        toolchain_jdk=toolchain,
        repositories=repositories,
        plugins=tuple(
            name
            for plugin in _children(_child(_child(root, "build"), "plugins"), "plugin")
            if (name := _text(_child(plugin, "artifactId")))
        ),
        goals=tuple(goals),
    )


def repository_hosts(urls: list[str]) -> list[str]:
    """The hosts of repository URLs, once each, in order."""
    hosts = (urlsplit(u).hostname for u in urls)
    return list(dict.fromkeys(h.lower() for h in hosts if h))


def _all(element: ET.Element, name: str) -> Iterator[ET.Element]:
    yield from (e for e in element.iter() if _tag(e) == name)


def _plugins(root: ET.Element) -> Iterator[ET.Element]:
    """Every <plugin> of <build> and <build><pluginManagement>, profiles' left out (a profile
    may be off)."""
    build = _child(root, "build")
    for holder in (_child(build, "plugins"), _child(_child(build, "pluginManagement"), "plugins")):
        yield from _children(holder, "plugin")
