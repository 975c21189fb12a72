"""What a repository says of the Python it runs on: `requires-python` (the versions it accepts),
and the versions it pins, `.python-version` first, then the `python-version` of its CI workflows.

Read, never run, through sandbox/worktree/repo_files.py (no symlinks, 1 MB per file, at most
MAX_WORKFLOWS workflow files). A workflow is scanned line by line for its `python-version` keys,
not loaded as YAML: no YAML library is a dependency, a hostile file's aliases cannot make the scan
blow up, and an unquoted `3.10` stays 3.10 (a YAML loader reads the float 3.1).

>>> _versions_in('python-version: ["3.9", 3.10, "pypy3.10"]', "python-version")
['3.9', '3.10', 'pypy3.10']
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.worktree.repo_files import RepoFiles, requires_python

WORKFLOWS = ".github/workflows"
MAX_WORKFLOWS = 50
MAX_PINS = 100
KEY = "python-version"
_VERSION = re.compile(r"(?:cpython-?|python-?)?(\d+)\.(\d+)(?:\.\d+)?")
_LINE = re.compile(r"(\s*)(?:-\s+)?([\w.-]+)\s*:(?:\s+(.*?))?\s*")
_MATRIX_REF = re.compile(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}")
_CLAUSE = re.compile(r"\s*(~=|===|==|!=|<=|>=|<|>)\s*(\d+(?:\.\d+)*)(\.\*)?\s*")


@dataclass(frozen=True, kw_only=True)
class Pin:
    """One Python version a file of the repository names."""

    python: tuple[int, int]
    source: str  # the file: ".python-version", ".github/workflows/ci.yml"
    text: str  # as written there: "3.13", "3.12.1"

    def describe(self) -> str:
        """ ".python-version 3.13"."""
        return f"{self.source} {self.text}"


@dataclass(frozen=True, kw_only=True)
class PythonPins:
    """The project's word on its Python; `pins` in the order they count (.python-version, then
    the workflows by file name, each file's in the order written)."""

    requires_python: str | None = None
    pins: tuple[Pin, ...] = ()
    notes: tuple[str, ...] = ()


def read_pins(repo: Path) -> PythonPins:
    """What `repo`'s files say of its Python (nothing in it is run)."""
    files = RepoFiles(repo)
    wanted = requires_python(files.toml("pyproject.toml"), files.ini("setup.cfg"))
    pins: list[Pin] = []
    text = files.read(".python-version")
    for line in (text or "").splitlines():
        pins += _pins([re.sub(r"#.*", "", line).strip()], ".python-version")
    names = [n for n in files.listed(WORKFLOWS) if n.endswith((".yml", ".yaml"))]
    if len(names) > MAX_WORKFLOWS:
        files.notes.append(f"{WORKFLOWS}: over {MAX_WORKFLOWS} workflows; the rest not read")
    for name in names[:MAX_WORKFLOWS]:
        rel = f"{WORKFLOWS}/{name}"
        if (workflow := files.read(rel)) is not None:
            pins += _pins(_workflow_versions(workflow), rel)
    return PythonPins(requires_python=wanted, pins=tuple(pins[:MAX_PINS]), notes=tuple(files.notes))


def _pins(texts: list[str], source: str) -> list[Pin]:
    """The texts that are CPython versions ("3.12", "3.12.1", "cpython-3.12"), once each;
    "3.x", "pypy3.10", "system" and the like name no version a release ships."""
    out: list[Pin] = []
    for text in texts:
        match = _VERSION.fullmatch(text)
        if match and all(p.text != text for p in out):
            out.append(Pin(python=(int(match[1]), int(match[2])), source=source, text=text))
    return out


def _workflow_versions(text: str) -> list[str]:
    """The values of a workflow's `python-version` keys, and of the matrix keys they name
    (`python-version: ${{ matrix.python }}`), in the order written."""
    keys = {KEY}
    for value in _versions_in(text, KEY):
        keys.update(_MATRIX_REF.findall(value))
    return _versions_in(text, *keys)


def _versions_in(text: str, *keys: str) -> list[str]:
    """The scalar values of `keys` in YAML-ish `text`: `key: 3.12`, `key: [3.11, "3.12"]` (on
    one line or several), and a block list of `- 3.12` lines under `key:`."""
    lines = text.splitlines()
    out: list[str] = []
    for n, line in enumerate(lines):
        match = _LINE.fullmatch(_strip_comment(line))
        if match is None or match[2] not in keys:
            continue
        indent, value = len(match[1]), match[3] or ""
        if value.startswith("["):
            flow = value
            for more in lines[n + 1 : n + 50]:
                if "]" in flow:
                    break
                flow += " " + _strip_comment(more).strip()
            out += [_unquote(v) for v in flow[1:].split("]", 1)[0].split(",") if v.strip()]
        elif value:
            out.append(_unquote(value))
        else:
            out += _block_list(lines[n + 1 :], indent)
    return out


def _block_list(lines: list[str], indent: int) -> list[str]:
    """`- item` lines indented deeper than their key, up to the first line that is not one."""
    items: list[str] = []
    for line in lines:
        bare = _strip_comment(line)
        if not bare.strip():
            continue
        if len(bare) - len(bare.lstrip()) < indent or not bare.strip().startswith("- "):
            break
        item = bare.strip()[2:].strip()
        if ":" in item and not item.startswith(("'", '"')):
            break  # a list of mappings (`include:`), not of versions
        items.append(_unquote(item))
    return items


def _strip_comment(line: str) -> str:
    return re.sub(r"(^|\s)#.*", "", line).rstrip()


def _unquote(value: str) -> str:
    return value.strip().strip("'\"").strip()


def python_satisfies(requires_python: str, version: tuple[int, ...]) -> bool | None:
    """Whether Python `version` meets a `requires-python` specifier, None where it cannot be
    parsed; release numbers only (no pre-releases), which is what requires-python holds.

    >>> python_satisfies(">=3.8, !=3.9.*", (3, 11, 4))
    True
    """
    result = True
    for clause in filter(str.strip, requires_python.split(",")):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            return None
        op, text, star = match.groups()
        spec = tuple(int(n) for n in text.split("."))
        if (star and op not in ("==", "!=")) or (op == "~=" and len(spec) < 2):
            return None
        width = max(len(spec), len(version))
        have = tuple(version) + (0,) * (width - len(version))
        want = spec + (0,) * (width - len(spec))
        prefix = have[: len(spec)] == spec
        result &= {
            "==": prefix if star else have == want,
            "!=": not prefix if star else have != want,
            "===": text == ".".join(map(str, version)),
            ">=": have >= want,
            ">": have > want,
            "<=": have <= want,
            "<": have < want,
            "~=": have >= want and have[: len(spec) - 1] == spec[:-1],
        }[op]
    return result
