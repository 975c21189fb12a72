r"""The values a repository's CI workflows give a key (`python-version`, `node-version`), read
as hostile text through RepoFiles.

A workflow is scanned line by line, not loaded as YAML: no YAML library is a dependency, a
hostile file's aliases cannot make the scan blow up, and an unquoted `3.10` stays 3.10 (a YAML
loader reads the float 3.1).

>>> key_values('python-version: ["3.9", 3.10, "pypy3.10"]', "python-version")
['3.9', '3.10', 'pypy3.10']
>>> workflow_jobs("on: push\njobs:\n  lint:\n    steps: []\n  test:\n    runs-on: x\n")
[('lint', 3, 4), ('test', 5, 6)]
>>> workflow_services("jobs:\n  t:\n    services:\n      db:\n        image: postgres\n")
[('db', 4)]
>>> run_lines("steps:\n  - run: npm ci\n  - run: |\n      make \\\n        cython\n      pytest\n")
[(2, 'npm ci'), (4, 'make cython'), (6, 'pytest')]
"""

from __future__ import annotations

import re

from sandbox.worktree.repo_files import RepoFiles

WORKFLOWS = ".github/workflows"
MAX_WORKFLOWS = 50
_LINE = re.compile(r"(\s*)(?:-\s+)?([\w.-]+)\s*:(?:\s+(.*?))?\s*")
_RUN = re.compile(r"(\s*)(?:-\s+)?run\s*:(?:\s+(.*?))?\s*")
_MATRIX_REF = re.compile(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}")


def workflow_texts(files: RepoFiles) -> list[tuple[str, str]]:
    """(path, text) of the repository's workflows by file name, the first MAX_WORKFLOWS (a
    note in `files` when there are more)."""
    names = [n for n in files.listed(WORKFLOWS) if n.endswith((".yml", ".yaml"))]
    if len(names) > MAX_WORKFLOWS:
        files.notes.append(f"{WORKFLOWS}: over {MAX_WORKFLOWS} workflows; the rest not read")
    out = []
    for name in names[:MAX_WORKFLOWS]:
        rel = f"{WORKFLOWS}/{name}"
        if (text := files.read(rel)) is not None:
            out.append((rel, text))
    return out


def workflow_values(text: str, key: str) -> list[str]:
    """The values of a workflow's `key`, and of the matrix keys they name
    (`python-version: ${{ matrix.python }}`), in the order written."""
    keys = {key}
    for value in key_values(text, key):
        keys.update(_MATRIX_REF.findall(value))
    return key_values(text, *keys)


def key_values(text: str, *keys: str) -> list[str]:
    """The scalar values of `keys` in YAML-ish `text`: `key: 3.12`, `key: [3.11, "3.12"]` (on
    one line or several), and a block list of `- 3.12` lines under `key:`."""
    lines = text.splitlines()
    out: list[str] = []
    for n, line in enumerate(lines):
        match = _LINE.fullmatch(strip_comment(line))
        if match is None or match[2] not in keys:
            continue
        indent, value = len(match[1]), match[3] or ""
        if value.startswith("["):
            flow = value
            for more in lines[n + 1 : n + 50]:
                if "]" in flow:
                    break
                flow += " " + strip_comment(more).strip()
            out += [unquote(v) for v in flow[1:].split("]", 1)[0].split(",") if v.strip()]
        elif value:
            out.append(unquote(value))
        else:
            out += _block_list(lines[n + 1 :], indent)
    return out


def workflow_jobs(text: str) -> list[tuple[str, int, int]]:
    """Each job of a GitHub Actions workflow: its key and the numbers of its first and last
    lines (the keys indented one level under a top-level `jobs:`)."""
    lines = text.splitlines()
    top = next((n for n, line in enumerate(lines) if re.fullmatch(r"jobs\s*:\s*", line)), None)
    if top is None:
        return []
    jobs: list[tuple[str, int, int]] = []
    indent = None
    for n in range(top + 1, len(lines)):
        bare = strip_comment(lines[n])
        if not bare.strip():
            continue
        depth = len(bare) - len(bare.lstrip())
        if depth == 0:
            break
        indent = depth if indent is None else indent
        key = re.fullmatch(r"\s*([\w-]+)\s*:\s*", bare)
        if depth == indent and key:
            jobs.append((key[1], n + 1, n + 1))
        elif jobs:
            jobs[-1] = (jobs[-1][0], jobs[-1][1], n + 1)
    return jobs


def workflow_services(text: str) -> list[tuple[str, int]]:
    """The services a workflow's jobs start (the keys under a job's `services:`), each with
    the number of its line."""
    lines = text.splitlines()
    out: list[tuple[str, int]] = []
    for _job, first, last in workflow_jobs(text):
        for n in range(first, last):
            found = re.fullmatch(r"(\s*)services\s*:\s*", strip_comment(lines[n - 1]))
            if found is None:
                continue
            indent, child = len(found[1]), None
            for m in range(n, last):
                bare = strip_comment(lines[m])
                if not bare.strip():
                    continue
                depth = len(bare) - len(bare.lstrip())
                if depth <= indent:
                    break
                child = depth if child is None else child
                key = re.fullmatch(r"\s*([\w.-]+)\s*:.*", bare)
                if depth == child and key:
                    out.append((key[1], m + 1))
    return out


def run_lines(text: str) -> list[tuple[int, str]]:
    """The shell lines of a workflow's `run:` steps, each with the number of the line it
    starts on: `run: cmd`, and the lines of a `run: |` (or `>`) block, a line ending in a
    backslash joined with the next. Comments and blank lines are left out."""
    lines = text.splitlines()
    out: list[tuple[int, str]] = []
    for n, line in enumerate(lines):
        match = _RUN.fullmatch(line)
        if match is None:
            continue
        value = (match[2] or "").strip()
        if value and value[0] not in "|>":
            out.append((n + 1, unquote(value)))
            continue
        indent, held, start = len(match[1]), "", 0
        for m, more in enumerate(lines[n + 1 : n + 400], start=n + 2):
            if more.strip() and len(more) - len(more.lstrip()) <= indent:
                break
            bare = more.strip()
            if not bare or (bare.startswith("#") and not held):
                continue
            start = start or m
            if bare.endswith("\\"):
                held += bare[:-1].rstrip() + " "
                continue
            out.append((start, held + bare))
            held, start = "", 0
    return out


def _block_list(lines: list[str], indent: int) -> list[str]:
    """`- item` lines indented deeper than their key, up to the first line that is not one."""
    items: list[str] = []
    for line in lines:
        bare = strip_comment(line)
        if not bare.strip():
            continue
        if len(bare) - len(bare.lstrip()) < indent or not bare.strip().startswith("- "):
            break
        item = bare.strip()[2:].strip()
        if ":" in item and not item.startswith(("'", '"')):
            break  # a list of mappings (`include:`), not of versions
        items.append(unquote(item))
    return items


def strip_comment(line: str) -> str:
    return re.sub(r"(^|\s)#.*", "", line).rstrip()


def unquote(value: str) -> str:
    """A YAML scalar without the quotes around it: `"3.10"` is 3.10, while a shell line that
    ends in a quoted word (`pip install 'x==1'`) keeps its quotes."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].strip()
    if value[:1] in ("'", '"') and value.count(value[0]) == 1:
        return value.lstrip("'\"")
    return value
