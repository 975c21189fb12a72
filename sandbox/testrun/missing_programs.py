"""A broken environment told from a bug: the tests before any change run a program the sandbox
does not have (a pager, a compiler, a tool of the project's field).

No edit of the code mends that, so the run stops before the first model call. The signals taken,
each naming the program:

- Python's `subprocess` failing to start it: `FileNotFoundError: [Errno 2] No such file or
  directory: 'name'` in a failure whose traceback shows `subprocess.py` (the same error from
  `open()` is a missing file, not a program);
- a shell that did not find it: `sh: 1: name: not found` (dash, Debian's `/bin/sh`),
  `bash: line 1: name: command not found`, `zsh: command not found: name`;
- pytest showing `shutil.which('name')` as None in a failed assertion.

Left out: a command that exited 127 with its error hidden (`CalledProcessError` of a captured
shell: which word was missing is not said), `Exec format error` and `Permission denied` (a file
that exists: the repository's or one it built), and a failure that expects an exception
(`pytest.raises`, `assertRaises` in its shown code: a test that a missing program is reported
well is the code's to pass).

The program must be one the repository asks for, not one its code computes: a bug that builds a
wrong name (`"less" + (".exe" if os.name != "nt" else "")`, a flipped test) must reach the model.
So a name counts only when it is

- bare (no `/`): `./scripts/tool.sh` or an absolute path is the code's business;
- not the name of a file or folder in the repository (the code may be calling it wrongly);
- written out in the repository: a word of a string literal of its Python code (docstrings and
  `cwd=` values left out: prose, and a missing working folder raises the same error) or of its
  shell scripts, Makefiles and configuration (tox.ini, setup.cfg, CI's YAML); or declared as the
  project's own script (`[project.scripts]`, `console_scripts`), which only its set-up installs.

A name the repository spells out but misspells (`["lesss"]`) is taken at its word; the one line
names it, so the user sees the typo. A program that only a library the tests use names (graphviz
running `dot`) is not recognised here: the repository never writes it, and the traceback that
would show the library's frame is trimmed; such a run reaches the model.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sandbox.testrun.run import TestRun

NOT_STARTED = re.compile(r"FileNotFoundError: \[Errno 2\] No such file or directory: '([^'\n]+)'")
SUBPROCESS_FRAME = re.compile(r"subprocess\.py(?::\d+|\", line \d+)")
SHELL_NOT_FOUND = re.compile(
    r"\b(?:sh|bash|dash|ksh)(?:: line \d+|: \d+)?: (?:exec: )?([^\s:'\"]+): (?:command )?not found"
)
ZSH_NOT_FOUND = re.compile(r"\bzsh:\d*:? command not found: ([^\s:'\"]+)")
WHICH_NONE = re.compile(r"None = <function which at 0x[0-9a-f]+>\('([^'\n]+)'\)")
EXPECTS_RAISE = re.compile(r"^[> ].*\b(?:raises|assertRaises\w*)\(", re.M)
BARE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
_WORD_SPLIT = re.compile(r"[^\w.+\-/]+")
_SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".tox", ".nox", ".venv", "venv"}
    | {"build", "dist", ".eggs", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages"}
)
_CONFIG_SUFFIXES = frozenset({".sh", ".bash", ".mk", ".cfg", ".ini", ".toml", ".yml", ".yaml"})
_CONFIG_NAMES = frozenset({"Makefile", "GNUmakefile", "makefile", "Dockerfile", "Justfile"})
_MAX_FILE_BYTES = 2_000_000


@dataclass(frozen=True, kw_only=True)
class MissingProgram:
    """A program the tests could not run, and where the repository declares it, if it does."""

    program: str  # as the error named it
    where: str  # the first test (or "the test command") that failed on it
    declared_in: str | None = None  # the project's own script, declared there but not installed

    def describe(self) -> str:
        """One line: what is missing, and how to provide it."""
        if self.declared_in is not None:
            return (
                f"the tests run {self.program!r} ({self.where}): the repository declares it in "
                f"{self.declared_in}, but the project is not installed in the sandbox"
            )
        return (
            f"the tests run {self.program!r} ({self.where}), a program the sandbox does not "
            "have: provide it in a custom image (--image, docs/configuration.md)"
        )


def programs_not_found(text: str) -> list[str]:
    """The programs one failure's text says could not be started, in order, each once."""
    if EXPECTS_RAISE.search(text):
        return []
    names = [*WHICH_NONE.findall(text), *SHELL_NOT_FOUND.findall(text)]
    names += ZSH_NOT_FOUND.findall(text)
    if SUBPROCESS_FRAME.search(text):
        names += NOT_STARTED.findall(text)
    return list(dict.fromkeys(names))


