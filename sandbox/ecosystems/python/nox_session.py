"""What a project's noxfile.py says its test session installs and runs: read, never run.

A project tested by nox says there what its tests need beyond its files (`session.install(
"pytest", "hypothesis")`) and how pytest runs (`session.run("pytest", "--doctest-modules",
"src")`, `session.env["FLAG"] = "1"`). The file is hostile text: it is parsed by Python's `ast`
(never imported, never executed), and only literal strings are taken. The test session is the
first session (a function decorated `@nox.session`, `@session` or `@nox.session(...)`) that runs
pytest, one named test or tests first. Its installs are read as a `pip install` line is
(ci_install.py: paths, requirement files, `.` and CI's own tools left out), its pytest line as
tox's is (tox_command.py: collection options and the tree's paths kept), its plain environment
values go before the command.

>>> found = nox_session("import nox\\n@nox.session\\ndef tests(s):\\n    s.install('hypothesis')\\n"
...                     "    s.run('pytest', '--doctest-modules', '-x')\\n", lambda w: set())
>>> found.name, found.requirements, found.words
('tests', ('hypothesis',), ('--doctest-modules',))
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass

from sandbox.ecosystems.python.ci_install import ci_requirements_in
from sandbox.ecosystems.python.pytest_command import DEFAULT_TEST_CMD
from sandbox.ecosystems.python.tox_command import existing_paths, tox_pytest_words
from sandbox.worktree.repo_files import RepoFiles

NOXFILE = "noxfile.py"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_ENV = 20


@dataclass(frozen=True)
class NoxSession:
    """The test session of a noxfile: its name and line, what it installs (and the CI tools
    left out), the pytest words kept, and its plain environment values."""

    name: str
    line: int
    requirements: tuple[str, ...]
    left_out: tuple[str, ...]
    words: tuple[str, ...]
    env: tuple[tuple[str, str], ...]


def nox_test_session(files: RepoFiles) -> NoxSession | None:
    """The repository's noxfile's test session, None when it has none."""
    text = files.read(NOXFILE)
    return None if text is None else nox_session(text, lambda w: existing_paths(files, w))


def nox_test_command(files: RepoFiles) -> str | None:
    """The pytest command the noxfile's test session runs, when it says more than the default."""
    found = nox_test_session(files)
    if found is None or (not found.words and not found.env):
        return None
    prefix = [f"{name}={shlex.quote(value)}" for name, value in found.env]
    return " ".join([*prefix, DEFAULT_TEST_CMD, *map(shlex.quote, found.words)])


def nox_session(text: str, existing: Callable[[list[str]], Collection[str]]) -> NoxSession | None:
    """The test session of noxfile `text`; None when the file does not parse or no session runs
    pytest. `existing` says which of a list of words name the tree's files or folders."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    sessions = [f for f in tree.body if isinstance(f, ast.FunctionDef) and _is_session(f)]
    sessions.sort(key=lambda f: f.name not in ("test", "tests"))
    for func in sessions:
        found = _read(func, existing)
        if found is not None:
            return found
    return None


def _read(
    func: ast.FunctionDef, existing: Callable[[list[str]], Collection[str]]
) -> NoxSession | None:
    installs: list[str] = []
    left: list[str] = []
    env: list[tuple[str, str]] = []
    words: list[str] | None = None
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            env += _env_item(node.targets[0], node.value)
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        args = _strings(node.args)
        if args is None:
            continue
        if node.func.attr == "install":
            kept, dropped = ci_requirements_in(f"pip install {shlex.join(args)}")
            installs += [r for r in kept if r not in installs]
            left += [d for d in dropped if d not in left]
        elif node.func.attr == "run" and words is None and (rest := _pytest_args(args)) is not None:
            words = tox_pytest_words(rest, existing(rest))
            for keyword in node.keywords:
                if keyword.arg == "env" and isinstance(keyword.value, ast.Dict):
                    env += _dict_items(keyword.value)
    if words is None:
        return None
    return NoxSession(
        name=func.name,
        line=func.lineno,
        requirements=tuple(installs),
        left_out=tuple(left),
        words=tuple(words),
        env=tuple(env[:MAX_ENV]),
    )


def _is_session(func: ast.FunctionDef) -> bool:
    for dec in func.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "session":
            return True
    return False


def _pytest_args(args: list[str]) -> list[str] | None:
    """The words after pytest in a `session.run(...)`: `pytest`, `python -m pytest`,
    `coverage run -m pytest`; None for any other command."""
    for start in range(min(len(args), 4)):
        head = args[: start + 1]
        if head[-1] in ("pytest", "py.test") and (start == 0 or head[-2] == "-m"):
            return args[start + 1 :]
    return None


def _strings(nodes: list[ast.expr]) -> list[str] | None:
    """Literal string arguments, starred lists of literal strings spread; None if any is not."""
    out: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.Starred) and isinstance(node.value, ast.Attribute):
            continue  # `*session.posargs`: the user's words, none here
        else:
            return None
    return out


def _env_item(target: ast.expr, value: ast.expr) -> list[tuple[str, str]]:
    """`session.env["NAME"] = "value"` as (NAME, value)."""
    if (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Attribute)
        and target.value.attr == "env"
    ):
        key = target.slice
        if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
            return _plain(key.value, value.value)
    return []


def _dict_items(node: ast.Dict) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key, value in zip(node.keys, node.values, strict=False):
        if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
            out += _plain(key.value, value.value)
    return out


def _plain(name: object, value: object) -> list[tuple[str, str]]:
    if isinstance(name, str) and isinstance(value, str) and _NAME.fullmatch(name):
        if len(value) < 200 and "\n" not in value:
            return [(name, value)]
    return []
