"""Which workspace paths the model may read and write, and where they really are on the host.

Globs match the whole workspace-relative path with `/` separators: `*` and `?` stay inside one
directory, `**/` matches zero or more directories (so `**/conftest.py` also matches the root
one), and a trailing `/**` matches the directory itself and everything under it. Deny globs match
case-insensitively and against the NFC and NFKC forms of the path, so `TESTS/x.py` or fullwidth
letters do not slip past them; allow globs match the path exactly as given.
"""

from __future__ import annotations

import errno
import os
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Literal

from policies.errors import PolicyRefusal

#: Tests: never writable unless the user sets `allow_edit_tests`. The spellings no language
#: owns; each language package adds its own (`**/test_*.py`, `**/*_test.go`, `**/*.spec.ts`:
#: its paths.py, gathered by sandbox/ecosystems/__init__.py's language_paths), so a custom
#: `--test-cmd` cannot be made to pass by editing its tests. `src/test/` (Maven, Gradle) is
#: `**/test/**`.
TEST_GLOBS: tuple[str, ...] = (
    "**/tests/**",
    "**/test/**",
    "**/spec/**",
    "**/*_spec.rb",
)
#: CI configuration and git internals: not writable by default (a fix that changes how CI
#: tests is not a fix). Each language package adds its own protected files (test runners'
#: configuration, manifests, lockfiles, toolchain pins: its paths.py).
DEFAULT_WRITE_DENY: tuple[str, ...] = (
    "**/.tool-versions",
    ".github/**",
    ".gitlab-ci.yml",
    ".circleci/**",
    ".travis.yml",
    "azure-pipelines.yml",
    "Jenkinsfile",
    ".ci/**",
    ".pre-commit-config.yaml",
    "**/.git/**",
    ".gitmodules",
)
#: Secrets and git internals: not readable (nor writable) by default.
DEFAULT_READ_DENY: tuple[str, ...] = (
    "**/.env*",
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/id_rsa*",
    "**/id_dsa*",
    "**/id_ecdsa*",
    "**/id_ed25519*",
    "**/.netrc",
    "**/.pypirc",
    "**/.ssh/**",
    "**/.aws/**",
    "**/.git/**",
)
#: Suffixes of files a test run executes, imports or reads as configuration. A protected test
#: file with one is locked on disk; the other files of a test folder (templates, data, golden
#: files) are its fixtures, which a project's own tests may touch (`os.utime`, `chmod`): those
#: are watched and put back after each command instead (sandbox/worktree/fixture_guard.py).
RUNNABLE_SUFFIXES = frozenset(
    {
        ".py", ".pyi", ".pyx", ".pxd", ".pth", ".so", ".pyd", ".cfg", ".ini", ".toml",
        ".go", ".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".rb", ".java",
        ".kt", ".scala", ".rs", ".c", ".h", ".cc", ".cpp", ".sh", ".bash", ".pl", ".php",
    }
)  # fmt: skip
#: Of those, the suffixes of data formats that are code only as a tool's own settings file
#: (`pytest.ini`, `Cargo.toml`), which the write-deny globs name: any other such file in a test
#: folder is test data (a TOML library's `tests/examples/*.toml`, which its tests write back).
SETTINGS_SUFFIXES = frozenset({".toml", ".ini", ".cfg"})
Protection = Literal["locked", "fixture"]
# Neither read nor written, whatever the settings: writing into .git could plant hooks that run
# on the host, and the copy's .git is the sandbox's own repository (a mount of the container's,
# not the user's history; a tree's own .git is never copied). read_deny's default says it too.
_GIT_INTERNALS: tuple[str, ...] = ("**/.git/**",)
_MAX_PATH_CHARS = 4096


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The outcome of one policy check; refusals name the rule, for the model and the trace.

    >>> Decision(allowed=False, rule="absolute-path", reason="absolute paths are not allowed")
    Decision(allowed=False, rule='absolute-path', reason='absolute paths are not allowed')
    """

    allowed: bool
    rule: str
    reason: str


class PathRefused(PolicyRefusal):
    """A path the policy refuses; `str()` is a message the model can act on.

    >>> err = PathRefused(path="/etc/passwd", decision=Decision(
    ...     allowed=False, rule="absolute-path", reason="use a relative path"))
    >>> (err.rule, str(err))
    ('absolute-path', "path '/etc/passwd' refused: use a relative path")
    """

    def __init__(self, *, path: str, decision: Decision) -> None:
        super().__init__(f"path {path!r} refused: {decision.reason}")
        self.path = path
        self.decision = decision
        self.rule = decision.rule
        self.reason = decision.reason


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = re.escape(body[1:] if negate else body).replace(r"\-", "-")
            out.append(f"[^/{body}]" if negate else f"[{body}]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


@lru_cache(maxsize=1024)  # a pure memo: policies are checked for every listed entry
def glob_regex(pattern: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """Compile a workspace glob (see the module docstring) to a regex over relative paths.

    >>> bool(glob_regex("**/tests/**").match("tests/a.py"))
    True
    >>> bool(glob_regex("*.py").match("src/a.py"))
    False
    """
    return re.compile(_glob_source(pattern), re.IGNORECASE if ignore_case else 0)


@lru_cache(maxsize=1024)
def _glob_source(pattern: str) -> str:
    """`glob_regex`'s pattern, uncompiled: `_any_regex` joins these and compiles once (each
    pattern compiled on its own too doubled the policy's first check: 20 ms of every run)."""
    parts = pattern.strip("/").split("/")
    regex, sep = "", ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**" and last:
            regex += ".*" if i == 0 else "(?:/.*)?"
        elif part == "**":
            regex, sep = regex + sep + "(?:.*/)?", ""
            continue
        else:
            regex += sep + _segment_regex(part)
        sep = "/"
    return f"(?s:{regex})\\Z"


