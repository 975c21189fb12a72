"""Java behind the ecosystem seam (sandbox/ecosystems/base.py): Maven projects, recognised by
pom.xml; tested by `mvn test` (the project's `./mvnw` when it has one), run offline from the
local repository set-up filled, with Surefire's and Failsafe's XML reports of this run read by
test id (command.py, reports.py); in an image of the JDK the project asks for (choice.py,
image.py). A Gradle build is recognised and stopped in one line (gradle.py). See
docs/java-tests.md."""

from __future__ import annotations

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
from sandbox.ecosystems.java.choice import JdkChoice, choose_jdk
from sandbox.ecosystems.java.command import MavenCommand
from sandbox.ecosystems.java.gradle import (
    MARKERS as GRADLE_MARKERS,
)
from sandbox.ecosystems.java.gradle import (
    gradle_test_command,
    is_gradle,
    refuse_gradle,
)
from sandbox.ecosystems.java.image import JDKS, JdkImage, ensure_jdk_image
from sandbox.ecosystems.java.phase import test_phase
from sandbox.ecosystems.java.pom import read_reactor
from sandbox.ecosystems.java.reports import read_run_report
from sandbox.ecosystems.java.setup_infer import infer_java_setup, maven_program
from sandbox.setup.plan import SetupPlan
from sandbox.source.grounding import Grounding
from sandbox.source.places import LineCounts
from sandbox.testrun.junit import TestSummary
from sandbox.worktree.repo_files import RepoFiles

if TYPE_CHECKING:
    import docker

MARKERS = ("pom.xml", *GRADLE_MARKERS)
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
#: What Maven says of an artifact set-up did not resolve, offline (a test run), or that no
#: repository has (set-up); how it is said back.
_MISSING = (
    (re.compile(r"the artifact (\S+) has not been downloaded from it before"),
     "the artifact {} is not in the local repository (set-up did not resolve it)"),
    (re.compile(r"Could not find artifact (\S+)"), "no repository has the artifact {}"),
    (re.compile(r"Failure to find (\S+) in "), "no repository has the artifact {}"),
    (re.compile(r"Plugin (\S+) or one of its dependencies could not be resolved"),
     "the plugin {} or one of its dependencies could not be resolved"),
)  # fmt: skip


@dataclass(kw_only=True)
class JdkToolchain:
    """The JDK chosen for a project as the seam's `Toolchain`: its image, built once."""

    choice: JdkChoice
    built: JdkImage | None = None

    @property
    def image(self) -> str:
        return self.built.name if self.built is not None else self.choice.image

    def ensure(
        self, client: docker.DockerClient, *, progress: Callable[[str], None]
    ) -> float | None:
        self.built = ensure_jdk_image(client, major=self.choice.major, progress=progress)
        return self.built.built_s

    def describe(self, built_s: float | None = None) -> str:
        built = self.built
        return self.choice.describe(
            str(built.major) if built else None, built.built_s if built else None
        )

    def report_fields(self, *, built_s: float | None = None) -> dict[str, Any]:
        return {}

    def to_dict(self, *, built_s: float | None = None) -> dict[str, Any]:
        built = self.built
        return self.choice.to_dict(
            built=str(built.major) if built else None, built_s=built.built_s if built else None
        )


def missing_artifacts(output: str) -> list[str]:
    """Each artifact or plugin Maven said it could not have, once each, as said back."""
    found: dict[str, str] = {}
    for pattern, said in _MISSING:
        for match in pattern.finditer(output):
            found.setdefault(match.group(1), said.format(match.group(1)))
    return list(found.values())


