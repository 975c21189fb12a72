"""package.json's test script as the sandbox runs it: which runner, the flags that make it write
its own report, the rest of the script left to run as written, and hostile package.json files.
(The commands were run for real with each runner: tests/data/node_reports/make_reports.py.)"""

from __future__ import annotations

import json
import os
import shlex

import pytest

from sandbox.ecosystems.node.runners import (
    NODE_REPORTER,
    NodeTestCommand,
    NoTestScript,
    detect_runner,
    node_invocation,
)
from sandbox.errors import SandboxUsageError
from sandbox.worktree.repo_files import RepoFiles

R = "/tmp/worker-report-0123456789abcdef"


def body(command: str) -> str:
    """The command after our prelude (rm, PATH, root)."""
    return command.split('export WORKER_TEST_ROOT="$PWD"; ', 1)[1]


@pytest.mark.parametrize(
    ("script", "runner"),
    [
        ("vitest", "vitest"),
        ("vitest run --coverage", "vitest"),
        ("jest", "jest"),
        ("cross-env NODE_ENV=test jest --runInBand", "jest"),
        ("NODE_OPTIONS=--experimental-vm-modules npx jest", "jest"),
        ("node --experimental-vm-modules node_modules/jest/bin/jest.js", "jest"),
        ("react-scripts test --watchAll=false", "jest"),
        ("nyc --reporter=lcov mocha 'test/**/*.js'", "mocha"),
        ("c8 --reporter lcov mocha", "mocha"),
        ("node --test", "node-test"),
        ("node --experimental-strip-types --test test/", "node-test"),
        ("tsx --test", "node-test"),
        ("xo && c8 ava", "ava"),
        ("tap", "tap"),
        ("tape test/*.js | tap-spec", "tape"),
        ("uvu -r esm tests", "uvu"),
        ("node test/index.js", "other"),
        ("eslint . --format tap && echo done", "other"),
        ("npm run lint && npm run unit", "mocha"),  # through the scripts it names
    ],
)
def test_the_runner_is_found_in_the_script(script, runner):
    assert detect_runner(script, {"lint": "eslint .", "unit": "mocha test/unit"}) == runner


def test_vitest_gets_its_junit_reporter_and_the_default_one():
    inv = node_invocation("vitest run --reporter=verbose", report_path=R)
    assert body(inv.command) == (
        f"( vitest run --reporter=default --reporter=junit --outputFile.junit={R} )"
    )
    assert (inv.runner, inv.report_format, inv.report_path) == ("vitest", "vitest-junit", R)
    assert inv.command.startswith(f"rm -f {R}; ")  # a stale report is never read
    assert 'export PATH="$PWD/node_modules/.bin:$PATH"' in inv.command  # as npm test does
    assert any("--reporter=verbose" in n for n in inv.notes)


def test_jest_gets_json_right_after_it_and_the_rest_of_the_chain_runs_as_written():
    inv = node_invocation("jest --coverage && tsc --noEmit && tsd", report_path=R)
    want = f"( jest --json --outputFile={R} --coverage && tsc --noEmit && tsd )"
    assert body(inv.command) == want
    assert inv.report_format == "jest-json"


def test_mocha_gets_json_to_the_report_and_its_own_reporter_goes():
    inv = node_invocation("mocha -R dot --reporter-option maxDiff=1 test/", report_path=R)
    assert body(inv.command) == f"( mocha --reporter json --reporter-option output={R} test/ )"
    assert inv.report_format == "mocha-json"


def test_a_mocha_older_than_9_1_writes_xunit_having_no_json_to_a_file(tmp_path):
    (tmp_path / "node_modules" / "mocha").mkdir(parents=True)
    (tmp_path / "node_modules" / "mocha" / "package.json").write_text('{"version": "8.4.0"}')
    (tmp_path / "package.json").write_text('{"scripts": {"test": "mocha"}}')
    inv = NodeTestCommand.of(RepoFiles(tmp_path)).invocation()
    assert f"( mocha --reporter xunit --reporter-option output={inv.report_path} )" in inv.command
    assert inv.report_format == "mocha-xunit"
    newer = node_invocation("mocha", report_path=R, versions={"mocha": "9.1.0"})
    assert newer.report_format == "mocha-json"


@pytest.mark.parametrize(
    ("files", "xunit"),
    [
        # No lockfile: an install gets the newest 8.x (js-yaml's mocha "^8.2.1"); none of 9.
        ({"package.json": {"devDependencies": {"mocha": "^8.2.1"}}}, True),
        ({"package.json": {"devDependencies": {"mocha": "^9.0.0"}}}, False),
        # The lockfile's version wins over the range.
        (
            {
                "package.json": {"devDependencies": {"mocha": ">=8"}},
                "package-lock.json": {"packages": {"node_modules/mocha": {"version": "9.0.3"}}},
            },
            True,
        ),
    ],
)
def test_mocha_s_version_comes_from_the_lockfile_or_the_range_without_node_modules(
    tmp_path, files, xunit
):
    scripts = {"scripts": {"test": "mocha"}}
    for name, data in files.items():
        data = {**scripts, **data} if name == "package.json" else data
        (tmp_path / name).write_text(json.dumps(data))
    inv = NodeTestCommand.of(RepoFiles(tmp_path)).invocation()
    assert inv.report_format == ("mocha-xunit" if xunit else "mocha-json"), inv.command


