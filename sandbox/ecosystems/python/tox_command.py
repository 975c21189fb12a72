"""The pytest command a project's tox.ini runs, when it says more than `python -m pytest`.

A project whose tests are run by tox says there how: `commands = pytest --doctest-modules
boltons tests` (doctests beside the tests), `set_env = THREADING_TESTS = 1` (tests that skip
without it). Read, never run: the `[testenv]` section's first `commands` line that runs pytest
(`pytest`, `py.test`, `python -m pytest`, `{envpython} -m pytest`), keeping what decides which
tests run and how they are collected (KEPT options, and paths the tree has), and the plain
`NAME = value` lines of `set_env` (or `setenv`) as variables before the command. Anything else
(coverage options, `{posargs}`, another substitution) is dropped: its plugin may not be installed,
and the harness adds its own reporting flags.

>>> tox_pytest_words(["--cov=b", "-v", "--doctest-modules", "b", "--ignore", "b/x"], {"b"})
['--doctest-modules', 'b', '--ignore', 'b/x']
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection

from sandbox.ecosystems.python.pytest_command import DEFAULT_TEST_CMD
from sandbox.worktree.repo_files import RepoFiles

#: pytest options that change which tests are collected (with their value when it is separate).
KEPT = {"--doctest-modules": False, "--doctest-glob": True, "--ignore": True}
KEPT |= {"--ignore-glob": True, "--import-mode": True, "--doctest-continue-on-failure": False}
_RUNNER = re.compile(r"(?:\{envpython\}|python3?)\s+-m\s+pytest|(?:\{envbindir\}/)?py\.?test")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tox_test_command(files: RepoFiles) -> str | None:
    """The command tox.ini's [testenv] says, when it differs from DEFAULT_TEST_CMD; else None."""
    cfg = files.ini("tox.ini")
    if cfg is None or not cfg.has_section("testenv"):
        return None
    words: list[str] | None = None
    for line in _lines(cfg.get("testenv", "commands", fallback="")):
        found = _RUNNER.match(line)
        if found is None:
            continue
        try:
            rest = shlex.split(line[found.end() :])
        except ValueError:
            continue
        words = tox_pytest_words(rest, _existing(files, rest))
        break
    env = _set_env(
        cfg.get("testenv", "set_env", fallback=cfg.get("testenv", "setenv", fallback=""))
    )
    if words is None or (not words and not env):
        return None
    prefix = [f"{name}={shlex.quote(value)}" for name, value in env]
    return " ".join([*prefix, DEFAULT_TEST_CMD, *map(shlex.quote, words)])


def tox_pytest_words(words: list[str], paths: Collection[str]) -> list[str]:
    """The words of a pytest command line kept (see the module docstring)."""
    kept: list[str] = []
    take_value = False
    for word in words:
        if take_value:
            take_value = False
            if "{" not in word:
                kept.append(word)
            else:
                kept.pop()
            continue
        name = word.split("=", 1)[0]
        if word.startswith("-"):
            if name in KEPT and "{" not in word:
                kept.append(word)
                take_value = KEPT[name] and "=" not in word
            continue
        if "{" not in word and word.rstrip("/") in paths:
            kept.append(word)
    return kept


def _lines(text: str) -> list[str]:
    """tox's lines: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\r?\n", " ", text)
    return [
        ln.strip() for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]


def _set_env(text: str) -> list[tuple[str, str]]:
    """set_env's plain `NAME = value` lines (no factor, no substitution, no file)."""
    out = []
    for line in _lines(text):
        name, eq, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if eq and _NAME.fullmatch(name) and "{" not in value and len(value) < 200:
            out.append((name, value))
    return out[:20]


def _existing(files: RepoFiles, words: list[str]) -> set[str]:
    """The words that name a file or folder of the tree."""
    found = set()
    for word in words:
        rel = word.rstrip("/")
        if word.startswith("-") or "{" in word or not rel or rel.startswith(("/", "..")):
            continue
        if files.exists(rel) or files.listed(rel):
            found.add(rel)
    return found
