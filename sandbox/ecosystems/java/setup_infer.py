"""The set-up a Java developer's CI runs before `mvn -o test` can: every plugin and dependency
the test phase needs, resolved into the local repository (~/.m2/repository, on the image's
disk: sandbox/ecosystems/java/image.py), through the set-up fence to Maven Central.

`dependency:go-offline` alone leaves out what Maven only resolves when a mojo runs (the
compiler's and Surefire's own dependencies, Surefire's JUnit Platform or JUnit 4 provider), so a
later offline run fails; the set-up instead runs the lifecycle the tests run, up to `test`, with
a test filter no test matches (`-Dtest=*#workerSetupOnly`): every plugin of every module
resolves and runs, Surefire resolves its provider and starts its fork, and no test runs. A
compile error does not stop it (`maven.compiler.failOnError=false`: the planted bug may be one;
the test run says so later); a dependency or plugin no repository has does, in one line, with
exit 6 (the kit's `broken` case). `clean` runs first, on its own, for its plugin to be
resolved (a test command may start so); its failure is not the set-up's: a plugin bound to it
may not run on this JDK (cobertura-maven-plugin 2.6 asks for tools.jar, gone since JDK 9:
jopt-simple 5.0.4, bench/corpus-java.toml), and `mvn test` never runs it.

The project's wrapper (`mvnw`) when it has one, else the image's Maven: the wrapper's
distribution (its distributionUrl, on Maven Central) lands in ~/.m2/wrapper with the rest.
Maven reads no proxy variable: the set-up writes a settings file naming the fence's proxy
(HTTPS_PROXY) and passes it with `-s`; every JVM it starts gets the proxy as system properties
(JAVA_TOOL_OPTIONS): the wrapper's own downloader (a Java program where the image has no
wget or curl, as this one has not) among them.
A mirror the user names stands for every repository, and its host joins the fence's
allow-list: the mirror of central in their own settings.xml (sandbox/ecosystems/java/settings.py:
$MAVEN_SETTINGS, else ~/.m2/settings.xml), or MAVEN_MIRROR_URL, which wins. Its credentials (the
settings.xml's server of the mirror's id; else MAVEN_MIRROR_USERNAME and, with --setup-env,
MAVEN_MIRROR_PASSWORD) reach Maven through the environment alone (the settings file set-up
writes says `${env.MAVEN_MIRROR_PASSWORD}`). Repositories the POMs declare (`<repositories>`)
are named in the plan's notes and not allowed through the fence,
as an `.npmrc`'s hosts are not; `--setup-network full` allows any host.
"""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from sandbox.ecosystems.java.phase import test_phase
from sandbox.ecosystems.java.pom import read_reactor, repository_hosts
from sandbox.ecosystems.java.settings import (
    MIRROR,
    MIRROR_USER,
    MirrorVariables,
    read_user_settings,
    settings_path,
)
from sandbox.setup.installer import Installer
from sandbox.setup.plan import SetupPlan
from sandbox.worktree.repo_files import RepoFiles

