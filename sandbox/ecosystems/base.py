"""The ecosystem seam: what the harness asks of a language's projects, in one place.

An ecosystem (sandbox/ecosystems/python/, sandbox/ecosystems/node/, ...) says:

- `recognises(repo)`: whether a repository is one of its projects (read, never run);
- `runs(test_cmd)`: whether a test command is its runner's (`pytest`, `npm test`, `vitest`);
- `test_command(repo)`: the command its maintainers run the tests with, when none is given;
- `instrument(test_cmd, ids, workspace=..., stage=..., root=...)`: that command as it runs,
  with what makes the runner itself write one outcome per test id to a report path the tests
  cannot predict, and how that report is read (None, or no report path: judged by exit code
  only, and the report says so);
- `infer_setup(repo)`: the set-up a maintainer would run on a fresh clone;
- `toolchain(repo, image=..., backend=...)`: the toolchain image the project asks for, built once;
- `build_image(client, version, name=..., progress=...)`: its toolchain's image for a version
  the user names (`worker sandbox build --node 22`), where it has one; the line to say;
- `syntax_error(data, name)` and `same_code(before, after, name)`: for its source files
  (the registry's `suffixes`), the first syntax error, and whether an edit changed no code
  (only layout and comments): the edit tools refuse both;
- `ending_statement(data, name, line)`: by its own parser, the first line of the `return`
  (`raise`, `throw`, a panic, Rust's last expression) that holds a line, if one does: where
  the search adds a line before a function ends (worker/search/moves.py);
- `check_image(client, image, plan=...)`: once the image is there, before set-up: whether the
  project can run in it (one line, exit 6, when not);
- `environment_problem(run, tree)`: why a failing baseline is the environment's, not a bug (a
  package not installed, a program missing): one line, exit 6 before any model call;
- `grounding(run, workspace=..., paths=...)`: the definitions the failing tests reach, by the
  language's own parser, for the first message; `implicated_files(...)`: the files they point
  at, shown from the top where no definition is found;
- `failure_places(run, workspace=..., allowed=...)`: the lines of the repository's own code
  each failing test's text names (a stack, a compiler error), for the search's suspects; None
  where the language traces a run instead: `line_counts(box, run, timeout_s=...)`;
- `read_ci_report(data, repo)`: a JUnit file CI wrote, its ids as this ecosystem's runs say them;
- `has_test(repo, test_id)`: whether a test CI named is in the repository (read, never run);
- `failing_first`: whether a run of the failing tests by id is cheap and its outcome
  trustworthy enough to run them first after an edit (pytest's is);
- `deselect(test_cmd, ids)`: the command with those tests left out (CI's flaky ones), None
  where its runner cannot;
- optionally, `weakened_tests(before, after, name)` (`GuardsTests`): for a language whose unit
  tests live inside its source files (Rust's `#[cfg(test)]` modules), why an edit of such a
  file removes, ignores or changes a test; the edit tools roll it back, as the path policy
  refuses a test file.

Which files are tests and test configuration (never the model's to write) is the policy's
(policies/paths.py, below this layer): each ecosystem names its globs there.

A new language is one package here plus one line in sandbox/ecosystems/__init__.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from policies.paths import PathPolicy
from sandbox.container.base import Sandbox
from sandbox.container.results import CommandResult
from sandbox.setup.plan import SetupPlan
from sandbox.source.grounding import Grounding
from sandbox.source.places import LineCounts, Place
from sandbox.testrun.junit import TestSummary

if TYPE_CHECKING:
    import docker


class FailedRun(Protocol):
    """What an ecosystem reads of a test run (`sandbox.testrun.run.TestRun` is one): named
    here, so that the ecosystems sit below the test run that asks them how to run."""

    @property
    def test_cmd(self) -> str: ...

    @property
    def result(self) -> CommandResult: ...

    @property
    def summary(self) -> TestSummary | None: ...

    def failure_texts(self) -> Iterator[tuple[str, str]]: ...


@dataclass(frozen=True)
class Places:
    """The places a run's failures name, one list per failing test (innermost first), the
    lines of the files they are in (as the language read them, once), what they were read from
    and why there are none, for the search's trace."""

    places: list[list[Place]]
    lines: Mapping[str, list[str]]
    source: str  # "stack traces"
    why_empty: str


class NoTestCommand(Exception):
    """A project of this ecosystem whose files name no test command; `str()` says why
    (`package.json has no "test" script`)."""


#: Stage a file in the sandbox (name, bytes) and get its path there (`Sandbox.stage`).
Stage = Callable[[str, bytes], str]


@dataclass(frozen=True, kw_only=True)
class Instrumented:
    """A test command as it really runs: with the flags that make its runner write a report of
    one outcome per test, where, and how that report is read."""

    command: str
    env: Mapping[str, str] = field(default_factory=dict)
    report_path: str | None = None  # random per run, removed before it
    token: str | None = None  # what our plugin stamps into the report, where there is one
    read_report: Callable[[bytes], TestSummary] | None = None
    report_kind: str = "JUnit"  # the report's name in the user's words


