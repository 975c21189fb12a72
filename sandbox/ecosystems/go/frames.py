"""The `file.go:42` places a Go test failure's text names, as files of the working copy.

Go 1.24 writes them three ways (tests/test_go_suspects.py runs each in a real container):

- a test's own log line (`t.Errorf`, `t.Fatal`): the file's base name, in the folder of the
  test's package: `    add_test.go:7: Add(1, 2) = -1`;
- a panic's stack, innermost call first: the file's absolute path in the container,
  `\t/workspace/calc/add.go:6 +0x1d` (the standard library's and the module cache's are not
  the working copy's, and are left out);
- the compiler: relative to the folder `go` ran in, the module's root: `strs/rev.go:3:40:
  undefined: x` (`./rev.go` from inside the package); in a repository of several modules,
  the root of the failing package's module (`module_root`).

A place is kept when it names a plain file of the working copy, reached through no link.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.worktree.repo_files import RepoFiles

#: Where a container sandbox mounts the working copy (as stack_frames.WORKSPACE_MOUNT says).
WORKSPACE_MOUNT = "/workspace"
MAX_TEXT_CHARS = 200_000  # of one failure's text searched
MAX_FRAMES = 200  # places kept of one failure's text
_FRAME = re.compile(r"(?<![\w.@+/-])(/?(?:[\w.@+-]+/)*[\w.@+-]+\.go):(\d{1,7})(?![\d])")


@dataclass(frozen=True)
class GoFrame:
    """One place in a Go file of the working copy: its workspace-relative path and line."""

    path: str
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def package_of(test_id: str) -> str:
    """The package folder of a Go test id (`calc::TestAdd/x` -> `calc`; a package's own id,
    a build failure's, is its folder)."""
    return test_id.partition("::")[0] or "."


def frames(text: str, *, folder: str, workspace: Path, module_root: str = ".") -> list[GoFrame]:
    """The places `text` names in Go files of the working copy, in the order written, each
    once; `folder`: the failing test's package folder (where a bare file name is).

    >>> import tempfile; root = Path(tempfile.mkdtemp()); (root / "calc").mkdir()
    >>> for name in ("calc/add.go", "calc/add_test.go"): _ = (root / name).write_text("")
    >>> text = ("    add_test.go:7: Add(1, 2) = -1\\n\\t/usr/local/go/src/testing/testing.go:17\\n"
    ...     "\\t/workspace/calc/add.go:6 +0x1d\\ncalc/add.go:3:40: undefined: x\\n./add.go:2")
    >>> [f.where() for f in frames(text, folder="calc", workspace=root)]
    ['calc/add_test.go:7', 'calc/add.go:6', 'calc/add.go:3', 'calc/add.go:2']
    """
    files = RepoFiles(workspace)
    roots = (WORKSPACE_MOUNT, workspace.as_posix().rstrip("/"))
    found: dict[tuple[str, int], GoFrame] = {}
    for match in _FRAME.finditer(text[:MAX_TEXT_CHARS]):
        rel = _resolve(match[1], folder=folder, roots=roots, files=files, module=module_root)
        line = int(match[2])
        if rel is None or line < 1 or (rel, line) in found:
            continue
        found[(rel, line)] = GoFrame(rel, line)
        if len(found) >= MAX_FRAMES:
            break
    return list(found.values())


def _resolve(
    path: str, *, folder: str, roots: tuple[str, ...], files: RepoFiles, module: str = "."
) -> str | None:
    if path.startswith("/"):
        for root in roots:
            if path.startswith(root + "/"):
                rel = files.inside(path[len(root) + 1 :])
                return rel if rel is not None and files.exists(rel) else None
        return None
    here = posixpath.normpath(folder) if folder not in ("", ".") else ""
    if path.startswith("./"):
        candidates = [posixpath.join(here, path), path]
    elif "/" in path:
        candidates = [path, posixpath.join(here, path)]
    else:
        candidates = [posixpath.join(here, path), path]
    if module not in ("", "."):
        candidates.insert(0 if "/" in path and not path.startswith("./") else 1,
                          posixpath.join(module, path))  # fmt: skip
    for candidate in candidates:
        rel = files.inside(candidate)
        if rel is not None and files.exists(rel):
            return rel
    return None