def missing_programs(run: TestRun, tree: Path) -> list[MissingProgram]:
    """Programs the failing tests (or the whole command, without a report) could not run and
    that the repository asks for by name (see the module's docstring); one entry per program."""
    candidates: dict[str, str] = {}
    for where, text in run.failure_texts():
        for name in programs_not_found(text):
            if BARE_NAME.fullmatch(name) and name not in candidates:
                candidates[name] = where
    if not candidates:
        return []
    files = _repository_files(tree)
    ours = {path.name for path in files} | {part for path in files for part in path.parts[:-1]}
    found = []
    for name, where in candidates.items():
        declared = _declared_script(tree, name)
        if declared is None and (name in ours or not _written_out(tree, files, name)):
            continue
        found.append(MissingProgram(program=name, where=where, declared_in=declared))
    return found


def _repository_files(tree: Path) -> list[Path]:
    """Every file of the repository, relative to its root, build and cache folders left out."""
    files: list[Path] = []
    for folder, dirs, names in os.walk(tree):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        rel = Path(folder).relative_to(tree)
        files.extend(rel / name for name in names)
    return files


def _declared_script(tree: Path, name: str) -> str | None:
    """The file that declares `name` as the project's own command (`name = "pkg.cli:main"` in
    pyproject.toml's scripts, setup.cfg's or setup.py's console_scripts), if one does."""
    entry = re.compile(rf"^\s*['\"]?{re.escape(name)}['\"]?\s*=\s*['\"]?[\w.]+:\w", re.M)
    for file in ("pyproject.toml", "setup.cfg", "setup.py"):
        path = tree / file
        try:
            if path.is_file() and entry.search(path.read_text(encoding="utf-8", errors="replace")):
                return file
        except OSError:
            continue
    return None


def _written_out(tree: Path, files: list[Path], name: str) -> bool:
    """Whether the repository writes `name` as a word of a string in its Python code, or as a
    word of a script, Makefile or configuration file."""
    needle = name.encode()
    for rel in files:
        python = rel.suffix == ".py"
        if not (python or rel.suffix in _CONFIG_SUFFIXES or rel.name in _CONFIG_NAMES):
            continue
        path = tree / rel
        try:
            if path.stat().st_size > _MAX_FILE_BYTES or needle not in (data := path.read_bytes()):
                continue
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace")
        strings = _python_strings(text) if python else None
        for chunk in [text] if strings is None else strings:
            if name in (word.rstrip(".") for word in _WORD_SPLIT.split(chunk)):
                return True
    return False


def _python_strings(source: str) -> Iterator[str] | None:
    """The string literals of a Python file but its docstrings and `cwd=` values; None when it
    does not parse (the caller reads the whole text then)."""
    try:
        with warnings.catch_warnings():  # an invalid escape in someone's code is not ours to say
            warnings.simplefilter("ignore")
            module = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    left_out: set[int] = set()
    for node in ast.walk(module):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                left_out.add(id(first.value))
        elif isinstance(node, ast.keyword) and node.arg == "cwd":
            left_out.add(id(node.value))
    return (
        node.value
        for node in ast.walk(module)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        and id(node) not in left_out
    )  # fmt: skip
