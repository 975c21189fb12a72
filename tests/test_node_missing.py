"""A package the tests cannot load is the environment's problem, unless the repository defines
it: read from what real runners wrote (tests/data/node_reports/) against real trees."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox.container.results import CommandResult
from sandbox.ecosystems.node.missing import find_missing, missing_packages
from sandbox.ecosystems.node.reports import parse_report
from sandbox.testrun.run import TestRun
from sandbox.worktree.repo_files import RepoFiles

DATA = Path(__file__).parent / "data" / "node_reports"


def run_of(*, report: tuple[str, str] | None = None, output: str = "") -> TestRun:
    summary = None if report is None else parse_report(report[1], (DATA / report[0]).read_bytes())
    result = CommandResult(
        command="npm test",
        exit_code=1,
        duration_s=1.0,
        timed_out=False,
        oom_killed=False,
        output=output,
        output_bytes=len(output),
        truncated=False,
    )
    return TestRun(command="npm test", result=result, summary=summary, expects_junit=True)


def tree(tmp_path: Path, files: dict[str, object]) -> Path:
    for rel, content in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return tmp_path


@pytest.mark.parametrize(
    ("report", "where"),
    [
        (("jest-29.json", "jest-json"), "__tests__/broken.test.js"),
        (("vitest-1.xml", "vitest-junit"), "test/broken.test.js"),  # vite: "Failed to load url"
        (("vitest-4.xml", "vitest-junit"), "test/broken.test.js"),  # ERR_MODULE_NOT_FOUND
        (("node-test-22.xml", "node-test-junit"), "test/broken.test.js"),
    ],
)
def test_a_package_not_installed_is_found_in_each_runners_report(tmp_path, report, where):
    repo = tree(tmp_path, {"package.json": {"name": "demo", "devDependencies": {"jest": "29"}}})
    [missing] = missing_packages(run_of(report=report), repo)
    assert (missing.package, missing.where, missing.declared) == (
        "left-pad-not-installed",
        where,
        False,
    )
    assert "not installed, and package.json does not declare it" in missing.describe()


def test_without_a_report_the_output_says_it(tmp_path):
    """mocha dies of the import before writing any report."""
    output = (DATA / "mocha-11-missing.out").read_text()
    repo = tree(tmp_path, {"package.json": {"devDependencies": {"left-pad-not-installed": "1"}}})
    [missing] = missing_packages(run_of(output=output), repo)
    assert (missing.where, missing.declared) == ("the test command", True)
    assert "declares it, but it is not installed" in missing.describe()


def texts(*lines: str) -> list[tuple[str, str]]:
    return [("t.test.js::x", line) for line in lines]


TSCONFIG = '{\n  // aliases\n  "compilerOptions": {"paths": {"@app/*": ["src/*"],},},\n}'


def test_what_the_repository_defines_is_the_codes_business(tmp_path):
    repo = tree(
        tmp_path,
        {
            "package.json": {"name": "@acme/app", "workspaces": ["packages/*"]},
            "packages/core/package.json": {"name": "@acme/core"},
            "tsconfig.json": TSCONFIG,
            "src/utils/index.js": "",
        },
    )
    found = find_missing(
        texts(
            "Cannot find module '../src/mean' from '__tests__/mean.test.js'",  # a path
            "Cannot find module '/workspace/src/x.js' imported from /workspace/t.js",
            "Cannot find package '@acme/app' imported from /workspace/t.js",  # its own name
            "Cannot find module '@acme/core/dist/index.js'",  # a workspace package
            "Cannot find module '@app/models'",  # a tsconfig alias
            "Cannot find module 'utils/format'",  # a folder of src/ (baseUrl)
            "Cannot find module '#internal/db'",  # a subpath import
            "Cannot find module '@/components/x'",  # not a package name at all
        ),
        RepoFiles(repo),
    )
    assert found == []


def test_jest_module_name_mapper_keys_are_the_repositorys(tmp_path):
    manifest = {"jest": {"moduleNameMapper": {"^shared/(.*)$": "<rootDir>/lib/$1"}}}
    repo = tree(tmp_path, {"package.json": manifest})
    mapped = texts("Cannot find module 'shared/x' from 'a.test.js'")
    assert find_missing(mapped, RepoFiles(repo)) == []
    [scoped] = find_missing(texts("Cannot find module 'lodash/fp'"), RepoFiles(repo))
    assert scoped.package == "lodash"  # a subpath names its package


def test_a_missing_builtin_is_a_node_too_old(tmp_path):
    repo = tree(tmp_path, {"package.json": {"name": "x"}})
    [missing] = find_missing(texts("Error: Cannot find module 'node:test'"), RepoFiles(repo))
    assert missing.builtin and "too old" in missing.describe()


def test_one_entry_per_package_named_by_the_first_test(tmp_path):
    repo = tree(tmp_path, {"package.json": {}})
    found = find_missing(
        [
            ("a.test.js::x", "Cannot find package 'chalk' imported from /w/a.js"),
            ("b.test.js::y", "Cannot find module 'chalk'\nCannot find module '@scope/pkg/sub'"),
        ],
        RepoFiles(repo),
    )
    assert [(m.package, m.where) for m in found] == [
        ("chalk", "a.test.js::x"),
        ("@scope/pkg", "b.test.js::y"),
    ]


def test_a_hostile_package_json_is_no_error(tmp_path):
    for manifest in ("{ not json", '["a"]', '{"workspaces": {"packages": [1, "../../*"]}}'):
        repo = tree(tmp_path, {"package.json": manifest})
        [missing] = find_missing(texts("Cannot find module 'chalk'"), RepoFiles(repo))
        assert missing.package == "chalk"
