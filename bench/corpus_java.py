"""The reference side of bench/corpus.py for a Maven project (`ecosystem = "java"` in a list): a
fresh clone, the host's JDK and Maven (or the project's own wrapper, where the list's `test` is
`./mvnw ...`, as its CI runs it), the list's `test` (`mvn -B test`) as a user, with a local
repository of the bench's own (WORK/m2, `-Dmaven.repo.local` in MAVEN_OPTS: the host's ~/.m2 is
not read) and the wrapper's Maven under WORK/mvnw-home; then the same command offline (`-o`),
timed: the warm figure a warm sandbox run is set beside. Each module's Surefire reports
(`<module>/target/surefire-reports/TEST-*.xml`, written by the first run) are read by the
sandbox's own reader (sandbox/ecosystems/java/reports.py) into the ids a sandbox run gives
(`<module>::<class>#<name>`, `.` for the root).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from node_host import SYSTEM_PATH, run_installs, run_shell

from sandbox.ecosystems.java.reports import read_xml_reports

# The host's Java and Maven settings would make a run no CI has.
DROPPED_ENV = ("JAVA_", "JDK_", "MAVEN_", "M2_", "_JAVA_OPTIONS")
JAVA_HOME = Path("/usr/lib/jvm/java-17-openjdk-amd64")


def java_version() -> str:
    """The host JDK's version (`17.0.15`): the reference's toolchain, as `node_version`."""
    done = subprocess.run([JAVA_HOME / "bin" / "java", "-version"], capture_output=True,
                          text=True, check=True)  # fmt: skip
    found = re.search(r'version "([^"]+)"', done.stderr)
    return found.group(1) if found else done.stderr.strip().splitlines()[0]


def surefire_reports(tree: Path) -> Iterator[tuple[str, bytes]]:
    """(module folder, XML) of each Surefire report under `tree`: `.` for the root's."""
    for report in sorted(tree.glob("**/target/surefire-reports/TEST-*.xml")):
        module = report.parent.parent.parent.relative_to(tree).as_posix()
        yield module, report.read_bytes()


def offline(test: str) -> str:
    """The list's test command run offline: `mvn -B test` -> `mvn -B test -o`."""
    return f"{test} -o"


def run_java_reference(
    entry: Any, work: Path, *, user: Sequence[str], timeout_s: float,
    checkout: Callable[[Any, Path], None], owner: str,
) -> dict[str, Any]:  # fmt: skip
    """`entry`'s install and test (a corpus.Entry) in WORK/NAME/ref, as `user` (a prefix;
    `owner` owns the folders then); the result as reference.json holds it."""
    where = work / entry.name
    clone, log_path = where / "ref", where / "reference.log"
    result: dict[str, Any] = {"name": entry.name, "commit": entry.commit, "counts": None}
    try:
        checkout(entry, clone)
    except RuntimeError as exc:
        return result | {"problem": f"checkout failed: {exc}"}
    repo, wrapper_home = work / "m2", work / "mvnw-home"
    for folder in (where / "home", repo, wrapper_home):
        folder.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
    env = {
        **base,
        "HOME": str(where / "home"),
        "JAVA_HOME": str(JAVA_HOME),
        "PATH": f"{JAVA_HOME / 'bin'}:{SYSTEM_PATH}",
        "MAVEN_OPTS": f"-Dmaven.repo.local={repo}",
        "MAVEN_USER_HOME": str(wrapper_home),
        **entry.env,
    }
    if user:
        for folder in (where, repo, wrapper_home):
            subprocess.run(["chown", "-R", f"{owner}:", str(folder)], check=True)
    with log_path.open("w", encoding="utf-8") as log:
        started = time.monotonic()
        failed = run_installs(
            entry.install, cwd=clone, env=env, log=log, timeout_s=timeout_s, user=user
        )
        if failed:
            return result | {"problem": f"install failed: `{failed[0]}` (exit {failed[1]})"}
        result["install_s"] = round(time.monotonic() - started, 1)
        started = time.monotonic()
        code = run_shell(entry.test, cwd=clone, env=env, log=log, timeout_s=timeout_s, user=user)
        result |= {"test_s": round(time.monotonic() - started, 1), "exit_code": code}
        reports = list(surefire_reports(clone))
        started = time.monotonic()
        again = run_shell(offline(entry.test), cwd=clone, env=env, log=log, timeout_s=timeout_s,
                          user=user)  # fmt: skip
    result |= {"offline_test_s": round(time.monotonic() - started, 1), "offline_exit_code": again}
    result["java"] = java_version()
    try:
        summary = read_xml_reports(reports)
    except ValueError:
        last = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        errors = [line for line in last if line.startswith("[ERROR]")] or last or [""]
        return result | {"problem": f"no Surefire report (exit {code}): {errors[0][:300]}"}
    return result | {
        "counts": {"passed": summary.passed, "failed": summary.failed,
                   "errors": summary.errors, "skipped": summary.skipped},
        "failing": summary.failing_ids(),
        "outcomes": dict(summary.outcomes),
    }  # fmt: skip