def test_node_test_gets_our_staged_reporter_and_a_token():
    inv = node_invocation("node --test --test-reporter=dot test/", report_path=R)
    assert body(inv.command) == (
        "( node --test --test-reporter=spec --test-reporter-destination=stdout "
        f'--test-reporter="$WORKER_STAGE/{NODE_REPORTER}" --test-reporter-destination={R} test/ )'
    )
    assert set(inv.staged) == {NODE_REPORTER} and b"worker_run_token" in inv.staged[NODE_REPORTER]
    assert inv.token and inv.env == {"WORKER_RUN_TOKEN": inv.token}
    assert inv.report_format == "node-test-junit"
    again = node_invocation("node --test", report_path=R)
    assert again.token != inv.token  # a fresh token per run


def test_tap_output_of_ava_is_kept_whole_and_tape_s_formatter_pipe_is_dropped():
    ava = node_invocation("ava --verbose", report_path=R)
    assert body(ava.command) == f"( ( ava --verbose --tap > {R}; rc=$?; cat {R}; exit $rc ) )"
    assert ava.report_format == "ava-tap"
    tape = node_invocation("tape test/*.js | tap-spec", report_path=R)
    assert "tap-spec" not in tape.command and any("tap-spec" in n for n in tape.notes)
    tap = node_invocation("tap --disable-coverage", report_path=R)
    assert body(tap.command) == f"( tap --disable-coverage --output-file={R} )"


def test_uvu_gets_our_preloaded_reporter_a_token_and_loses_its_bail():
    inv = node_invocation("c8 uvu -r tsm tests -b", report_path=R)
    preload = "--require=$WORKER_STAGE/worker_uvu_reporter.cjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
    assert body(inv.command) == f'( NODE_OPTIONS="{preload}" c8 uvu -r tsm tests )'
    assert f"rm -f {R}" in inv.command and inv.report_path == R
    assert inv.report_format == "uvu-junit" and inv.runner == "uvu"
    assert inv.token and inv.env == {"WORKER_RUN_TOKEN": inv.token, "WORKER_UVU_REPORT": R}
    assert set(inv.staged) == {"worker_uvu_reporter.cjs"}
    assert b"worker_run_token" in inv.staged["worker_uvu_reporter.cjs"]
    assert any("-b" in n for n in inv.notes)


def test_tape_gets_our_preloaded_reporter_and_a_run_of_ids_is_narrowed_to_their_files():
    inv = node_invocation("nyc tape 'test/**/*.js'", report_path=R)
    preload = "--require=$WORKER_STAGE/worker_tape_reporter.cjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
    assert body(inv.command) == f"( NODE_OPTIONS=\"{preload}\" nyc tape 'test/**/*.js' )"
    assert inv.report_format == "tape-junit" and inv.runner == "tape" and inv.report_path == R
    assert inv.token and inv.env == {"WORKER_RUN_TOKEN": inv.token, "WORKER_TAPE_REPORT": R}
    assert set(inv.staged) == {"worker_tape_reporter.cjs"}
    # Ids carry their file: a run of some is a run of their files (tape selects no test by name).
    ids = ["test/a.test.js::adds > nested", "test/a.test.js::mean"]
    inv = node_invocation("nyc tape 'test/**/*.js'", report_path=R, test_ids=ids)
    assert body(inv.command) == f'( NODE_OPTIONS="{preload}" nyc tape test/a.test.js )'
    assert not any("not narrowed" in n for n in inv.notes)


def test_unknown_runners_and_uvu_with_its_own_node_options_are_judged_by_exit_code():
    for script in (
        "node test/index.js",
        "NODE_OPTIONS=--loader=tsx uvu tests",
        "NODE_OPTIONS=--require=esm tape test/*.js",
    ):
        inv = node_invocation(script, report_path=R)
        assert inv.report_path is None and inv.report_format == "" and inv.token is None
        assert f"rm -f {R}" not in inv.command and body(inv.command) == f"( {script} )"
        assert inv.env == {} and inv.staged == {}
        assert any("exit code" in n for n in inv.notes)


def test_pretest_and_posttest_run_around_it_as_npm_test_runs_them():
    scripts = {"pretest": "npm run build", "build": "tsc", "posttest": "echo done"}
    inv = node_invocation("jest", report_path=R, scripts=scripts)
    assert body(inv.command) == f"( ( tsc ) ) && ( jest --json --outputFile={R} ) && ( echo done )"


