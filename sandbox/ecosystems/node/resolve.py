"""Which file a module specifier names, and where a module's export is defined: Node's and
TypeScript's resolution rules over the working copy, and re-exports followed, on the syntax
sandbox/ecosystems/node/source.py reads.

`./a` is `a.js`, `a.ts`... (TypeScript's order first from a TypeScript file), `./a.js` in a
TypeScript file may be `a.ts`, a folder is its package.json `main` (or `exports`) or its
`index`, and the repository's own package name is its root; a package's name is nothing here
(its code is not the repository's). Files are read as hostile input
(sandbox/worktree/repo_files.py), each parsed once, at most MAX_FILES by a deadline.
"""

from __future__ import annotations

import json
import posixpath
import time
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.ecosystems.node.source import (
    MAX_FILE_BYTES,
    PARSE_S,
    Export,
    Import,
    Source,
    exports,
    imports,
    parse_bytes,
)
from sandbox.ecosystems.node.stack_frames import JS_SUFFIXES
from sandbox.worktree.repo_files import RepoFiles

MAX_FILES = 60  # files one `Modules` parses
MAX_HOPS = 4  # re-exports followed from a name to its definition
# The order a file is looked for when a specifier has no suffix: TypeScript's first from a
# TypeScript file (as tsc resolves), Node's from a JavaScript one.
_FROM_TS = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
_FROM_JS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")
# `./a.js` in a TypeScript file names `a.ts` (TypeScript's ESM rule: write the output's name).
_TS_TWIN = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}