class Toolchain(Protocol):
    """The toolchain image chosen for a project, and why (Python's release, Node's major)."""

    @property
    def image(self) -> str: ...

    def ensure(
        self, client: docker.DockerClient, *, progress: Callable[[str], None]
    ) -> float | None:
        """Build the image if it is not there; the seconds the build took, None: it was."""
        ...

    def describe(self, built_s: float | None = None) -> str: ...

    def to_dict(self, *, built_s: float | None = None) -> dict[str, Any]: ...

    def report_fields(self, *, built_s: float | None = None) -> dict[str, Any]:
        """The report's `setup` fields this toolchain fills beside `toolchain` (Python's
        `python_choice`, `requires_python`); a None value leaves the field as it is."""
        ...


class Ecosystem(Protocol):
    """One language's projects, as the harness sees them (module docstring)."""

    name: str
    #: Files at a repository's root that say it is one of this ecosystem's projects.
    markers: tuple[str, ...]
    #: Whether the failing tests run first by id after an edit (worker/loop/failing_first.py).
    failing_first: bool

    def recognises(self, repo: Path) -> bool: ...

    def runs(self, test_cmd: str) -> bool: ...

    def test_command(self, repo: Path) -> str | None: ...

    def instrument(
        self, test_cmd: str, ids: Sequence[str], *, workspace: Path, stage: Stage, root: str
    ) -> Instrumented | None: ...

    def infer_setup(self, repo: Path) -> SetupPlan: ...

    def toolchain(self, repo: Path, *, image: str | None, backend: str) -> Toolchain | None: ...

    def build_image(
        self,
        client: docker.DockerClient,
        version: str,
        *,
        name: str | None,
        progress: Callable[[str], None],
    ) -> str | None:
        """Build (or find current) the image for the toolchain `version` names (`worker sandbox
        build --<flag> VERSION`); None when built now, else the line saying it is up to date.
        ValueError: not a version it knows how to read."""
        ...

    def syntax_error(self, data: bytes, name: str) -> str | None:
        """The first syntax error of `data` as the file `name` (`SyntaxError at
        name:line:col: ...`), or None."""
        ...

    def same_code(self, before: bytes, after: bytes, name: str) -> bool:
        """Whether both parse and differ in layout and comments alone."""
        ...

    def ending_statement(self, data: bytes, name: str, line: int) -> int | None:
        """The first line of the statement holding line `line` of the source file `name`, where
        that statement ends its function's run (a `return`, a `raise` or `throw`, a panic; in
        Rust a function body's last expression): a line added before it runs before the
        function ends. None where it is none of those or does not start its own line, or the
        file does not parse."""
        ...

    def check_image(
        self, client: docker.DockerClient | None, image: str, *, plan: SetupPlan | None
    ) -> dict[str, Any]:
        """Once the image is there and before set-up runs: stop, in one line (a
        ProjectEnvironmentError, exit 6), when the project cannot run in it (Python's
        `requires-python` against the image's Python); the report's `setup` fields learned."""
        ...

    def environment_problem(self, run: FailedRun, tree: Path, *, setup_said: str) -> str | None: ...

    def grounding(self, run: FailedRun, *, workspace: Path, paths: PathPolicy) -> Grounding: ...

    def implicated_files(
        self, run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int
    ) -> list[str]: ...

    def failure_places(
        self, run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]
    ) -> Places | None: ...

    def line_counts(self, box: Sandbox, run: FailedRun, *, timeout_s: float) -> LineCounts: ...

    def read_ci_report(self, data: bytes, repo: Path) -> TestSummary:
        """A JUnit file CI wrote (its runner's, on CI's disk), with ids as this ecosystem's
        runs name the same tests in `repo`; ValueError when it is not one."""
        ...

    def deselect(self, test_cmd: str, ids: Sequence[str]) -> str | None: ...

    def has_test(self, repo: Path, test_id: str) -> bool:
        """Is the test CI named by `test_id` in `repo`? A static check (nothing runs): a test
        made at run time may not be found, and is then reported as unknown, not guessed at."""
        ...


@runtime_checkable
class GuardsTests(Protocol):
    """An ecosystem whose unit tests live inside its source files, where the path policy's
    test globs cannot reach them (the module docstring: `weakened_tests`)."""

    def weakened_tests(self, before: bytes, after: bytes, name: str) -> str | None:
        """Why changing source file `name` from `before` to `after` (b"" when deleted)
        weakens the tests it holds; None where it does not."""
        ...


def weakened_tests(ecosystem: object, before: bytes, after: bytes, name: str) -> str | None:
    """`ecosystem`'s `weakened_tests` where it has one (GuardsTests); None for the others."""
    if isinstance(ecosystem, GuardsTests):
        return ecosystem.weakened_tests(before, after, name)
    return None
