"""The sandbox image for one JDK: `worker-sandbox:jdk17`, built once on a Debian sandbox image.

The JDK and Maven are Debian's packages (openjdk-N-jdk-headless, maven), installed by apt in
the image's build, as the default image's own Dockerfile installs what a base lacks: the build
reaches deb.debian.org (sandbox/container/toolchain_image.py, `network_mode="default"`),
nothing else is fetched. JDK 17 is bookworm's, on the default sandbox image; JDK 21 is
trixie's, on the trixie sandbox image (sandbox/container/suites.py). A .deb fetched on the host
instead would need the host to be the same Debian release with apt, which a user's machine is
not.

The build also compiles the harness's Maven extension (maven/WorkerReports.java) against the
image's Maven into EXTENSION_JAR: a run loads it with `-Dmaven.ext.class.path`, and it points
Surefire's and Failsafe's reports into a folder that run chose at random
(sandbox/ecosystems/java/command.py). The local repository is ~/.m2/repository, on the image's
disk: what a set-up resolves into it is committed with the set-up image, and the tests read it
offline (`-o`), from a root they cannot write.

An image is current while its recipe label matches (this Dockerfile, which names the
extension's source by its hash, the base image's id, the major): a changed extension rebuilds
it; a new Debian point release of the JDK does not by itself.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from typing import IO

import docker

from sandbox.container.suites import SUITES, Suite
from sandbox.container.toolchain_image import Fetched, ensure_toolchain_image
from sandbox.worktree.workspace import SANDBOX_UID

IMAGE_PREFIX = "worker-sandbox:jdk"
LABEL_JDK = "worker.jdk.major"
DEFAULT_JDK = 17
#: The JDK majors here and the Debian release of the sandbox image each is installed on.
JDKS: dict[int, Suite] = {
    11: next(s for s in SUITES if s.name == "bookworm"),
    17: next(s for s in SUITES if s.name == "bookworm"),
    21: next(s for s in SUITES if s.name == "trixie"),
}
#: A JDK no sandbox image's release has, from the older Debian release that has it (its
#: security suite: bullseye-security's openjdk-11 is the newest 11 Debian builds), installed on
#: the image named in JDKS; apt takes that release's packages only where the image's own
#: release has none (a pin of 100), and the extra source is gone from the image after.
OLDER_RELEASE: dict[int, str] = {11: "bullseye"}
JAVA_HOME = "/usr/lib/jvm/worker-jdk"
EXTENSION_JAR = "/usr/local/share/worker/worker-maven-reports.jar"
EXTENSION_SOURCE = "/usr/local/share/worker/WorkerReports.java"
MAVEN_USER_HOME = "/home/worker/.m2"
LOCAL_REPOSITORY = f"{MAVEN_USER_HOME}/repository"
#: MAVEN_USER_HOME: where the wrapper (`mvnw`) keeps the Maven it downloads, on the image's disk
#: (the sandbox's HOME is /tmp, which no set-up image keeps: sandbox/container/base.py).
#: A one-core sandbox starts Maven's JVM in half the time without the C2 compiler; javac runs
#: in that JVM, and its C1-only code overflowed the default stack (1 MiB) on a long chain of
#: calls that the host's javac compiles (JSON-java's tests): 4 MiB. The local repository is
#: named, not found from the user's home: a sandbox user with no passwd entry (the worker's
#: own uid) or root would look elsewhere (Java reads the home from passwd).
MAVEN_OPTS = (
    f"-XX:+TieredCompilation -XX:TieredStopAtLevel=1 -Xss4m -Dmaven.repo.local={LOCAL_REPOSITORY}"
)

Progress = Callable[[str], None]


def jdk_image_name(major: int) -> str:
    """`worker-sandbox:jdk17` for 17."""
    return f"{IMAGE_PREFIX}{major}"


def supports(jdk: int, level: int) -> bool:
    """Whether JDK `jdk`'s javac compiles for Java `level` (`--release`): its own major down
    to 7 (JDK 12-19) or 8 (JDK 20 on).

    >>> [supports(17, 8), supports(17, 21), supports(21, 7), supports(21, 11)]
    [True, False, False, True]
    """
    return (7 if jdk < 20 else 8) <= level <= jdk


def dockerfile(major: int) -> str:
    digest = hashlib.sha256(_extension_source()).hexdigest()[:16]
    return f"""\
