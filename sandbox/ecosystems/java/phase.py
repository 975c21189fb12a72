"""How far through Maven's lifecycle a project's tests run: to `test` (Surefire's tests), or,
where its integration tests run through maven-failsafe-plugin, to CI's `verify`.

Failsafe's tests (`*IT.java`) run in the `integration-test` phase, after `package`, which
`mvn test` never reaches. They are taken when both say so:

- a POM of the reactor runs maven-failsafe-plugin (in its `<build><plugins>`) with its
  `integration-test` goal bound (by that POM or a `<pluginManagement>` of the reactor);
- CI's test line runs that far: the first Maven line of CI's jobs (sandbox/worktree/ci_jobs.py)
  that runs tests at all (`mvn -B package -DskipTests` does not) runs `verify`,
  `integration-test` or `install` (whose ITs run at `verify`: the run stops there, for
  installing into the local repository is not testing) and does not skip the ITs (`-DskipITs`).

The command is then the program (the project's `./mvnw` when it has one), the options of CI's
line that say what is built (`-P`, `-pl`, `-am`, `-amd`, `-D` properties but those that choose
or skip tests, or name the harness's own), and the phase, with `-Dgpg.skip`: maven-gpg-plugin
signs at `verify`, with a key CI has and the sandbox must not (publishing, not testing).

>>> PHASE_OF["install"]
'verify'
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

from sandbox.ecosystems.java.command import VALUE_OPTIONS, MavenCommand
from sandbox.ecosystems.java.pom import Reactor
from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.repo_files import RepoFiles

FAILSAFE = "maven-failsafe-plugin"
#: The phase a CI goal runs the tests to, here.
PHASE_OF = {"test": "test", "package": "test", "integration-test": "integration-test"}
PHASE_OF |= {"verify": "verify", "install": "verify", "deploy": "verify"}
#: Options of CI's line kept (with their value when it is the next word).
KEPT = {"-P": True, "--activate-profiles": True, "-pl": True, "--projects": True}
KEPT |= {"-am": False, "--also-make": False, "-amd": False, "--also-make-dependents": False}
#: Properties that skip tests: a line with one runs no tests (or no ITs) at all.
SKIPS_ALL = frozenset({"skipTests", "maven.test.skip"})
SKIPS_ITS = frozenset({"skipITs", "it.skip"})
#: Properties left out of CI's line: they choose the tests, say whether a failure counts, or
#: are the harness's own (command.py); the run sets what it needs.
DROPPED = ("test", "it.test", "maven.test.failure.ignore", "maven.repo.local")
DROPPED_PREFIXES = ("worker.", "maven.ext.", "surefire.", "failsafe.")
GPG_SKIP = "-Dgpg.skip"


@dataclass(frozen=True, kw_only=True)
class TestPhase:
    """The phase the tests run to, and, past `test`, CI's line and the POM that say so."""

    phase: str = "test"
    options: tuple[str, ...] = ()
    line: str | None = None  # CI's line, as written
    where: str | None = None  # its file and line: `.github/workflows/ci.yml:21`
    failsafe: str | None = None  # the POM whose build runs Failsafe

    @property
    def integration(self) -> bool:
        """Whether Failsafe's tests run (the phase is past `test`)."""
        return self.phase != "test"

    def command(self, program: str) -> str:
        """The test command: `mvn test`, or `./mvnw -Pit -Dgpg.skip verify`."""
        return shlex.join([*program.split(), *self.options, self.phase])

    def describe(self) -> str:
        """Where a phase past `test` comes from, for the set-up's line ("" for `test`)."""
        if not self.integration:
            return ""
        return (
            f"CI's `{self.line}` ({self.where}) runs {FAILSAFE}'s tests, bound in "
            f"{self.failsafe}; signing skipped ({GPG_SKIP}: publishing, not testing)"
        )


def runs_failsafe(reactor: Reactor) -> str | None:
    """The first POM whose build runs Failsafe with its `integration-test` goal bound."""
    bound = any((FAILSAFE, "integration-test") in p.goals for p in reactor.poms)
    if not bound:
        return None
    return next((p.path for p in reactor.poms if FAILSAFE in p.plugins), None)


def test_phase(files: RepoFiles, reactor: Reactor) -> TestPhase:
    """`verify` (or `integration-test`) as CI runs it where Failsafe's tests run (see the
    module docstring); else `test`."""
    failsafe = runs_failsafe(reactor)
    if failsafe is None:
        return TestPhase()
    for job in ci_jobs(files):
        for number, line in job.lines:
            parsed = MavenCommand.parse(line) if line.isprintable() else None  # said back
            if parsed is None or not (read := _ci_phase(parsed)):
                continue
            phase, options = read
            if phase == "test":
                return TestPhase()
            return TestPhase(
                phase=phase,
                options=(*options, GPG_SKIP),
                line=line.strip(),
                where=job.where(number),
                failsafe=failsafe,
            )
    return TestPhase()


def _ci_phase(parsed: MavenCommand) -> tuple[str, tuple[str, ...]] | None:
    """The phase CI's Maven line runs its tests to and the options kept; None when it runs no
    test (no phase that does, `-DskipTests`) or builds another POM than the root's."""
    phases = [PHASE_OF[g] for g in parsed.goals if g in PHASE_OF]
    if not phases:
        return None
    phase = max(phases, key=list(PHASE_OF.values()).index)
    kept: list[str] = []
    words = iter(parsed.options)
    for word in words:
        name, _, value = word.partition("=")
        if word in ("-f", "--file"):
            if posixpath.normpath(next(words, "")) != "pom.xml":
                return None
        elif word.startswith("-D"):
            prop = name[2:]
            if prop in SKIPS_ALL and value.lower() != "false":
                return None
            if prop in SKIPS_ITS and value.lower() != "false":
                phase = "test"
            elif prop not in DROPPED and not prop.startswith(DROPPED_PREFIXES):
                kept.append(word)
        elif word in KEPT:
            kept.append(word)
            if KEPT[word]:
                kept.append(next(words, ""))
        elif word.startswith("-P") and len(word) > 2:
            kept.append(word)
        elif word in VALUE_OPTIONS:
            next(words, "")  # a settings file, a thread count, a log file: not taken
    return phase, tuple(kept)