@dataclass
class Modules:
    """The modules of one working copy, parsed as asked, each once, within the bounds."""

    workspace: Path
    deadline: float  # time.monotonic() after which nothing more is parsed
    max_files: int = MAX_FILES
    max_bytes: int = MAX_FILE_BYTES  # a larger file is not read
    _files: RepoFiles = field(init=False)
    _parsed: dict[str, Source | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._files = RepoFiles(self.workspace)

    def source(self, rel: str) -> Source | None:
        """File `rel` parsed; None when absent, refused, too large, or past the bounds."""
        if rel in self._parsed:
            return self._parsed[rel]
        left = self.deadline - time.monotonic()
        if len(self._parsed) >= self.max_files or left <= 0 or not self.is_file(rel):
            return None
        path = self._files.root / rel
        try:
            data = path.read_bytes() if path.stat().st_size <= self.max_bytes else None
        except OSError:
            data = None
        self._parsed[rel] = (
            None if data is None else parse_bytes(rel, data, timeout_s=min(left, PARSE_S))
        )
        return self._parsed[rel]

    def is_file(self, rel: str) -> bool:
        """`rel` is a plain file of the working copy, reached through no link."""
        norm = self._files.inside(rel)
        return norm is not None and norm == rel and self._files.exists(rel)

    def resolve(self, importer: str, specifier: str) -> str | None:
        """The file a specifier in `importer` names, by Node's and TypeScript's rules: the
        file itself, its TypeScript twin (`./a.js` -> `a.ts`), the name with a suffix, or a
        folder's package.json `main` or `index`; a bare specifier only when it is the
        repository's own package name. None for a package or a file not in the tree."""
        if not specifier.startswith("."):
            specifier = self._own_package(specifier, importer) or ""
            if not specifier:
                return None
        base = self._files.inside(specifier, posixpath.dirname(importer))
        if base is None:
            return None
        order = _FROM_TS if importer.endswith((".ts", ".tsx", ".mts", ".cts")) else _FROM_JS
        return self._file_or_folder(base, order, folders=2)

    def _file_or_folder(self, base: str, order: tuple[str, ...], *, folders: int) -> str | None:
        """`base` as a file, else (`folders` deep at most) as a folder with an entry point."""
        stem, suffix = posixpath.splitext(base)
        candidates = [] if base == "." else [base] if suffix in JS_SUFFIXES else []
        if base != ".":
            candidates += [stem + twin for twin in _TS_TWIN.get(suffix, ())]
            candidates += [base + ext for ext in order]
        found = next((c for c in candidates if self.is_file(c)), None)
        if found is not None or folders <= 0 or not (self._files.root / base).is_dir():
            return found
        main = self._main(base)
        inner = self._files.inside(main, base) if main is not None else None
        if inner is not None and inner != base:
            hit = self._file_or_folder(inner, order, folders=folders - 1)
            if hit is not None:
                return hit
        index = posixpath.normpath(posixpath.join(base, "index"))
        return self._file_or_folder(index, order, folders=0)

    def _main(self, folder: str) -> str | None:
        """A folder's package.json entry point: `main`, else `exports` (or its "."), as a
        string or its "require"/"import"/"default" condition."""
        package = self._package_json(posixpath.normpath(posixpath.join(folder, "package.json")))
        entry = package.get("main") or package.get("exports")
        if isinstance(entry, dict):
            entry = entry.get(".", entry)
            if isinstance(entry, dict):
                entry = next(
                    (entry[k] for k in ("require", "import", "default") if k in entry), None
                )
        return entry if isinstance(entry, str) else None

    def _own_package(self, specifier: str, importer: str) -> str | None:
        """`mypkg` or `mypkg/sub` as a path from `importer`, where the root package.json's
        name is `mypkg` (a test that imports the package it tests by its name)."""
        name = self._package_json("package.json").get("name")
        if not isinstance(name, str) or not name:
            return None
        if specifier != name and not specifier.startswith(name + "/"):
            return None
        rest = specifier[len(name) :].lstrip("/") or "."
        up = posixpath.relpath(".", posixpath.dirname(importer) or ".")
        return "./" + posixpath.normpath(posixpath.join(up, rest))

    def _package_json(self, rel: str) -> dict[str, object]:
        text = self._files.read(rel) if self.is_file(rel) else None
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def imports(self, rel: str) -> list[Import]:
        src = self.source(rel)
        return imports(src) if src is not None else []

    def exports(self, rel: str) -> list[Export]:
        src = self.source(rel)
        return exports(src) if src is not None else []

    def origin(self, rel: str, name: str, *, hops: int = MAX_HOPS) -> tuple[str, str] | None:
        """Where the export `name` of `rel` is defined: (file, local name), re-exports and
        imports of that file followed; ("file", "*") for a module object; None if not found."""
        if hops < 0 or self.source(rel) is None:
            return None
        if name == "*":
            return rel, "*"
        stars: list[str] = []
        for export in self.exports(rel):
            if export.name == "*":
                stars.append(export.specifier)
            elif export.name == name:
                if not export.specifier:
                    return self._local(rel, export.local, hops)
                target = self.resolve(rel, export.specifier)
                return self.origin(target, export.local, hops=hops - 1) if target else None
        for spec in stars:
            target = self.resolve(rel, spec)
            found = self.origin(target, name, hops=hops - 1) if target else None
            if found is not None:
                return found
        return self._local(rel, name, hops) if name != "default" else None

    def local(self, rel: str, name: str) -> tuple[str, str] | None:
        """Where a name used in `rel` is defined: (file, local name) through the imports of
        `rel` that bind it, else `rel` itself."""
        return self._local(rel, name, MAX_HOPS) if self.source(rel) is not None else None

    def _local(self, rel: str, local: str, hops: int) -> tuple[str, str]:
        """A local name of `rel`: where an import of `rel` binds it, else `rel` itself; `m.f`
        where `m` is an imported module is that module's export `f`."""
        name, _, member = local.partition(".")
        for item in self.imports(rel):
            for binding in item.bindings:
                if binding.local != name:
                    continue
                target = self.resolve(rel, item.specifier)
                wanted = binding.imported
                if member and wanted in ("*", "default"):
                    wanted = member
                found = self.origin(target, wanted, hops=hops - 1) if target else None
                if found is not None:
                    return found
        return rel, local
