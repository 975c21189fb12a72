"""How far through Maven's lifecycle a project's tests run (sandbox/ecosystems/java/phase.py):
CI's `verify` where a POM binds Failsafe, else `test`; what set-up runs to match. No Docker:
tests/test_java.py's Failsafe test runs one such project end to end."""

from __future__ import annotations

from pathlib import Path

from sandbox.ecosystems.java.command import MavenCommand
from sandbox.ecosystems.java.ecosystem import JAVA
from sandbox.ecosystems.java.setup_infer import infer_java_setup
from tests.java_projects import FAILSAFE_PROJECT, PROJECT

CI = ".github/workflows/ci.yml"


def ci(*lines: str) -> str:
    steps = "".join(f"      - run: {line}\n" for line in lines)
    return f"jobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n{steps}"


def setup_of(repo: Path) -> str:
    command = infer_java_setup(repo, environ={}, home=repo / "no-home").command
    assert command is not None
    return command


def test_ci_s_verify_runs_failsafe_s_tests_in_set_up_and_in_the_run(make_repo):
    repo = make_repo(FAILSAFE_PROJECT)
    assert JAVA.test_command(repo) == "mvn -Dgpg.skip verify"
    plan = infer_java_setup(repo, environ={}, home=repo / "no-home")
    assert plan.command is not None
    assert (
        "'-Dit.test=*#workerSetupOnly' -Dit.failIfNoSpecifiedTests=false -Dgpg.skip verify;"
        in plan.command
    )
    assert f"{CI}:9" in plan.sources
    assert plan.describe().startswith(
        "inferred set-up: mvn clean, then verify with no test selected (CI's "
        f"`mvn -B -ntp verify --file pom.xml` ({CI}:9) runs maven-failsafe-plugin's tests, "
        "bound in pom.xml; signing skipped (-Dgpg.skip: publishing, not testing)): "
    )


def test_without_both_failsafe_bound_and_ci_running_verify_the_tests_run_to_test(make_repo):
    unbound = FAILSAFE_PROJECT["pom.xml"].replace(
        "<goals><goal>integration-test</goal><goal>verify</goal></goals>", ""
    )
    cases = {
        "no CI": {**FAILSAFE_PROJECT, CI: "name: docs\n"},
        "CI runs test": {**FAILSAFE_PROJECT, CI: ci("mvn -B test", "mvn -B verify")},
        "CI skips the ITs": {**FAILSAFE_PROJECT, CI: ci("mvn -B verify -DskipITs")},
        "another POM": {**FAILSAFE_PROJECT, CI: ci("mvn -f tools/pom.xml verify")},
        "goals unbound": {**FAILSAFE_PROJECT, "pom.xml": unbound},
        "no Failsafe": {**PROJECT, CI: ci("mvn -B verify")},
    }
    for name, files in cases.items():
        repo = make_repo(files, name=name.replace(" ", "-"))
        assert JAVA.test_command(repo) == "mvn test", name
        assert " '-Dit.test=" not in setup_of(repo) and " test;" in setup_of(repo), name


def test_ci_s_line_keeps_what_it_builds_and_drops_what_the_harness_decides(make_repo):
    """A line with `-DskipTests` runs no test and is passed over; `install` runs the ITs at
    `verify`; profiles and modules stay; a settings file, threads, a test filter and the
    harness's own properties (a hostile `-Dworker.reports`) do not; Failsafe bound through a
    `<pluginManagement>`; the project's wrapper."""
    pom = FAILSAFE_PROJECT["pom.xml"]
    block = pom[pom.index("      <plugin>\n        <artifactId>maven-failsafe-plugin") :]
    block = block[: block.index("</plugin>\n") + len("</plugin>\n")]
    managed = pom.replace(
        block, "      <plugin><artifactId>maven-failsafe-plugin</artifactId></plugin>\n"
    ).replace("  </build>", f"    <pluginManagement><plugins>\n{block}    </plugins>"
              "</pluginManagement>\n  </build>")  # fmt: skip
    assert managed.count("maven-failsafe-plugin") == 2 and "<pluginManagement>" in managed
    line = (
        "./mvnw -B -T 1C -s .ci/settings.xml -Pit,slow -pl core -am -Dlicense.skip=true "
        "-Dtest=FooTest -Dworker.reports=/tmp/x -Dmaven.ext.class.path=/x.jar install"
    )
    repo = make_repo(
        {
            **FAILSAFE_PROJECT,
            "pom.xml": managed,
            "mvnw": "#!/bin/sh\n",
            CI: ci("mvn -B package -DskipTests", line),
        }  # fmt: skip
    )
    assert JAVA.test_command(repo) == (
        "./mvnw -Pit,slow -pl core -am -Dlicense.skip=true -Dgpg.skip verify"
    )
    assert "-Pit,slow -pl core -am -Dlicense.skip=true -Dgpg.skip verify;" in setup_of(repo)


def test_a_run_by_id_past_test_selects_failsafe_s_tests_too():
    cmd = MavenCommand.parse("mvn -Dgpg.skip verify")
    assert cmd is not None and cmd.integration
    assert cmd.selection([".::com.example.RangeIT#containsItsWholeSpan"]) == [
        "-Dtest=com.example.RangeIT",
        "-Dit.test=com.example.RangeIT",
        "-Dsurefire.failIfNoSpecifiedTests=false",
        "-DfailIfNoTests=false",
        "-Dit.failIfNoSpecifiedTests=false",
    ]
    assert JAVA.deselect("mvn verify", [".::com.example.RangeIT#flaky"]) == (
        "mvn '-Dtest=!com.example.RangeIT#flaky' '-Dit.test=!com.example.RangeIT#flaky' "
        "-Dsurefire.failIfNoSpecifiedTests=false -DfailIfNoTests=false "
        "-Dit.failIfNoSpecifiedTests=false verify"
    )
    test = MavenCommand.parse("mvn test")
    assert test is not None and not test.integration
    assert "-Dit.test=com.example.RangeIT" not in test.selection([".::com.example.RangeIT#a"])
