"""A repository's Go modules: one go.mod at the root, or several (docs/go-tests.md, "Several
modules"). All of them map a package's import path to its folder; `tested` are those a run
tests when no command names them.

Which modules: a go.work at the root names them (its `use` lines: the go command refuses to
test, inside that workspace, a module it does not list); otherwise every folder with a go.mod,
the root's and those below it, as the go command itself would see them: not in a folder it
ignores for `./...` (`vendor`, `testdata`, a name starting with `.` or `_`), nor in
`node_modules`, reached through no link. Read as hostile input, never run; bounded in folders
walked and modules kept.

>>> import tempfile; root = Path(tempfile.mkdtemp())
>>> for rel, text in {"go.mod": "module ex.com/m\\n", "tools/go.mod": "module ex.com/m/tools\\n",
...                   "vendor/x/go.mod": "module ex.com/x\\n"}.items():
...     (root / rel).parent.mkdir(parents=True, exist_ok=True); _ = (root / rel).write_text(text)
>>> found = find_modules(root)
>>> [(m.folder, m.path) for m in found.modules], found.folder_of("ex.com/m/tools/gen")
([('.', 'ex.com/m'), ('tools', 'ex.com/m/tools')], 'tools/gen')
>>> found.module_root("tools/gen"), found.module_root("calc"), found.test_command()
('tools', '.', 'go test ./...')
"""

from __future__ import annotations

import os
import posixpath
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from sandbox.ecosystems.go.gomod import GoMod, read_go_mod
from sandbox.worktree.repo_files import RepoFiles

MAX_MODULES = 64
MAX_FOLDERS = 20_000  # folders walked looking for go.mod files
SKIPPED = frozenset({"vendor", "testdata", "node_modules"})


@dataclass(frozen=True)
class GoModule:
    """One module: its folder relative to the repository's root (`.` for the root) and go.mod."""

    folder: str
    mod: GoMod
    vendored: bool = False  # vendor/modules.txt beside its go.mod: built with -mod=vendor

    @property
    def path(self) -> str | None:
        return self.mod.module


@dataclass(frozen=True)
class GoModules:
    """The modules a repository's tests run in, the root's first, then by folder."""

    modules: tuple[GoModule, ...]
    workspace: bool = False  # named by a go.work at the root

    @property
    def several(self) -> bool:
        return len(self.modules) > 1

    @property
    def tested(self) -> tuple[GoModule, ...]:
        """The modules tested when no command names them: a workspace's, each in turn; else
        the root's alone, as `go test ./...` there tests it (a nested module, often benchmarks
        or tools with requirements of their own, is tested when a command names it); else,
        with no module at the root, each found."""
        if self.workspace:
            return self.modules
        root = self.at(".")
        return (root,) if root is not None else self.modules

    @property
    def beyond_root(self) -> bool:
        """Whether a tested module is other than the root's."""
        return any(m.folder != "." for m in self.tested)

    @property
    def root_alone(self) -> bool:
        """No module but the root's (or none): ids and paths are the root module's own."""
        return [m.folder for m in self.modules] in ([], ["."])

    def folder_of(self, import_path: str) -> str | None:
        """The repository folder of an import path in one of the modules (the longest module
        path it is under); None for another module's."""
        best: GoModule | None = None
        for module in self.modules:
            path = module.path
            if path and (import_path == path or import_path.startswith(path + "/")):
                if best is None or len(path) > len(best.path or ""):
                    best = module
        if best is None or not best.path:
            return None
        inner = import_path[len(best.path) + 1 :]
        if best.folder == ".":
            return inner or "."
        return posixpath.join(best.folder, inner) if inner else best.folder

    def module_root(self, folder: str) -> str:
        """The folder of the module a repository folder belongs to (the deepest one above it);
        `.` when none is."""
        norm = posixpath.normpath(folder) if folder not in ("", ".") else "."
        best = "."
        for module in self.modules:
            f = module.folder
            if f != "." and (norm == f or norm.startswith(f + "/")):
                if best == "." or len(f) > len(best):
                    best = f
        return best

    def test_command(self) -> str:
        """`go test` of every package of the tested modules: `./...` for the root's,
        `./tools/...` for the one in tools/ (each module's patterns run in its own folder:
        ecosystem.py)."""
        patterns = ["./..." if m.folder == "." else f"./{m.folder}/..." for m in self.tested]
        return " ".join(["go", "test", *patterns])

    def at(self, folder: str) -> GoModule | None:
        return next((m for m in self.modules if m.folder == folder), None)


def find_modules(repo: Path) -> GoModules:
    """The modules of `repo` (see the module docstring)."""
    files = RepoFiles(repo)
    if files.exists("go.work"):
        named = _used(files.read("go.work") or "", files)
        if named:
            return GoModules(modules=named, workspace=True)
    found: list[GoModule] = []
    queue: deque[str] = deque(["."])
    walked = 0
    root = files.root
    while queue and walked < MAX_FOLDERS and len(found) < MAX_MODULES:
        folder = queue.popleft()
        walked += 1
        here = root if folder == "." else root / folder
        names: list[str] = []
        has_mod = False
        try:
            # Folders reached through no link (a link is never entered), so an entry's own
            # type is all that needs checking; one listing per folder.
            with os.scandir(here) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if _walked(entry.name):
                            names.append(entry.name)
                    elif entry.name == "go.mod" and entry.is_file(follow_symlinks=False):
                        has_mod = True
        except OSError:
            continue
        rel = "go.mod" if folder == "." else f"{folder}/go.mod"
        if has_mod and (mod := read_go_mod(repo, rel)) is not None:
            found.append(_module(files, folder, mod))
        queue.extend(n if folder == "." else f"{folder}/{n}" for n in sorted(names))
    return GoModules(modules=tuple(sorted(found, key=_order)))


def _module(files: RepoFiles, folder: str, mod: GoMod) -> GoModule:
    vendor = "vendor/modules.txt" if folder == "." else f"{folder}/vendor/modules.txt"
    return GoModule(folder=folder, mod=mod, vendored=files.exists(vendor))


def _walked(name: str) -> bool:
    return name not in SKIPPED and not name.startswith((".", "_"))


def _order(module: GoModule) -> tuple[bool, str]:
    return module.folder != ".", module.folder


def _used(text: str, files: RepoFiles) -> tuple[GoModule, ...]:
    """The modules a go.work's `use` lines name (`use ./a`, `use ( ./a ./b )`), in the tree."""
    folders: list[str] = []
    block = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if block:
            if line == ")":
                block = False
            elif line:
                folders.append(line.strip('"`'))
            continue
        verb, _, rest = line.partition(" ")
        if verb == "use":
            rest = rest.strip()
            if rest == "(":
                block = True
            elif rest:
                folders.append(rest.strip('"`'))
    out: dict[str, GoModule] = {}
    for word in folders[:MAX_MODULES]:
        folder = files.inside(word)
        if folder is None:
            continue  # outside the tree, or through a link: not ours to test
        rel = "go.mod" if folder == "." else f"{folder}/go.mod"
        if files.exists(rel) and (mod := read_go_mod(files.root, rel)) is not None:
            out.setdefault(folder, _module(files, folder, mod))
    return tuple(sorted(out.values(), key=_order))