def test_scripts_named_by_npm_run_are_expanded_with_their_arguments():
    scripts = {"lint": "eslint .", "test:unit": "vitest run", "pretest:unit": "echo pre"}
    inv = node_invocation(
        "npm run lint && npm run test:unit -- --bail 1", report_path=R, scripts=scripts
    )
    assert body(inv.command) == (
        "( ( eslint . ) && ( ( echo pre ) && ( vitest run --bail 1 "
        f"--reporter=default --reporter=junit --outputFile.junit={R} ) ) )"
    )


def test_a_second_runner_counts_by_its_exit_code():
    inv = node_invocation("mocha test/unit && mocha test/integration", report_path=R)
    assert body(inv.command) == (
        f"( mocha --reporter json --reporter-option output={R} test/unit "
        "&& mocha test/integration )"
    )
    assert any("second test runner" in n for n in inv.notes)


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        # the folder that holds the files asked for goes; the files come last
        ("node --test test/", "node --test {flags} test/a.test.js test/b.test.js"),
        ("mocha 'test/**/*.test.js' --timeout 5000", "mocha {flags} --timeout 5000 {files}"),
        ("vitest run src", "vitest run src {flags} {files}"),  # src does not hold them
        ("tap", "tap {flags} {files}"),
    ],
)
def test_a_run_of_some_ids_is_narrowed_to_their_files(script, expected):
    ids = ["test/a.test.js::suite > x", "test/b.test.js::y", "test/a.test.js::z"]
    inv = node_invocation(script, report_path=R, test_ids=ids)
    runner_flags = {
        "node-test": body(node_invocation("node --test", report_path=R).command)[14:-2],
        "mocha": f"--reporter json --reporter-option output={R}",
        "vitest": f"--reporter=default --reporter=junit --outputFile.junit={R}",
        "tap": f"--output-file={R}",
    }[inv.runner]
    want = expected.format(flags=runner_flags, files="test/a.test.js test/b.test.js")
    assert body(inv.command) == f"( {want} )"


def test_jest_is_narrowed_by_file_paths_as_regular_expressions():
    inv = node_invocation("jest", report_path=R, test_ids=["src/[id].test.ts::page renders"])
    assert body(inv.command).endswith(f"--outputFile={R} 'src/\\[id\\]\\.test\\.ts' )")


def test_runs_of_ava_are_not_narrowed_and_say_so():
    inv = node_invocation("ava", report_path=R, test_ids=["::mean › adds"])
    assert "mean" not in body(inv.command)
    inv = node_invocation("ava", report_path=R, test_ids=["test/x.js::mean › adds"])
    assert any("not narrowed" in n for n in inv.notes)


def test_shell_syntax_of_the_script_survives():
    script = 'FOO="a b" jest "--testPathIgnorePatterns=e2e" $(echo x) 2>&1 && echo "x && y"'
    inv = node_invocation(script, report_path=R)
    assert body(inv.command) == (
        f'( FOO="a b" jest --json --outputFile={R} "--testPathIgnorePatterns=e2e" $(echo x) '
        '2>&1 && echo "x && y" )'
    )
    shlex.split(inv.command)  # still well-formed


def test_the_report_path_must_be_ours():
    with pytest.raises(ValueError):
        node_invocation("jest", report_path="/workspace/report.json; rm -rf /")


def write(tmp_path, manifest):
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (tmp_path / "package.json").write_text(text)
    return RepoFiles(tmp_path)


def test_the_test_script_comes_from_package_json(tmp_path):
    files = write(tmp_path, {"scripts": {"test": "vitest run", "pretest": "tsc"}})
    command = NodeTestCommand.of(files)
    one, two = command.invocation(), command.invocation()
    assert one.runner == "vitest" and "( tsc ) && ( vitest run" in one.command
    assert one.report_path != two.report_path  # random per run: the tests cannot predict it
    assert one.report_path and one.report_path.startswith("/tmp/worker-report-")


@pytest.mark.parametrize(
    "manifest",
    [
        {"name": "x"},
        {"scripts": {"test": 'echo "Error: no test specified" && exit 1'}},  # npm init's
        {"scripts": {"test": "   "}},
        {"scripts": {"test": ["jest"]}},
        {"scripts": "jest"},
        ["not", "an", "object"],
        "{ not json",
    ],
)
def test_no_usable_test_script_is_one_line_for_the_user(tmp_path, manifest):
    files = write(tmp_path, manifest)
    with pytest.raises(NoTestScript) as raised:
        NodeTestCommand.of(files)
    assert isinstance(raised.value, SandboxUsageError)
    assert "\n" not in str(raised.value) and "--test-cmd" in str(raised.value)
    assert str(tmp_path) not in str(raised.value)  # not the sandbox's copy's path


def test_a_package_json_that_is_a_symlink_is_not_read(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"scripts": {"test": "jest"}}))
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(outside, repo / "package.json")
    files = RepoFiles(repo)
    with pytest.raises(NoTestScript):
        NodeTestCommand.of(files)
    assert any("symlink" in n for n in files.notes)
