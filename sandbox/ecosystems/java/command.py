"""A Maven test command (`mvn test`, `./mvnw -pl core verify`) as it runs in the sandbox.

The command runs as written, with what makes its reports this run's and its outcome true:

- `-o`: offline, from the local repository set-up filled (sandbox/ecosystems/java/setup_infer.py);
- `-B -Dstyle.color=never`: batch mode, no colours in the log;
- `-Dmaven.ext.class.path=` the harness's extension (image.py) and `-Dworker.reports=` a folder
  under /tmp named at random for this run: the extension points every module's Surefire and
  Failsafe reports there, whatever the POM says, one folder per module
  (`<folder>/core/surefire-reports/TEST-*.xml`), and sets testFailureIgnore so that every module's
  tests run (the exit status is then the harness's: below);
- the log of the run goes to the user as it runs and into the same folder; the folder (the XML
  reports and the log) is packed into one tar at the report path, which is all that is read
  (sandbox/ecosystems/java/reports.py): a report a test writes where Surefire writes by default
  (`target/surefire-reports`) is not this run's and is never read;
- the exit status: Maven's when it failed (a compile error, a forked VM that ended early); else
  1 when a report names a failure or an error, else 0.

Test ids are `<module>::<class>#<name>` (reports.py). A run of some tests by id selects their
top-level classes (`-Dtest=com.example.RangeTest`:
its nested and parameterised tests with it); the verdict reads the ids.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.ecosystems.java.image import EXTENSION_JAR
from sandbox.ecosystems.words import shell_join

_SHELL = re.compile(r"[;&|<>`$(){}\\\n]")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
MAVENS = ("mvn", "./mvnw", "mvnw", "sh ./mvnw")
#: Options that take the next word as their value.
VALUE_OPTIONS = frozenset(
    "-f --file -s --settings -gs --global-settings -t --toolchains -pl --projects -rf "
    "--resume-from -T --threads -l --log-file -P --activate-profiles -b --builder "
    "-gt --global-toolchains -emp --encrypt-master-password -ep --encrypt-password".split()
)
#: A test id's class part: `com.example.RangeTest`, `RangeTest$Outside` (nested).
_CLASS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
#: Surefire's own flags for a run with no test matching in some module.
NONE_MATCHING = ("-Dsurefire.failIfNoSpecifiedTests=false", "-DfailIfNoTests=false")
#: Failsafe's, which reads its own filter (`-Dit.test`), not Surefire's.
IT_NONE_MATCHING = "-Dit.failIfNoSpecifiedTests=false"
#: The goals that run Failsafe's tests, where a POM binds it (phase.py).
_FAILSAFE_GOALS = frozenset({"integration-test", "verify", "install", "deploy"})
_FILTERS = ("-Dtest=", "-Dit.test=")


@dataclass(frozen=True, kw_only=True)
class MavenCommand:
    """A `mvn` (or wrapper) command split into its words: the `VAR=value` prefix, the program,
    the options and the goals (phases, `plugin:goal`)."""

    assignments: tuple[str, ...]
    program: tuple[str, ...]
    options: tuple[str, ...]
    goals: tuple[str, ...]

    @classmethod
    def parse(cls, test_cmd: str) -> MavenCommand | None:
        """None for anything but a plain Maven command (a pipe, `&&`, a variable: left to its
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
        program: list[str] = []
        if words[:2] == ["sh", "./mvnw"] or words[:2] == ["sh", "mvnw"]:
            program, words = words[:2], words[2:]
        elif words and words[0] in ("mvn", "./mvnw", "mvnw", "mvn.cmd"):
            program, words = words[:1], words[1:]
        else:
            return None
        options: list[str] = []
        goals: list[str] = []
        rest = iter(words)
        for word in rest:
            if word.startswith("-"):
                options.append(word)
                if word in VALUE_OPTIONS:
                    options.append(next(rest, ""))
            else:
                goals.append(word)
        return cls(
            assignments=tuple(assignments),
            program=tuple(program),
            options=tuple(options),
            goals=tuple(goals),
        )

    @property
    def integration(self) -> bool:
        """Whether it runs as far as Failsafe's tests (`verify`, `failsafe:integration-test`)."""
        return any(g in _FAILSAFE_GOALS or g.startswith("failsafe:") for g in self.goals)

    def _filters(self, value: str) -> list[str]:
        """`-Dtest=value`, and Failsafe's `-Dit.test=value` where it runs, with the flags that
        let a module (or a plugin) find none of them."""
        if not self.integration:
            return [f"-Dtest={value}", *NONE_MATCHING]
        return [f"-Dtest={value}", f"-Dit.test={value}", *NONE_MATCHING, IT_NONE_MATCHING]

    def selection(self, ids: Sequence[str]) -> list[str]:
        """The options that select the tests `ids` name: their top-level classes, in every
        module, for Surefire and Failsafe alike; none (the whole suite) when an id is not a
        test's (a file that did not compile)."""
        classes: dict[str, None] = {}
        for test_id in ids:
            module, sep, rest = test_id.partition("::")
            name = rest.partition("#")[0].split("$")[0]
            if not sep or not _CLASS.fullmatch(name):
                return []
            classes[name] = None
        if not classes:
            return []
        return self._filters(",".join(classes))

    def command(self, ids: Sequence[str], *, folder: str, report: str) -> str:
        """The shell that runs it with its reports in `folder` (fresh) and packs them, with the
        log, into the tar `report` (see the module docstring)."""
        options = (
            [o for o in self.options if not o.startswith(_FILTERS)] if ids else [*self.options]
        )
        ours = ["-B", "-Dstyle.color=never", f"-Dmaven.ext.class.path={EXTENSION_JAR}",
                f"-Dworker.reports={folder}/r"]  # fmt: skip
        if not {"-o", "--offline"} & set(options):
            ours.insert(0, "-o")
        words = [*self.assignments, *self.program, *ours, *options, *self.selection(ids)]
        words += list(self.goals) or ["test"]
        log, rc = f"{folder}/maven.log", f"{folder}/rc"
        return "; ".join(
            [
                f"rm -rf {folder} && mkdir -p {folder}/r",
                f"{{ {shell_join(words)}; echo $? > {rc}; }} 2>&1 | tee {log}",
                f"rc=$(cat {rc} 2>/dev/null || echo 1)",
                f"(cd {folder} && tar -cf {report} r maven.log)",
                f"if [ \"$rc\" = 0 ] && grep -rqs -e '<failure' -e '<error' {folder}/r; "
                "then rc=1; fi",
                "exit $rc",
            ]
        )

    def without(self, ids: Sequence[str]) -> str | None:
        """The command with the tests `ids` left out (CI's flaky ones), as Surefire's
        exclusions of `Class#method`; None when one is not a test's id."""
        excluded: list[str] = []
        for test_id in ids:
            klass, _, method = test_id.partition("::")[2].partition("#")
            if not _CLASS.fullmatch(klass) or not method:
                return None
            method = re.sub(r"[(\[].*", "", method)
            if not re.fullmatch(r"[\w$]+", method):
                return None
            excluded.append(f"!{klass}#{method}")
        if not excluded or any(o.startswith(_FILTERS) for o in self.options):
            return None
        # Exclusions alone: Surefire (and Failsafe) keep their own includes (a nested class's
        # tests with its outer class; naming the includes here would lose them).
        words = [*self.assignments, *self.program, *self.options]
        words += self._filters(",".join(excluded))
        words += self.goals
        return shell_join(words)
