"""What a repository says of the Python it runs on: `requires-python` (the versions it accepts),
and the versions it pins, `.python-version` first, then the `python-version` of its CI workflows,
then the `python:` images of its GitLab CI (`image: python:3.12-slim`).

Read, never run, through sandbox/worktree/repo_files.py (no symlinks, 1 MB per file, at most
MAX_WORKFLOWS workflow files, each scanned by sandbox/worktree/workflows.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.worktree.ci_jobs import GITLAB, gitlab_image_versions
from sandbox.worktree.repo_files import RepoFiles, requires_python
from sandbox.worktree.workflows import workflow_texts, workflow_values

MAX_PINS = 100
KEY = "python-version"
_VERSION = re.compile(r"(?:cpython-?|python-?)?(\d+)\.(\d+)(?:\.\d+)?")
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
    for rel, workflow in workflow_texts(files):
        pins += _pins(workflow_values(workflow, KEY), rel)
    pins += _pins(gitlab_image_versions(files, "python"), GITLAB)
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
