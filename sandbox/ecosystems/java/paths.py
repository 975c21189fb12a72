"""Java's protected files and test spellings, which the registry adds to the path policy
(sandbox/ecosystems/__init__.py: language_paths). Constants only: every run loads them,
whatever its language."""

from __future__ import annotations

#: Every pom.xml (a Surefire exclusion, a dependency, a skipped test are all in it), the Maven
#: wrapper and .mvn/, the toolchains and settings files, the JDK pins, and Gradle's build
#: scripts and wrapper.
WRITE_DENY: tuple[str, ...] = (
    "**/pom.xml",
    "**/mvnw",
    "**/mvnw.cmd",
    "**/.mvn/**",
    "**/toolchains.xml",
    "**/settings.xml",
    "**/.java-version",
    "**/.sdkmanrc",
    "**/build.gradle",
    "**/build.gradle.kts",
    "**/settings.gradle",
    "**/settings.gradle.kts",
    "**/gradle.properties",
    "**/gradlew",
    "**/gradlew.bat",
    "**/gradle/wrapper/**",
)
#: Maven Failsafe's integration tests (`src/test/` is the policy's `**/test/**`).
TEST_GLOBS: tuple[str, ...] = ("**/src/it/**",)