CENTRAL_HOSTS = ("repo.maven.apache.org", "repo1.maven.org")
SETTINGS = "/tmp/worker-maven-settings.xml"
#: The settings file: the fence's proxy (from HTTPS_PROXY, as the set-up is told it), and the
#: user's mirror of every repository (MAVEN_MIRROR_URL), its id `central` so that what it served
#: is, to the offline test runs, what Central did (Maven's local repository records where each
#: file came from); its credentials as `${env.X}`, which Maven reads from the environment when it
#: starts: never written into the file, the image or the log.
_SETTINGS = (
    r"""p="${HTTPS_PROXY:-${https_proxy:-}}"; proxies=""; """
    r"""if [ -n "$p" ]; then hp="${p#*://}"; hp="${hp%%/*}"; hp="${hp##*@}"; """
    r"""h="${hp%:*}"; port="${hp##*:}"; """
    r"""proxies="<proxies><proxy><id>fence</id><active>true</active><protocol>https</protocol>"""
    r"""<host>$h</host><port>$port</port></proxy><proxy><id>fence-http</id><active>true</active>"""
    r"""<protocol>http</protocol><host>$h</host><port>$port</port></proxy></proxies>"; """
    r"""export JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -Dhttps.proxyHost=$h """
    r"""-Dhttps.proxyPort=$port -Dhttp.proxyHost=$h -Dhttp.proxyPort=$port"; fi; """
    r"""m="${MAVEN_MIRROR_URL:-}"; mirror=""; servers=""; """
    r"""if printf %s "$m" | grep -q '[<>&"]'; then """
    r"""echo "error: MAVEN_MIRROR_URL is not a plain URL"; exit 2; fi; """
    r"""if [ -n "$m" ]; then mirror="<mirrors><mirror><id>central</id><mirrorOf>*</mirrorOf>"""
    r"""<url>$m</url></mirror></mirrors>"; """
    r"""if [ -n "${MAVEN_MIRROR_USERNAME:-}" ]; then servers="<servers><server><id>central</id>"""
    r"""<username>\${env.MAVEN_MIRROR_USERNAME}</username>"""
    r"""<password>\${env.MAVEN_MIRROR_PASSWORD}</password></server></servers>"; fi; fi; """
    r"""printf '<settings>%s%s%s</settings>
' "$servers" "$mirror" "$proxies" > """ + SETTINGS
)
JAVA_INSTALLER = Installer(
    name="maven",
    hosts=CENTRAL_HOSTS,
    url_variables=(MIRROR,),
    passed=(MIRROR_USER,),  # a user name, not a secret (the password is named with --setup-env)
    # What decides a Maven set-up: every POM, the wrapper and its properties, .mvn's config.
    inputs=("**/pom.xml", ".mvn/**/*", "mvnw", "mvnw.cmd"),
    widen_hint=(
        "the mirror of central in your settings.xml, or MAVEN_MIRROR_URL, joins them; "
        "--setup-network full allows any host "
        "(a repository a POM declares)"
    ),
)
#: The flags of the set-up's Maven run (see the module docstring).
SETUP_FLAGS = (
    "-B",
    "-fae",
    "-Dstyle.color=never",
    "-Dtest=*#workerSetupOnly",
    "-Dsurefire.failIfNoSpecifiedTests=false",
    "-DfailIfNoTests=false",
    "-Dmaven.compiler.failOnError=false",
    "-Dmaven.test.failure.ignore=true",
)
#: Failsafe's own filter and flag, where the tests run to `verify` (phase.py): it ignores
#: Surefire's `-Dtest`.
FAILSAFE_SETUP_FLAGS = ("-Dit.test=*#workerSetupOnly", "-Dit.failIfNoSpecifiedTests=false")


def _said_last(run: str) -> str:
    """`run` with its output kept, and, when it fails, the line of Maven's that says why
    (an artifact no repository has) said again last, for the set-up's one-line error; a
    repository's HTTP answer first (HTTP_ANSWER), where Maven's line buries it."""
    log, rc = "/tmp/worker-maven-setup.log", "/tmp/worker-maven-setup.rc"
    return (
        f"{{ {run}; echo $? > {rc}; }} 2>&1 | tee {log}; rc=$(cat {rc} 2>/dev/null || echo 1); "
        f'if [ "$rc" != 0 ]; then c=$(grep -m1 -oE "{_CAUSE}" {log} | sed "s/ -> .*//"); '
        f'{HTTP_ANSWER}echo; echo "error: ${{c:-Maven failed (exit $rc)}}"; fi; exit $rc'
    )


#: Maven's line for a repository that answered with an error (`Could not transfer artifact A
#: from/to central (URL): authentication failed for URL/..., status: 401 Unauthorized`; Maven
#: 3.9: `status code: 401, reason phrase: ...`) said as `URL answered 401 Unauthorized for A`,
#: and where credentials come from when it is a 401 or 403: the one-line error keeps 240
#: characters, which Maven's own line spends before it names the host.
HTTP_ANSWER = (
    """u=$(printf %s "$c" | grep -oE 'from/to [^ ]+ [(][^)]*[)]' | head -n1 """
    """| sed 's/^from.to [^ ]* .//; s/.$//'); """
    """s=$(printf %s "$c" | grep -oE 'status( code)?: [0-9]{3}[^,]*' | head -n1 """
    """| sed 's/^[^:]*: //'); """
    """a=$(printf %s "$c" | grep -oE 'Could not transfer artifact [^ ]+' | head -n1 """
    """| sed 's/^Could not transfer artifact //'); """
    """if [ -n "$u" ] && [ -n "$s" ]; then c="$u answered $s for ${a:-an artifact}"; """
    """case "$s" in 401*|403*) c="$c (its credentials: the <server> of your settings.xml's """
    """mirror, or MAVEN_MIRROR_USERNAME and --setup-env MAVEN_MIRROR_PASSWORD)";; esac; fi; """
)


_CAUSE = (
    "(Could not resolve dependencies|Could not find artifact|Failure to find|Non-resolvable"
    "|Plugin [^ ]+ or one of its dependencies could not be resolved|Could not transfer"
    "|Unknown host|Cannot access).*"
)


