"""Where a failing Node test's error passed through: the stack frames of the text its runner
reported, as files of the repository.

V8 writes `at fn (/workspace/src/mean.js:3:10)`, `at /workspace/src/x.ts:4:2` and
`at Object.<anonymous> (file:///workspace/lib/a.mjs:7:1)`, innermost first; `node --test`'s TAP
report drops the `at`; jest writes paths relative to the project (`at parse (src/parse.ts:8:42)`)
and vitest too (` ❯ Range.clamp src/stats/range.ts:9:36`), in colour, the line number coloured
apart from its path. So a frame is any `path.ext:line:column` of a JavaScript or TypeScript file
once colours are stripped, and its path is taken relative to the working copy: the sandbox's
mount (/workspace), the working copy's host folder (the local sandbox runs there), or relative
already. A path that leads elsewhere (a runner's own files, `node:internal/...`) is no frame of
the repository. Parsing only: the text is the runner's, and the code under test could have
written any of it, so it points the search and never decides anything.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import unquote

from policies.paths import TEST_GLOBS, glob_regex
from sandbox.ecosystems.node.paths import TEST_GLOBS as NODE_TEST_GLOBS

if TYPE_CHECKING:
    from sandbox.ecosystems.base import FailedRun

#: The suffixes of the files Node and TypeScript run (a `.d.ts` holds no code to stop in).
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")
#: Where a container sandbox mounts the working copy (sandbox/container/docker_sandbox.py's
#: WORKSPACE_MOUNT, which this layer's readers may not import; a test keeps the two equal).
WORKSPACE_MOUNT = "/workspace"
MAX_TEXT_CHARS = 200_000  # of one failure's text searched for frames
MAX_FRAMES = 200  # frames kept of one failure's text

_COLOUR = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A path (no blanks, brackets, quotes or colons but a file URL's), a JS/TS suffix, line, column.
_FRAME = re.compile(
    r"(?:file://)?(?P<path>[^\s()\[\]{}<>'\"`,;:]+?\.(?:[cm]?[jt]s|[jt]sx))"
    r":(?P<line>\d{1,7}):(?P<column>\d{1,7})(?![\w.])"
)


@dataclass(frozen=True)
class Frame:
    """One stack frame in a file of the working copy: its workspace-relative path and line."""

    path: str
    line: int
    column: int = 0

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def frames(text: str, *, workspace: Path | None = None) -> list[Frame]:
    """The frames of `text` in files of the working copy, in the order written (a V8 stack:
    innermost first), each (path, line) once; a frame whose path leads outside is left out.

    >>> [f.where() for f in frames("at helper (file:///workspace/src/a.mjs:13:9)\\n"
    ...     "at node:internal/main:5:3\\n ❯ test/a.test.ts:4:2\\n at /usr/lib/x.js:1:1")]
    ['src/a.mjs:13', 'test/a.test.ts:4']
    """
    roots = [WORKSPACE_MOUNT]
    if workspace is not None:
        roots.append(workspace.as_posix().rstrip("/"))
    found: dict[tuple[str, int], Frame] = {}
    for match in _FRAME.finditer(_COLOUR.sub("", text[:MAX_TEXT_CHARS])):
        rel = relative(match["path"], roots=roots)
        line = int(match["line"])
        if rel is None or line < 1 or (rel, line) in found:
            continue
        found[(rel, line)] = Frame(rel, line, int(match["column"]))
        if len(found) >= MAX_FRAMES:
            break
    return list(found.values())


def failure_texts(run: FailedRun, *, workspace: Path | None = None) -> list[str]:
    """One text per failing test to find its stack in: its traceback, message and output.
    When none of them names a frame in the repository's own code, the run's output is one
    more: a test file that fails as it loads prints its stack on its own stderr, and
    `node --test` reports it as "test failed" alone."""
    if run.summary is None:
        return []
    texts = ["\n".join((f.traceback, f.message, f.output)) for f in run.summary.failures]
    found = (f for text in texts for f in frames(text, workspace=workspace))
    if texts and not any(is_source(f.path) for f in found):
        texts.append(run.result.output)
    return texts


def relative(path: str, *, roots: Iterable[str] = (WORKSPACE_MOUNT,)) -> str | None:
    """`path` relative to the working copy, None when it leads outside of it.

    >>> relative("/workspace/src/a.js"), relative("./src/../lib/b.ts"), relative("/tmp/c.js")
    ('src/a.js', 'lib/b.ts', None)
    """
    path = unquote(path)
    if path.startswith("/"):
        under = [path[len(root) + 1 :] for root in roots if path.startswith(root + "/")]
        if not under:
            return None
        path = under[0]
    norm = posixpath.normpath(path)
    if norm in (".", "..") or norm.startswith(("../", "/")):
        return None
    return norm


def is_dependency(rel: str) -> bool:
    """A file of an installed package (`node_modules/`), not of the repository's own code."""
    return "node_modules" in PurePosixPath(rel).parts


def is_test_file(rel: str) -> bool:
    """A test file by the policy's test globs (`*.test.js`, `__tests__/`, `test/`, `spec/`...).

    >>> [is_test_file(p) for p in ("src/a.spec.ts", "test/helpers.js", "src/test.js")]
    [True, True, False]
    """
    globs = (*TEST_GLOBS, *NODE_TEST_GLOBS)
    return any(glob_regex(glob, ignore_case=True).match(rel) for glob in globs)


def is_source(rel: str) -> bool:
    """A JavaScript or TypeScript file of the repository's own code: not a test, not a
    dependency's."""
    return rel.endswith(JS_SUFFIXES) and not is_test_file(rel) and not is_dependency(rel)
