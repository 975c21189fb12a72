"""go.mod read as hostile input (through RepoFiles: no symlinks, a size cap), never run.

What the harness needs of it: the module path, the `go` directive (the least Go that may build
the module, since Go 1.21 a hard minimum), the `toolchain` line (the Go its maintainers use),
and the modules it requires (set-up names a missing one). Go versions are `1.22`, `1.22.3`,
`1.21rc1` (a pre-release sorts before its release); a toolchain is `go1.22.3` or `default`.

>>> mod = parse_go_mod('module example.com/m // c\\n\\ngo 1.22\\ntoolchain go1.23.4\\n'
...     'require (\\n\\trsc.io/quote v1.5.2 // indirect\\n)\\nrequire a.b/c v0.1.0\\n')
>>> mod.module, mod.go, mod.toolchain, [r.path for r in mod.requires]
('example.com/m', (1, 22, 0), (1, 23, 4), ['rsc.io/quote', 'a.b/c'])
>>> go_version("1.21rc1"), dotted((1, 24, 0)), dotted((1, 24, 0), line=True)
((1, 21, -1), '1.24.0', '1.24')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.worktree.repo_files import RepoFiles

#: (major, minor, patch); a pre-release's patch is -1, before the release's .0.
GoVersion = tuple[int, int, int]
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?((?:rc|beta)\d+)?")


@dataclass(frozen=True)
class Require:
    path: str
    version: str


@dataclass(frozen=True, kw_only=True)
class GoMod:
    module: str | None
    go: GoVersion | None  # the `go` directive
    go_text: str | None  # as written: "1.22"
    toolchain: GoVersion | None  # the `toolchain` line, "default" and unreadable ones: None
    toolchain_text: str | None
    requires: tuple[Require, ...] = ()

    @property
    def needs(self) -> GoVersion | None:
        """The least Go this module asks for: the greater of the directive and the toolchain."""
        known = [v for v in (self.go, self.toolchain) if v is not None]
        return max(known) if known else None


def go_version(text: str) -> GoVersion | None:
    """`1.22` -> (1, 22, 0); `go1.22.3` -> (1, 22, 3); None when it is not a Go version."""
    match = _VERSION.fullmatch(text.strip().removeprefix("go"))
    if match is None:
        return None
    major, minor, patch, pre = match.groups()
    return int(major), int(minor), -1 if pre else int(patch or 0)


def dotted(version: GoVersion, *, line: bool = False) -> str:
    """(1, 24, 3) as "1.24.3" (`line`: "1.24")."""
    major, minor, patch = version
    return f"{major}.{minor}" if line else f"{major}.{minor}.{max(patch, 0)}"


def parse_go_mod(text: str) -> GoMod:
    module = go_text = toolchain_text = None
    requires: list[Require] = []
    block: str | None = None
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        if block is not None:
            if line == ")":
                block = None
            elif block == "require" and len(words := line.split()) >= 2:
                requires.append(Require(_unquote(words[0]), words[1]))
            continue
        verb, _, rest = line.partition(" ")
        rest = rest.strip()
        if rest == "(":
            block = verb
        elif verb == "module":
            module = _unquote(rest)
        elif verb == "go":
            go_text = rest
        elif verb == "toolchain":
            toolchain_text = rest
        elif verb == "require" and len(words := rest.split()) >= 2:
            requires.append(Require(_unquote(words[0]), words[1]))
    return GoMod(
        module=module,
        go=go_version(go_text) if go_text else None,
        go_text=go_text,
        toolchain=go_version(toolchain_text) if toolchain_text else None,
        toolchain_text=toolchain_text,
        requires=tuple(requires),
    )


def read_go_mod(repo: Path, rel: str = "go.mod") -> GoMod | None:
    """The repository's go.mod (at `rel`); None when absent or refused."""
    text = RepoFiles(repo).read(rel)
    return None if text is None else parse_go_mod(text)


def _unquote(word: str) -> str:
    return word.strip().strip('"`')
