"""What CI wrote of a Go build, read into this ecosystem's test ids (`calc::TestAdd/x`,
testjson.py), and whether a test id CI named is in the repository.

CI writes one of three (docs/go-tests.md, "worker ci"):

- `go test -json`'s log itself (`go test -json ./... > go-test.json`): read as a run's report;
- gotestsum's `--junitfile` (gotestsum's internal/junitxml): a <testsuite> per package, named by
  its import path, a <testcase> per test with classname the import path (or as
  `--junitfile-testsuite-name`/`--junitfile-testcase-classname=relative` shorten it: the
  folder) and name the test's (`TestAdd/one_plus_two`); a package whose test binary failed
  outside any test (a build failure, a panic in TestMain) is one failing case named `TestMain`;
- go-junit-report's (`go test -v 2>&1 | go-junit-report`): the same suites, its build failure
  a case named `[build failed]`.

A package's own failure (`TestMain`, a bracketed name, no name) is the package's id, its folder,
as a run's report says it.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from sandbox.ecosystems.go.modules import GoModules
from sandbox.ecosystems.go.testjson import package_folder, parse_go_test_json
from sandbox.testrun.junit import TestIdOf, TestSummary, parse_junit
from sandbox.worktree.repo_files import RepoFiles

MAX_TEST_FILES = 500  # `_test.go` files of one folder searched for a test's function


def read_go_ci_report(
    data: bytes, *, module: str | None, modules: GoModules | None = None
) -> TestSummary:
    """CI's JUnit (gotestsum's, go-junit-report's) or `go test -json` log; ValueError when it
    is neither. `modules`: a repository of several (ids relative to its root)."""
    if data.lstrip()[:1] == b"<":
        return parse_junit(data, test_id=junit_test_id(module, modules=modules))
    return parse_go_test_json(data, module=module, modules=modules)


def junit_test_id(module: str | None, *, modules: GoModules | None = None) -> TestIdOf:
    """A JUnit test case's Go test id, for the module `module` (see the module docstring)."""
    folder = package_folder(module, modules=modules)

    def test_id(case: ET.Element, suites: Sequence[ET.Element]) -> str:
        classname = case.get("classname") or ""
        suite = suites[-1].get("name", "") if suites else ""
        # The suite's name is the package's whole import path in both writers; the classname
        # is gotestsum's, or go-junit-report v1's last element only.
        package = suite if "/" in suite or not classname else classname
        where = folder(package.removeprefix("./")) or "."
        name = case.get("name") or ""
        if not name or name == "TestMain" or name.startswith("["):
            return where
        return f"{where}::{name}"

    return test_id


_TOP = re.compile(r"(Test|Example|Benchmark|Fuzz)\w*")


def has_go_test(files: RepoFiles, test_id: str) -> bool:
    """Is there such a test in the repository? `folder::TestX/sub`: a `_test.go` file of the
    folder declares `func TestX(` (a subtest is made at run time, inside it: its top-level
    test is what can be checked); a package's id, its folder: it holds a Go file."""
    folder, sep, name = test_id.partition("::")
    names = [n for n in files.listed(folder or ".") if n.endswith(".go")]
    if not sep:
        return bool(names)
    top = name.split("/")[0]
    if not _TOP.fullmatch(top):
        return False
    declared = re.compile(rf"^func\s+{re.escape(top)}\s*\(", re.M)
    base = "" if folder in ("", ".") else folder + "/"
    for file in [n for n in names if n.endswith("_test.go")][:MAX_TEST_FILES]:
        text = files.read(base + file)
        if text is not None and declared.search(text):
            return True
    return False