def _spellings(rel: str) -> set[str]:
    """The forms a deny glob must see: as given, NFC and NFKC (one, for ASCII)."""
    if rel.isascii():
        return {rel}
    return {rel, unicodedata.normalize("NFC", rel), unicodedata.normalize("NFKC", rel)}


@lru_cache(maxsize=256)
def _any_regex(globs: tuple[str, ...], *, ignore_case: bool) -> re.Pattern[str]:
    """One regex matching what any of `globs` matches: most paths match none, and one match
    instead of one per glob made checking 10,000 paths 0.33 s instead of 0.91 s."""
    if not globs:
        return re.compile(r"(?!)")
    parts = "|".join(f"(?:{_glob_source(g)})" for g in globs)
    return re.compile(parts, re.IGNORECASE if ignore_case else 0)


def _first_match(globs: tuple[str, ...], rel: str, *, ignore_case: bool) -> str | None:
    spellings = _spellings(rel) if ignore_case else {rel}
    if not any(_any_regex(globs, ignore_case=ignore_case).match(s) for s in spellings):
        return None
    for glob in globs:
        regex = glob_regex(glob, ignore_case=ignore_case)
        if any(regex.match(s) for s in spellings):
            return glob
    return None


def _refuse(rule: str, reason: str) -> Decision:
    return Decision(allowed=False, rule=rule, reason=reason)


def _syntax(rel: str) -> Decision | str:
    """Refuse malformed paths, else return the normalized relative path ('' for the root)."""
    if not isinstance(rel, str):
        return _refuse("not-a-string", "a path must be a string")
    if "\x00" in rel:
        return _refuse("nul-byte", "the path contains a NUL byte; remove it")
    if (not rel.isascii() or not rel.isprintable()) and any(
        unicodedata.category(ch) in ("Cc", "Cf") for ch in rel
    ):
        return _refuse(
            "control-character",
            "the path contains control or invisible formatting characters; use plain text",
        )
    if len(rel) > _MAX_PATH_CHARS:
        return _refuse("too-long", f"the path is longer than {_MAX_PATH_CHARS} characters")
    if "\\" in rel:
        return _refuse("backslash", "use forward slashes '/' to separate directories")
    if rel.startswith("/") or re.match(r"[A-Za-z]:", rel):
        return _refuse(
            "absolute-path",
            "absolute paths are not allowed; give a path relative to the repository root, "
            "e.g. 'src/app.py'",
        )
    if rel.startswith("~"):
        return _refuse("home-path", "'~' is outside the repository; give a relative path")
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if ".." in parts:
        return _refuse(
            "parent-escape",
            "'..' is not allowed: the repository root is the top; give a path from the root",
        )
    return "/".join(parts)


