r"""A .gitlab-ci.yml with the repository files it `include:`s, as one document.

GitLab CI reads a pipeline from `.gitlab-ci.yml` and the files its `include:` names: `local:`
paths and plain strings are files of the same repository (`ci/test.yml`, `/ci/test.yml`);
`remote:` URLs, `project:` files, `template:`s and `component:`s come from elsewhere. Only the
repository's own files are followed, read through RepoFiles (no symlink, nothing outside the
tree), the includes of an included file too, at most MAX_FILES files MAX_DEPTH deep, each
once; anything else (another host's or project's file, a wildcard, a variable, a file not
there) is a note. The files' top-level keys make one document, an included file's before the
file that includes it and a later file's key replacing an earlier one's (GitLab merges a
job's keys; a whole job is replaced here), each line with the file and line it comes from.

>>> [name for name, _first, _last in top_level_blocks(["a:", "  x: 1", "", "b: 2"])]
['a', 'b']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox.worktree.repo_files import RepoFiles
from sandbox.worktree.workflows import strip_comment, unquote

GITLAB = ".gitlab-ci.yml"
MAX_FILES = 20
MAX_DEPTH = 3
_KINDS = ("local", "remote", "project", "template", "component", "file")


@dataclass(frozen=True)
class GitlabDocument:
    """The pipeline's lines, and for each the file and line it comes from."""

    lines: tuple[str, ...]
    origins: tuple[tuple[str, int], ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def gitlab_document(files: RepoFiles) -> GitlabDocument | None:
    """The repository's GitLab pipeline with its included files; None when it has none."""
    text = files.read(GITLAB)
    if text is None:
        return None
    blocks: dict[str, list[tuple[str, str, int]]] = {}  # key -> its lines (text, file, line)
    seen = {GITLAB}
    _add(files, GITLAB, text, blocks, seen, depth=0)
    lines = [line for block in blocks.values() for line, _f, _n in block]
    origins = [(rel, n) for block in blocks.values() for _l, rel, n in block]
    return GitlabDocument(tuple(lines), tuple(origins))


def included_paths(lines: list[str], first: int, last: int) -> tuple[list[str], list[str]]:
    """The repository files an `include:` block (lines `first`..`last`) names, and what it
    names that is not one (`remote https://...`), each once."""
    head = strip_comment(lines[first - 1]).split(":", 1)[1].strip()
    items: list[tuple[str, str]] = []  # (kind, value)
    if head.startswith("["):
        items += [("", unquote(v)) for v in head[1:].split("]", 1)[0].split(",") if v.strip()]
    elif head:
        items.append(("", unquote(head)))
    for n in range(first + 1, last + 1):
        bare = strip_comment(lines[n - 1]).strip()
        bare = bare[1:].strip() if bare.startswith("-") else bare
        if not bare:
            continue
        found = re.fullmatch(r"([\w-]+)\s*:\s*(.*)", bare)
        if found is None:
            items.append(("", unquote(bare)))
        elif found[1] in _KINDS and found[1] != "file":
            items.append((found[1], unquote(found[2])))
    local: list[str] = []
    other: list[str] = []
    for kind, value in items:
        if not kind:
            kind = "remote" if re.match(r"[a-z]+://", value) else "local"
        said = f"{kind} {value}"
        if kind != "local":
            other.append(said)
        elif any(c in value for c in "*$") or not value:
            other.append(f"{said} (a wildcard or a variable)")
        else:
            local.append(value.lstrip("/"))
    return list(dict.fromkeys(local)), list(dict.fromkeys(other))


def top_level_blocks(lines: list[str]) -> list[tuple[str, int, int]]:
    """Each top-level key: its name and its first and last line numbers."""
    out: list[tuple[str, int, int]] = []
    for n, line in enumerate(lines, start=1):
        bare = strip_comment(line)
        if not bare.strip():
            continue
        if not bare[0].isspace():
            key = re.match(r"""(['"]?)([^'":]+)\1\s*:(\s|$)""", bare)
            out.append((key[2].strip() if key else "", n, n))
        elif out:
            out[-1] = (out[-1][0], out[-1][1], n)
    return out


def _add(
    files: RepoFiles,
    rel: str,
    text: str,
    blocks: dict[str, list[tuple[str, str, int]]],
    seen: set[str],
    *,
    depth: int,
) -> None:
    """`rel`'s blocks into `blocks`, after those of the files it includes."""
    lines = text.splitlines()
    own = top_level_blocks(lines)
    for name, first, last in own:
        if name != "include":
            continue
        local, other = included_paths(lines, first, last)
        for said in other:
            _note(files, f"{rel}: include: {said}: not read (only the repository's own files are)")
        for path in local:
            where = files.inside(path)
            if where is None or where in seen:
                if where is None:
                    _note(files, f"{rel}: include: local {path}: outside the repository; not read")
                continue
            if depth >= MAX_DEPTH or len(seen) >= MAX_FILES:
                _note(files, f"{rel}: include: local {path}: over {MAX_FILES} files or "
                      f"{MAX_DEPTH} deep; not read")  # fmt: skip
                continue
            seen.add(where)
            if (included := files.read(where)) is None:
                _note(files, f"{rel}: include: local {path}: not in the repository; not read")
                continue
            _add(files, where, included, blocks, seen, depth=depth + 1)
    for name, first, last in own:
        if name == "include":
            continue
        blocks.pop(name, None)  # a later file's key replaces an earlier one's, at the end
        blocks[name] = [(lines[n - 1], rel, n) for n in range(first, last + 1)]


def _note(files: RepoFiles, note: str) -> None:
    if note not in files.notes:
        files.notes.append(note)
