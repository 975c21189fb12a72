"""What CI wrote of a Maven (or Gradle) build, read into this ecosystem's test ids
(`com.example.RangeTest#includesUpperBound`, reports.py), and whether a test id CI named is in
the repository.

CI keeps Surefire's `target/surefire-reports/TEST-*.xml` (Failsafe's, Gradle's
`build/test-results/test/TEST-*.xml`: the same format), one file per class, or a file that
joins several under <testsuites>. In a reactor a file does not say its module: a test's module
is the folder of the module whose `src/test/` holds its class's file.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from sandbox.ecosystems.java.pom import read_reactor
from sandbox.ecosystems.java.source import file_of_class, is_test_file, java_files
from sandbox.testrun.junit import TestSummary, parse_junit
from sandbox.worktree.repo_files import RepoFiles


def read_java_ci_report(data: bytes, repo: Path) -> TestSummary:
    """CI's Surefire/Failsafe/Gradle XML, with ids as a run here names the same tests;
    ValueError when it is not JUnit XML."""
    several = read_reactor(RepoFiles(repo)).several
    tests = [f for f in java_files(repo) if is_test_file(f)] if several else []

    def test_id(case: ET.Element, suites: Sequence[ET.Element]) -> str:
        classname = case.get("classname") or (suites[-1].get("name") or "" if suites else "")
        name = f"{classname}#{case.get('name') or '?'}"
        rel = file_of_class(tests, classname) if several else None
        module = rel.split("/src/")[0] if rel and "/src/" in rel else "."
        return f"{module}::{name}"

    return parse_junit(data, test_id=test_id)


def has_java_test(repo: Path, test_id: str) -> bool:
    """Is there such a test in the repository? `module::pkg.Class[$Nested]#method...`: the
    class's file is in a test folder of the module and declares a method of that name (a
    parameterised case is made at run time: its method is what can be checked); a module's
    id: it has a test folder."""
    module, sep, rest = test_id.partition("::")
    tests = [f for f in java_files(repo) if is_test_file(f)]
    if module not in ("", "."):
        tests = [f for f in tests if f.startswith(module.rstrip("/") + "/")]
    if not sep:
        return bool(tests)
    klass, _, method = rest.partition("#")
    rel = file_of_class(tests, klass)
    if rel is None:
        return False
    if not method:
        return True
    text = RepoFiles(repo).read(rel) or ""
    name = re.sub(r"[(\[].*", "", method)
    return bool(name) and re.search(rf"\b{re.escape(name)}\s*\(", text) is not None