# JDK {major} and Maven from Debian's packages (sandbox/ecosystems/java/image.py); the
# harness's Maven extension (WorkerReports.java, sha256 {digest}) compiled against that Maven.
ARG BASE=worker-sandbox:latest
FROM ${{BASE}}
ARG UID={SANDBOX_UID}
USER root
COPY root/ /
RUN set -e; \\
{_older_release(major)}    apt-get update; \\
    apt-get install -y --no-install-recommends openjdk-{major}-jdk-headless maven; \\
    rm -rf /var/lib/apt/lists/*; \\
    ln -sfn "$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")" {JAVA_HOME}; \\
    mkdir -p /tmp/ext/META-INF/sisu; \\
    javac --release 8 -nowarn -Xlint:-options -cp '/usr/share/maven/lib/*' -d /tmp/ext \\
        {EXTENSION_SOURCE}; \\
    echo worker.maven.WorkerReports > /tmp/ext/META-INF/sisu/javax.inject.Named; \\
    jar cf {EXTENSION_JAR} -C /tmp/ext .; rm -rf /tmp/ext; \\
    mkdir -p {LOCAL_REPOSITORY}; chown -R ${{UID}}:${{UID}} /home/worker/.m2{_older_gone(major)}
ENV JAVA_HOME={JAVA_HOME} \\
    MAVEN_USER_HOME={MAVEN_USER_HOME} \\
    MAVEN_OPTS="{MAVEN_OPTS}"
USER ${{UID}}:${{UID}}
"""


_APT_LIST = "/etc/apt/sources.list.d/worker-jdk.list"
_APT_PIN = "/etc/apt/preferences.d/worker-jdk"


def _older_release(major: int) -> str:
    """The Dockerfile's lines that add an older Debian release's source for `major` ("" for a
    JDK of the image's own release)."""
    if (name := OLDER_RELEASE.get(major)) is None:
        return ""
    sources = (
        f"deb http://deb.debian.org/debian {name} main\\n"
        f"deb http://deb.debian.org/debian-security {name}-security main\\n"
    )
    pins = "\\n\\n".join(
        f"Package: *\\nPin: release n={n}\\nPin-Priority: 100" for n in (name, f"{name}-security")
    )
    return f"    printf '{sources}' > {_APT_LIST}; \\\n    printf '{pins}\\n' > {_APT_PIN}; \\\n"


def _older_gone(major: int) -> str:
    return f"; \\\n    rm -f {_APT_LIST} {_APT_PIN}" if major in OLDER_RELEASE else ""


@dataclass(frozen=True, kw_only=True)
class JdkImage:
    """A JDK sandbox image made sure of; `built_s` None when it was there already."""

    name: str
    major: int
    built_s: float | None = None


def ensure_jdk_image(
    client: docker.DockerClient, *, major: int, progress: Progress, name: str | None = None
) -> JdkImage:
    """Make sure the image for JDK `major` exists and is current (built on its Debian
    release's sandbox image, made if need be); `name` defaults to jdk_image_name. Workers on
    one host build it one at a time; the others wait, then find it."""
    if major not in JDKS:
        raise ValueError(f"no JDK {major} here: the JDKs are {', '.join(map(str, sorted(JDKS)))}")
    name = name or jdk_image_name(major)
    text = dockerfile(major)

    def fetch() -> Fetched:
        return {LABEL_JDK: str(major)}, lambda out: _write_context(out, text)

    _labels, built_s = ensure_toolchain_image(
        client, name=name, version=str(major), dockerfile=text, fits=lambda _l: True,
        fetch=fetch, progress=progress, suite=JDKS[major], network_mode="default",
    )  # fmt: skip
    if built_s is not None:
        progress(f"built {name} (JDK {major}) in {built_s:.0f} s")
    return JdkImage(name=name, major=major, built_s=built_s)


def _write_context(out: IO[bytes], text: str) -> None:
    """The build context: the Dockerfile and the extension's source."""
    with tarfile.open(fileobj=out, mode="w") as tar:
        for path, data in (
            ("Dockerfile", text.encode()),
            ("root" + EXTENSION_SOURCE, _extension_source()),
        ):
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))


def _extension_source() -> bytes:
    source = resources.files("sandbox.ecosystems.java").joinpath("maven/WorkerReports.java")
    return source.read_bytes()