#: A wrapper script of the kind that runs `.mvn/wrapper/maven-wrapper.jar` fetches the jar,
#: where it is not committed, with wget or curl (the image has neither) or a
#: MavenWrapperDownloader.java the project may not have (FasterXML/java-classmate 1.7.3,
#: bench/corpus-java.toml): the set-up fetches it with Java, through the fence, from the
#: properties' wrapperUrl or the URL the script names. A file set-up wrote into the tree, every
#: run's copy has it (sandbox/setup/tree.py). A fetch that fails leaves the script to say so.
_FETCH_JAVA = (
    "public class WorkerFetch { public static void main(String[] a) throws Exception { "
    "try (var in = java.net.URI.create(a[0]).toURL().openStream()) { "
    "java.nio.file.Files.copy(in, java.nio.file.Path.of(a[1])); } } }"
)
_WRAPPER_JAR = (
    'j=.mvn/wrapper/maven-wrapper.jar; if [ ! -f "$j" ] && grep -q MavenWrapperMain mvnw; then '
    "u=$(sed -n 's/^wrapperUrl=//p' .mvn/wrapper/maven-wrapper.properties 2>/dev/null | head -n1); "
    """[ -n "$u" ] || u=$(grep -o 'https://[^"]*/maven-wrapper-[0-9.]*[.]jar' mvnw | head -n1); """
    f"printf '%s\\n' {shlex.quote(_FETCH_JAVA)} > /tmp/WorkerFetch.java; "
    'java /tmp/WorkerFetch.java "$u" "$j" || true; fi'
)


def maven_program(files: RepoFiles) -> str:
    """`./mvnw` when the repository has the wrapper, else `mvn`."""
    return "./mvnw" if files.exists("mvnw") else "mvn"


def infer_java_setup(
    repo: Path, *, environ: Mapping[str, str] | None = None, home: Path | None = None
) -> SetupPlan:
    """The set-up of the module docstring. `environ` (os.environ by default) and `home` (the
    user's home, for ~/.m2/settings.xml) name the user's settings file and mirror."""
    environ = os.environ if environ is None else environ
    path = settings_path(environ, home)
    user = read_user_settings(path, environ)
    installer = JAVA_INSTALLER
    if user.mirror is not None:
        installer = replace(installer, host_config=MirrorVariables(path, environ))
    files = RepoFiles(repo)
    reactor = read_reactor(files)
    program = maven_program(files)
    maven = "sh ./mvnw" if program == "./mvnw" else program
    clean = shlex.join([*maven.split(), "-s", SETTINGS, "-B", "-q", "clean"])
    phase = test_phase(files, reactor)
    flags = [*SETUP_FLAGS, *(FAILSAFE_SETUP_FLAGS if phase.integration else ())]
    test = shlex.join([*maven.split(), "-s", SETTINGS, *flags, *phase.options, phase.phase])
    # The project's own classes are the test run's to compile, from the tree it is given: a
    # set-up image serves every tree with the same POMs, so classes it kept would be another
    # tree's (workspace.py: the copy's times). What Maven resolved stays, in ~/.m2.
    targets = " ".join(
        sorted({shlex.quote(posixpath.join(p.folder, "target")) for p in reactor.poms})
    )
    run = f"{{ {clean} >/dev/null 2>&1 || true; }}; {test}; s=$?; rm -rf -- {targets or 'target'}"
    run += "; (exit $s)"
    if program == "./mvnw":
        run = f"{_WRAPPER_JAR}; {run}"
    notes = [*reactor.notes, *user.notes]
    declared = [h for h in repository_hosts(reactor.repositories()) if h not in CENTRAL_HOSTS]
    mirrored = user.mirror is not None or bool(environ.get(MIRROR))
    if declared:
        notes.append(
            f"the POMs declare the repositories {', '.join(declared)}: not allowed through the "
            "set-up fence (--setup-network full allows them)"
            + ("; set-up asks your mirror for what they hold" if mirrored else "")
        )
    modules = len(reactor.module_folders())
    what = f"{modules} modules" if reactor.several else "the project"
    sources = [p.path for p in reactor.poms]
    if program == "./mvnw":
        sources.append(".mvn/wrapper/maven-wrapper.properties")
    if phase.where is not None:
        sources.append(phase.where)
    if user.mirror is not None:
        origin = f"the mirror {user.mirror.describe()}"
    elif environ.get(MIRROR):
        origin = f"the mirror in {MIRROR}"
    else:
        origin = "Maven Central"
    return SetupPlan(
        command=f"{_SETTINGS}; {_said_last(run)}",
        sources=tuple(sources),
        notes=tuple(notes),
        summary=f"{program} clean, then {phase.phase} with no test selected"
        + (f" ({phase.describe()})" if phase.integration else "")
        + f": every plugin and dependency the tests of {what} need, resolved from {origin} "
        "into ~/.m2/repository",
        installer=installer,
    )
