"""The pytest command a project's tox.ini runs, or else its CI workflow's test step, when it
says more than `python -m pytest`.

A project whose tests are run by tox says there how: `commands = pytest --doctest-modules
boltons tests` (doctests beside the tests), `set_env = THREADING_TESTS = 1` (tests that skip
without it). Read, never run: the `[testenv]` section's first `commands` line that runs pytest
(`pytest`, `py.test`, `python -m pytest`, `{envpython} -m pytest`), keeping what decides which
tests run and how they are collected (KEPT options, and paths the tree has), and the plain
`NAME = value` lines of `set_env` (or `setenv`) as variables before the command. A first test
line that runs `python -m unittest` instead is taken as it is, less its substitutions
(unittest_command.py runs it). Anything else
(coverage options, `{posargs}`, another substitution) is dropped: its plugin may not be installed,
and the harness adds its own reporting flags. Paths through the tree's substitutions are the
tree's (`{tox_root}/tests`, and `{env_site_packages_dir}/pkg`: the package set-up installed in
place); a command whose paths are none of the tree's gives nothing, not its options alone.

>>> tox_pytest_words(["--cov=b", "-v", "--doctest-modules", "b", "--ignore", "b/x"], {"b"})
['--doctest-modules', 'b', '--ignore', 'b/x']
"""

from __future__ import annotations

import configparser
import re
import shlex
from collections.abc import Collection

from sandbox.ecosystems.python.pytest_command import DEFAULT_TEST_CMD
from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.repo_files import RepoFiles

#: pytest options that change which tests are collected (with their value when it is separate).
KEPT = {"--doctest-modules": False, "--doctest-glob": True, "--ignore": True}
KEPT |= {"--ignore-glob": True, "--import-mode": True, "--doctest-continue-on-failure": False}
_RUNNER = re.compile(r"(?:\{envpython\}|python3?)\s+-m\s+pytest|(?:\{envbindir\}/)?py\.?test")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A CI step's pytest, after the start of a command (`coverage run -m pytest` too); its words
#: end at the next command.
_CI_RUNNER = re.compile(
    r"(?:^|[;&|]\s*)(?:(?:python3?(?:\.\d+)?\s+-m\s+|coverage\s+run\s+(?:[^;&|]*?\s)?-m\s+)"
    r"pytest|py\.?test)\b([^;&|]*)"
)
#: `python -m unittest` in tox's commands or a CI step, and its words to the next command.
_UNITTEST_RUNNER = re.compile(
    r"(?:^|[;&|]\s*)(?:(?:\{envpython\}|python3?(?:\.\d+)?)\s+-m\s+|"
    r"coverage\s+run\s+(?:[^;&|]*?\s)?-m\s+)unittest(?=\s|$)([^;&|]*)"
)
UNITTEST_CMD = "python -m unittest"
_CI_END = re.compile(r"\s[<>]|\s2?>")
#: tox's names for the tree's root, and for the environment's site-packages.
_ROOT = re.compile(r"^\{(?:tox_root|toxinidir)\}/")
_SITE = re.compile(r"^\{(?:env_site_packages_dir|envsitepackagesdir)\}/")


def tox_test_command(files: RepoFiles) -> str | None:
    """The command tox.ini's [testenv] says, when it differs from DEFAULT_TEST_CMD; else None."""
    cfg = files.ini("tox.ini")
    if cfg is None or not cfg.has_section("testenv"):
        return None
    words: list[str] | None = None
    for line in _lines(cfg.get("testenv", "commands", fallback="")):
        if (unittest := _unittest_command(line, files)) is not None:
            prefix = [f"{name}={shlex.quote(value)}" for name, value in _set_env(_env_text(cfg))]
            return " ".join([*prefix, unittest])
        found = _RUNNER.match(line)
        if found is None:
            continue
        try:
            rest = [_in_tree(word, files) for word in shlex.split(line[found.end() :])]
        except ValueError:
            continue
        words = tox_pytest_words(rest, existing_paths(files, rest))
        named = [w for w in rest if not w.startswith("-") and w and w != "{posargs}"]
        if named and not any(w.rstrip("/") in existing_paths(files, rest) for w in words):
            words = []  # its paths are not the tree's: its options alone would collect it all
        break
    env = _set_env(_env_text(cfg))
    if words is None or (not words and not env):
        return None
    prefix = [f"{name}={shlex.quote(value)}" for name, value in env]
    return " ".join([*prefix, DEFAULT_TEST_CMD, *map(shlex.quote, words)])


def ci_test_command(files: RepoFiles) -> str | None:
    """The pytest command a CI workflow's test step runs, when it says more than the default
    (toolz's `pytest --doctest-modules toolz/`), kept as tox's is. The first such line of the
    first workflow that has one; a line with a `$` (a matrix value, a variable) is passed
    over."""
    for job in ci_jobs(files):
        for _n, line in job.lines:
            if "$" not in line and (unittest := _unittest_command(line, files)) is not None:
                return unittest
            found = _CI_RUNNER.search(line)
            if found is None or "$" in line:
                continue
            try:
                rest = [_in_tree(w, files) for w in shlex.split(_CI_END.split(found[1])[0])]
            except ValueError:
                continue
            words = tox_pytest_words(rest, existing_paths(files, rest))
            named = [w for w in rest if not w.startswith("-")]
            if named and not any(w.rstrip("/") in existing_paths(files, rest) for w in words):
                continue
            if words:
                return " ".join([DEFAULT_TEST_CMD, *map(shlex.quote, words)])
            return None  # CI runs pytest as the default does
    return None


def _unittest_command(line: str, files: RepoFiles) -> str | None:
    """`python -m unittest` and its words, when `line` runs it: tox's substitutions for the
    tree resolved, any other (`{posargs}`) dropped, and so is a redirection after it.

    >>> _unittest_command("{envpython} -m unittest discover -s tests -v {posargs}", None)
    'python -m unittest discover -s tests -v'
    """
    found = _UNITTEST_RUNNER.search(line)
    if found is None:
        return None
    try:
        words = [_in_tree(w, files) for w in shlex.split(_CI_END.split(found[1])[0])]
    except ValueError:
        return None
    return " ".join([UNITTEST_CMD, *(shlex.quote(w) for w in words if "{" not in w)])


def _env_text(cfg: configparser.RawConfigParser) -> str:
    return cfg.get("testenv", "set_env", fallback=cfg.get("testenv", "setenv", fallback=""))


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


def _in_tree(word: str, files: RepoFiles) -> str:
    """A word with tox's substitutions for the tree resolved: `{tox_root}/tests` is `tests`; an
    installed package's folder (`{env_site_packages_dir}/pkg`) is the tree's `pkg` or `src/pkg`,
    which set-up installs in place. Any other word as it is.

    >>> _in_tree("{toxinidir}/tests", None), _in_tree("-v", None)  # type: ignore[arg-type]
    ('tests', '-v')
    """
    word = _ROOT.sub("", word)
    if (site := _SITE.match(word)) is not None:
        name = word[site.end() :].rstrip("/")
        return next((p for p in (name, f"src/{name}") if name and files.listed(p)), word)
    return word


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


def existing_paths(files: RepoFiles, words: list[str]) -> set[str]:
    """The words that name a file or folder of the tree."""
    found = set()
    for word in words:
        rel = word.rstrip("/")
        if word.startswith("-") or "{" in word or not rel or rel.startswith(("/", "..")):
            continue
        if files.exists(rel) or files.listed(rel):
            found.add(rel)
    return found
