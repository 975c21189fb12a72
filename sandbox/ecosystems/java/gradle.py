"""A Gradle build, recognised and stopped before any model call (exit 6, one line).

Gradle's distribution comes from Gradle's own host (services.gradle.org: the wrapper's
`distributionUrl` in gradle/wrapper/gradle-wrapper.properties), which the machines this
harness runs on do not reach, and no image here holds one; so a Gradle build is said, in one
line, with the URL it needs and the ways a user could provide it (their own network, a mirror
they name in distributionUrl, a GRADLE_USER_HOME that holds the distribution). Where Gradle's
reports exist (`build/test-results/**/*.xml`: CI's), `worker ci` reads them with Surefire's
parser (reports.py, cireport.py): the format is the same.
"""

from __future__ import annotations

from sandbox.ecosystems.java.errors import GradleUnavailable
from sandbox.worktree.repo_files import RepoFiles

MARKERS = ("build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts")
WRAPPER_PROPERTIES = "gradle/wrapper/gradle-wrapper.properties"


def is_gradle(files: RepoFiles) -> bool:
    return any(files.exists(m) for m in MARKERS)


def distribution_url(files: RepoFiles) -> str | None:
    """The wrapper's `distributionUrl`, its `\\:` escapes undone (a .properties file)."""
    for line in (files.read(WRAPPER_PROPERTIES) or "").splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == "distributionUrl":
            return value.strip().replace("\\:", ":").replace("\\=", "=") or None
    return None


def gradle_test_command(files: RepoFiles) -> str:
    return "./gradlew test" if files.exists("gradlew") else "gradle test"


def refuse_gradle(files: RepoFiles) -> GradleUnavailable:
    """The one line a Gradle build stops with."""
    url = distribution_url(files)
    needs = (
        f"its wrapper's distribution {url}"
        if url
        else "a Gradle distribution (no gradle/wrapper/gradle-wrapper.properties names one)"
    )
    return GradleUnavailable(
        f"a Gradle build: it needs {needs}, from Gradle's host, which this sandbox does not "
        "reach and no image here holds; provide it from your own network, a mirror you name "
        f"in {WRAPPER_PROPERTIES} (distributionUrl), or a GRADLE_USER_HOME that has it "
        "(wrapper/dists) - only Maven builds run here today"
    )