@dataclass(frozen=True, kw_only=True)
class PathPolicy:
    """Readable and writable sets of workspace paths, as allow and deny globs (deny wins).

    Writing also needs reading (a patch shows file contents). Tests (`test_globs`) are never
    writable unless `allow_edit_tests`; `.git` is never writable. The defaults here name no
    language: a run's policy adds every language package's protected files and test spellings
    (`adding`, from sandbox/ecosystems/__init__.py's language_paths) before the user's settings.

    >>> policy = PathPolicy()
    >>> policy.is_writable("src/app.py"), policy.is_readable("src/app.py")
    (True, True)
    >>> policy.check("tests/test_app.py", write=True).rule
    'tests:**/tests/**'
    >>> policy.is_readable("deploy/.env.production")
    False
    >>> policy.check("../etc/passwd").rule
    'parent-escape'
    >>> PathPolicy(allow_edit_tests=True).is_writable("tests/test_app.py")
    True
    """

    read_allow: tuple[str, ...] = ("**",)
    read_deny: tuple[str, ...] = DEFAULT_READ_DENY
    write_allow: tuple[str, ...] = ("**",)
    write_deny: tuple[str, ...] = DEFAULT_WRITE_DENY
    test_globs: tuple[str, ...] = field(default=TEST_GLOBS)
    allow_edit_tests: bool = False

    def __post_init__(self) -> None:
        for name in ("read_allow", "read_deny", "write_allow", "write_deny", "test_globs"):
            value = getattr(self, name)
            if isinstance(value, str) or not all(isinstance(g, str) and g for g in value):
                raise ValueError(f"{name} must be a list of non-empty glob strings")
            object.__setattr__(self, name, tuple(value))

    def adding(
        self, *, write_deny: Iterable[str] = (), test_globs: Iterable[str] = ()
    ) -> PathPolicy:
        """This policy with more protected files and test spellings (each glob once, in order).

        >>> p = PathPolicy().adding(write_deny=["**/go.mod"], test_globs=["**/*_test.go"])
        >>> p.check("go.mod", write=True).rule, p.check("a/b_test.go", write=True).rule
        ('write_deny:**/go.mod', 'tests:**/*_test.go')
        """
        return replace(
            self,
            write_deny=tuple(dict.fromkeys((*self.write_deny, *write_deny))),
            test_globs=tuple(dict.fromkeys((*self.test_globs, *test_globs))),
        )

    def with_overrides(
        self,
        *,
        read_allow: Iterable[str] | None = None,
        read_deny: Iterable[str] | None = None,
        write_allow: Iterable[str] | None = None,
        write_deny: Iterable[str] | None = None,
        allow_edit_tests: bool | None = None,
    ) -> PathPolicy:
        """Widen or narrow: allow lists replace; deny lists add globs, and `!glob` removes one.

        >>> p = PathPolicy().with_overrides(write_deny=["docs/**", "!.travis.yml"])
        >>> p.is_writable("docs/index.md"), p.is_writable(".travis.yml")
        (False, True)
        >>> PathPolicy().with_overrides(write_deny=["!nothing"])
        Traceback (most recent call last):
        ...
        ValueError: write_deny: '!nothing' removes nothing: 'nothing' is not in the list
        """
        changes: dict[str, object] = {}
        if read_allow is not None:
            changes["read_allow"] = tuple(read_allow)
        if write_allow is not None:
            changes["write_allow"] = tuple(write_allow)
        if read_deny is not None:
            changes["read_deny"] = _edit("read_deny", self.read_deny, read_deny)
        if write_deny is not None:
            changes["write_deny"] = _edit("write_deny", self.write_deny, write_deny)
        if allow_edit_tests is not None:
            changes["allow_edit_tests"] = allow_edit_tests
        return replace(self, **changes)  # type: ignore[arg-type]

    def check(self, rel: str, *, write: bool = False) -> Decision:
        """Decide on a relative path by its spelling and the globs alone (no filesystem)."""
        norm = _syntax(rel)
        if isinstance(norm, Decision):
            return norm
        return self._globs(norm, write=write)

    def is_readable(self, rel: str) -> bool:
        """Whether `rel` may be read (and shown in listings and search results)."""
        return self.check(rel).allowed

    def is_writable(self, rel: str) -> bool:
        """Whether `rel` may be written."""
        return self.check(rel, write=True).allowed

    def protection(self, rel: str) -> Protection | None:
        """How a file the model may not write is kept from code run in the sandbox: "locked"
        (read-only, not the sandbox user's), or "fixture" (a test folder's data, which the
        project's own tests may touch: watched and put back instead). None: writable.

        >>> policy = PathPolicy()
        >>> [policy.protection(p) for p in ("app.py", "tests/test_a.py", "tests/res/a.html")]
        [None, 'locked', 'fixture']
        >>> policy.protection(".github/workflows/ci.yml"), policy.protection("tests/run.cfg")
        ('locked', 'fixture')
        >>> policy.adding(write_deny=["**/pytest.ini"]).protection("tests/pytest.ini")
        'locked'
        """
        decision = self.check(rel, write=True)
        if decision.allowed:
            return None
        suffix = PurePosixPath(rel).suffix.lower()
        data = suffix not in RUNNABLE_SUFFIXES or (
            suffix in SETTINGS_SUFFIXES
            and _first_match(self.write_deny, rel, ignore_case=True) is None
        )
        return "fixture" if decision.rule.startswith("tests:") and data else "locked"

    def resolve(self, root: Path, rel: str, *, write: bool = False) -> Path:
        """The real absolute host path of `rel` inside `root`, or `PathRefused`.

        Links are followed: a link whose target, or any link in a chain, leads outside `root`
        is refused, and the globs are checked against both the given and the real path. A
        path that does not exist yet is fine if it stays inside `root`.
        """
        decision = self.check(rel, write=write)
        if not decision.allowed:
            raise PathRefused(path=rel, decision=decision)
        real_root = Path(os.path.realpath(root, strict=True))
        target = real_root.joinpath(*[p for p in rel.split("/") if p not in ("", ".")])
        try:
            real = Path(os.path.realpath(target, strict=True))
        except (FileNotFoundError, NotADirectoryError):
            real = Path(os.path.realpath(target))
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            raise PathRefused(
                path=rel, decision=_refuse("symlink-loop", "the path runs into a loop of links")
            ) from None
        if real != real_root and not real.is_relative_to(real_root):
            raise PathRefused(
                path=rel,
                decision=_refuse(
                    "link-outside-root",
                    "the path goes through a link that points outside the repository; "
                    "only files inside the repository can be used",
                ),
            )
        real_rel = "" if real == real_root else real.relative_to(real_root).as_posix()
        decision = self._globs(real_rel, write=write)
        if not decision.allowed:
            raise PathRefused(path=rel, decision=decision)
        return real

    def _globs(self, rel: str, *, write: bool) -> Decision:
        shown = rel or "."
        if rel and _first_match(self.read_allow, rel, ignore_case=False) is None:
            return _refuse("read_allow", f"{shown} is outside the readable paths {self.read_allow}")
        if _first_match(_GIT_INTERNALS, rel, ignore_case=True) is not None:
            return _refuse("git-internals", "files inside .git cannot be read or written")
        if (glob := _first_match(self.read_deny, rel, ignore_case=True)) is not None:
            return _refuse(
                f"read_deny:{glob}",
                f"{shown} cannot be read or written: it matches the protected pattern {glob!r}",
            )
        if not write:
            return Decision(allowed=True, rule="read", reason="readable")
        if not rel:
            return _refuse("root", "the repository root is a directory, not a file")
        if (glob := _first_match(_GIT_INTERNALS, rel, ignore_case=True)) is not None:
            return _refuse("git-internals", "files inside .git cannot be written")
        if not self.allow_edit_tests and (
            glob := _first_match(self.test_globs, rel, ignore_case=True)
        ):
            return _refuse(
                f"tests:{glob}",
                f"{shown} is a test file (matches {glob!r}) and tests cannot be edited; "
                "fix the code under test instead",
            )
        if _first_match(self.write_allow, rel, ignore_case=False) is None:
            return _refuse(
                "write_allow", f"{shown} is outside the writable paths {self.write_allow}"
            )
        if (glob := _first_match(self.write_deny, rel, ignore_case=True)) is not None:
            return _refuse(
                f"write_deny:{glob}",
                f"{shown} is protected test/CI configuration (matches {glob!r}); "
                "change source files instead",
            )
        return Decision(allowed=True, rule="write", reason="writable")


def _edit(name: str, current: tuple[str, ...], edits: Iterable[str]) -> tuple[str, ...]:
    result = list(current)
    for item in [edits] if isinstance(edits, str) else edits:
        if item.startswith("!"):
            if item[1:] not in result:
                raise ValueError(
                    f"{name}: {item!r} removes nothing: {item[1:]!r} is not in the list"
                )
            result.remove(item[1:])
        elif item not in result:
            result.append(item)
    return tuple(result)