class Java:
    """The Java ecosystem (see the module docstring)."""

    name = "java"
    markers: tuple[str, ...] = MARKERS
    failing_first = False  # a Maven start costs seconds: the whole suite is run after an edit

    def recognises(self, repo: Path) -> bool:
        files = RepoFiles(repo)
        return files.exists("pom.xml") or is_gradle(files)

    def runs(self, test_cmd: str) -> bool:
        try:
            words = shlex.split(test_cmd)
        except ValueError:
            return False
        words = [w for w in words if not _ASSIGNMENT.match(w)]
        if words[:1] == ["sh"]:
            words = words[1:]
        return bool(words) and words[0] in ("mvn", "./mvnw", "mvnw", "./gradlew", "gradle")

    def test_command(self, repo: Path) -> str | None:
        """`mvn test` (`./mvnw test` with the wrapper), or CI's `verify` where Failsafe's tests
        run (phase.py); a Gradle build's `./gradlew test`."""
        files = RepoFiles(repo)
        if files.exists("pom.xml"):
            return test_phase(files, read_reactor(files)).command(maven_program(files))
        if is_gradle(files):
            return gradle_test_command(files)
        return None

    def instrument(
        self, test_cmd: str, ids: Sequence[str], *, workspace: Path, stage: Stage, root: str
    ) -> Instrumented | None:
        """The command offline, its reports in a fresh /tmp folder only this run names, packed
        with its log into the report (command.py); ids by module in a reactor."""
        parsed = MavenCommand.parse(test_cmd)
        if parsed is None:
            return None
        if parsed.program == ("./mvnw",):  # as POSIX sh, whatever its mode bits
            parsed = MavenCommand(
                assignments=parsed.assignments,
                program=("sh", "./mvnw"),
                options=parsed.options,
                goals=parsed.goals,
            )
        token = secrets.token_hex(8)
        report = f"/tmp/worker-report-{token}"
        folder = f"/tmp/worker-maven-{secrets.token_hex(8)}"
        modules = read_reactor(RepoFiles(workspace)).module_folders() or ["."]
        return Instrumented(
            command=parsed.command(ids, folder=folder, report=report),
            report_path=report,
            read_report=lambda data: read_run_report(data, root=root, modules=modules),
            report_kind="Surefire XML",
        )

    def infer_setup(self, repo: Path) -> SetupPlan:
        files = RepoFiles(repo)
        if not files.exists("pom.xml") and is_gradle(files):
            raise refuse_gradle(files)
        return infer_java_setup(repo)

    def toolchain(self, repo: Path, *, image: str | None, backend: str) -> JdkToolchain | None:
        """The JDK the project asks for (choice.py); a Gradle build stops here (gradle.py).
        None when an image is named or the backend is the host's own."""
        files = RepoFiles(repo)
        if not files.exists("pom.xml") and is_gradle(files):
            raise refuse_gradle(files)
        if image or backend != "docker":
            return None
        return JdkToolchain(choice=choose_jdk(repo))

    def build_image(
        self,
        client: docker.DockerClient,
        version: str,
        *,
        name: str | None,
        progress: Callable[[str], None],
    ) -> str | None:
        """A JDK image from Debian's OpenJDK package (image.py)."""
        known = ", ".join(map(str, sorted(JDKS)))
        if not re.fullmatch(r"\d+", version) or int(version) not in JDKS:
            raise ValueError(f"--java takes a JDK major here ({known}), not {version!r}")
        image = ensure_jdk_image(client, major=int(version), progress=progress, name=name)
        return None if image.built_s is not None else f"image {image.name} is up to date"

    def syntax_error(self, data: bytes, name: str) -> str | None:
        """tree-sitter's Java grammar."""
        from sandbox.ecosystems.java.source import parse_java
        from sandbox.source.syntax import syntax_error_of

        return syntax_error_of(parse_java(name, data), name=name)

    def ending_statement(self, data: bytes, name: str, line: int) -> int | None:
        """tree-sitter's Java grammar: a `return` or a `throw`."""
        from sandbox.ecosystems.java.source import ending_statement

        return ending_statement(name, data, line)

    def same_code(self, before: bytes, after: bytes, name: str) -> bool:
        from sandbox.ecosystems.java.source import parse_java
        from sandbox.source.syntax import same_code_of

        return same_code_of(parse_java(name, before), parse_java(name, after))

    def check_image(
        self, client: docker.DockerClient | None, image: str, *, plan: SetupPlan | None
    ) -> dict[str, Any]:
        return {}  # the JDK's choice checked the release before the image was made

    def environment_problem(self, run: FailedRun, tree: Path, *, setup_said: str) -> str | None:
        """An artifact or plugin Maven could not have offline (set-up left it out), said on the
        run's own output (Maven's log, not a test's report)."""
        if missing := missing_artifacts(run.result.output):
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            return f"{missing[0]}{more}; {setup_said}"
        return None

    def grounding(self, run: FailedRun, *, workspace: Path, paths: PathPolicy) -> Grounding:
        """The definitions the failing tests reach, by tree-sitter (grounding.py)."""
        from sandbox.ecosystems.java.grounding import implicated_code

        return implicated_code(run, workspace=workspace, paths=paths)

    def implicated_files(
        self, run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int
    ) -> list[str]:
        from sandbox.ecosystems.java.grounding import implicated_files

        return implicated_files(run, workspace=workspace, paths=paths, limit=limit)

    def failure_places(
        self, run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]
    ) -> Places | None:
        """The lines the failures name: a stack's frames, a compiler error (places.py)."""
        from sandbox.ecosystems.java.places import read_places

        return read_places(run, workspace=workspace, allowed=allowed)

    def line_counts(self, box: Sandbox, run: FailedRun, *, timeout_s: float) -> LineCounts:
        return LineCounts(why_empty="no traced run for Java: its failures name the lines")

    def read_ci_report(self, data: bytes, repo: Path) -> TestSummary:
        """CI's Surefire/Failsafe/Gradle XML (cireport.py); ValueError otherwise."""
        from sandbox.ecosystems.java.cireport import read_java_ci_report

        return read_java_ci_report(data, repo)

    def deselect(self, test_cmd: str, ids: Sequence[str]) -> str | None:
        """Surefire's exclusions (`-Dtest=!Class#method,...`), where each id is a method's."""
        parsed = MavenCommand.parse(test_cmd)
        return parsed.without(ids) if parsed is not None else None

    def has_test(self, repo: Path, test_id: str) -> bool:
        from sandbox.ecosystems.java.cireport import has_java_test

        return has_java_test(repo, test_id)


JAVA = Java()
