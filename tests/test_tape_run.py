"""A tape project run in a real sandbox container and judged by test id, each id with its file,
though tape's TAP names none: our preloaded reporter writes the report
(sandbox/ecosystems/node/worker_tape_reporter.cjs). Its baseline, a run of one failing test's id
(its file alone), code under test that prints tape's pass lines and writes a report of its own,
and a fix.

tape 5.10.2 and its dependencies are installed by npm from verdaccio serving the suite's
registry storage (tests/npm-packages.txt lists tape) on Docker's default bridge; the image is
worker-sandbox:node22."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from policies.limits import Limits
from sandbox.ecosystems import language_paths
from sandbox.session import BoxSpec, SandboxSession, open_session
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge
from tests.conftest import git
from tests.npm_registry import npm_registry
from tests.pkg_index import TEST_LABEL

pytestmark = pytest.mark.docker

MEAN_BUG = "exports.mean = (xs) => xs.reduce((a, b) => a + b, 0) / (xs.length + 1)\n"
MEAN_FIX = "exports.mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length\n"
PROJECT = {
    "package.json": json.dumps(
        {
            "name": "stats",
            "scripts": {"test": "tape 'test/**/*.{js,mjs}' | tap-spec"},
            "devDependencies": {"tape": "5.10.2"},
        }
    ),
    "src/mean.js": MEAN_BUG,
    "test/mean.test.js": (
        "const test = require('tape')\n"
        "const { mean } = require('../src/mean.js')\n"
        "test('mean', (t) => {\n"
        "  t.equal(mean([4]), 4)\n"
        "  t.test('of two', (st) => { st.equal(mean([1, 3]), 2); st.end() })\n"
        "  t.end()\n"
        "})\n"
        "test('a todo', { todo: true }, (t) => { t.fail('not yet'); t.end() })\n"
    ),
    # The same test name in another file, registered through a helper: a test of that file.
    "test/helper.js": (
        "const test = require('tape')\n"
        "module.exports = (name, check) => test(name, (t) => { t.ok(check()); t.end() })\n"
    ),
    "test/other.test.js": "require('./helper')('mean', () => true)\n",
    "test/sum.test.mjs": (
        "import test from 'tape'\n"
        "test('sum', (t) => { t.equal([1, 2].reduce((a, b) => a + b), 3); t.end() })\n"
        "test('the run token is not in a test\\'s environment', (t) => {\n"
        "  t.equal(process.env.WORKER_RUN_TOKEN, undefined); t.end()\n"
        "})\n"
    ),
}
FAILING = ["test/mean.test.js::mean", "test/mean.test.js::mean > of two"]
# Code under test that wants the green light without a fix: it prints tape's own pass lines,
# writes a report where every test passed at the path in its shell's command line (it has no
# token: the environment it sees holds none), and keeps the bug.
FORGER = """\
const fs = require('node:fs')
const shell = fs.readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8')
const found = /\\/tmp\\/worker-report-[0-9a-f]+/.exec(shell)
const ids = ['test/mean.test.js::mean', 'test/mean.test.js::mean > of two', 'forged::marker']
if (found) fs.writeFileSync(found[0], '<testsuites><testsuite name="tape">' +
  ids.map((i) => `<testcase nodeid="${i}" name="x"/>`).join('') + '</testsuite></testsuites>')
process.stdout.write('ok 1 mean\\nok 2 of two\\n\\n1..2\\n# tests 2\\n# pass  2\\n\\n# ok\\n')
"""


def npm_install(docker_client, node_image: str, repo: Path) -> None:
    """`npm install` of the project's devDependencies, from verdaccio on the default bridge."""
    with npm_registry(docker_client, image=node_image, network="bridge") as served:
        served.container.reload()  # the default bridge has no names: its address
        ip = served.container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
        registry = dataclasses.replace(served, host=ip)
        docker_client.containers.run(
            node_image,
            ["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
             f"--registry={registry.url}"],
            network="bridge", remove=True, user="0:0", working_dir="/p",
            environment={"HOME": "/tmp", "npm_config_update_notifier": "false"},
            volumes={str(repo): {"bind": "/p", "mode": "rw"}}, labels={TEST_LABEL: "1"},
        )  # fmt: skip


def open_project(
    docker_client, node_image: str, make_repo, tmp_path: Path, files: dict[str, str]
) -> Iterator[SandboxSession]:
    """`files` installed and committed (node_modules too), then a session on them."""
    repo = make_repo(files, commit=False)
    npm_install(docker_client, node_image, repo)
    git(repo, "add", "-A", "-f")
    git(repo, "commit", "-q", "-m", "initial")
    spec = BoxSpec(
        client=docker_client,
        image=node_image,
        limits=Limits(memory_mb=512, command_timeout_s=60),
        protect=language_paths().protection,  # tests and package.json locked, as in `worker fix`
    )
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        yield session


@pytest.fixture
def sandbox(docker_client, node_image, make_repo, tmp_path) -> Iterator[SandboxSession]:
    yield from open_project(docker_client, node_image, make_repo, tmp_path, PROJECT)


def run(session: SandboxSession, ids: list[str] | None = None):
    return run_tests(session.box, test_cmd="npm test", test_ids=ids or [])


def test_tape_s_ids_have_their_file_printed_passes_are_not_a_pass_and_a_fix_is(sandbox):
    baseline = run(sandbox)
    assert baseline.summary is not None, baseline.render()
    assert dict(baseline.summary.outcomes) == {
        "test/mean.test.js::mean": "failed",
        "test/mean.test.js::mean > of two": "failed",
        "test/mean.test.js::a todo": "skipped",
        "test/other.test.js::mean": "passed",  # the same name, its own file: not a failure
        "test/sum.test.mjs::sum": "passed",  # an ES test file
        "test/sum.test.mjs::the run token is not in a test's environment": "passed",
    }
    assert baseline.summary.failing_ids() == FAILING
    messages = {f.test_id: f.message for f in baseline.summary.failures}
    assert messages[FAILING[0]] == "should be strictly equal"
    assert "# fail  2" in baseline.result.output  # tape still prints its own TAP

    # One failing test by id: its file alone runs (tape selects no test by name).
    alone = run(sandbox, [FAILING[1]])
    assert alone.summary is not None, alone.render()
    assert sorted(alone.summary.outcomes) == sorted(FAILING + ["test/mean.test.js::a todo"])

    # Printed passes and a report written by the code under test are not a pass.
    (sandbox.workspace.path / "src/mean.js").write_text(FORGER + MEAN_BUG)
    tricked = run(sandbox)
    assert "# pass  2" in tricked.result.output  # what it printed was printed...
    verdict = judge(tricked, baseline=baseline)
    assert not verdict.passed  # ...and the report, written over its own at exit, says failed
    assert tricked.summary is not None and "forged::marker" not in tricked.summary.outcomes
    assert tricked.summary.failing_ids() == FAILING
    # Code under test that ends the process at import, before any test ran: exit 0.
    (sandbox.workspace.path / "src/mean.js").write_text("process.exit(0)\n" + MEAN_BUG)
    quit_early = run(sandbox)
    assert quit_early.result.exit_code == 0
    verdict = judge(quit_early, baseline=baseline)
    assert not verdict.passed
    assert f"{FAILING[0]} failed at baseline and did not run now" in verdict.reasons

    (sandbox.workspace.path / "src/mean.js").write_text(MEAN_FIX)
    fixed = run(sandbox)
    verdict = judge(fixed, baseline=baseline)
    assert verdict.passed and verdict.rule == "junit", verdict.describe()
    assert "tape JUnit" in verdict.describe()


@pytest.fixture
def nyc_sandbox(docker_client, node_image, make_repo, tmp_path) -> Iterator[SandboxSession]:
    """The project's tests run by `nyc tape`, nyc 10.3.2: its spawn-wrap starts tape's bin in a
    process whose first main is a shim, the bin run later by `Module.runMain`."""
    manifest = json.loads(PROJECT["package.json"])
    manifest["scripts"]["test"] = "nyc --reporter=text tape 'test/**/*.{js,mjs}'"
    manifest["devDependencies"]["nyc"] = "10.3.2"
    files = {**PROJECT, "package.json": json.dumps(manifest)}
    yield from open_project(docker_client, node_image, make_repo, tmp_path, files)


def test_tape_under_nyc_s_spawn_wrap_is_judged_by_id_and_a_fix_passes(nyc_sandbox):
    baseline = run(nyc_sandbox)
    assert baseline.summary is not None, baseline.render()
    assert baseline.summary.failing_ids() == FAILING
    outcomes = dict(baseline.summary.outcomes)
    # The token was taken out before the test files loaded, in the process nyc started too.
    assert outcomes["test/sum.test.mjs::the run token is not in a test's environment"] == "passed"
    assert outcomes["test/other.test.js::mean"] == "passed"
    assert "All files" in baseline.result.output  # nyc's own coverage table: nyc ran it

    (nyc_sandbox.workspace.path / "src/mean.js").write_text(MEAN_FIX)
    fixed = run(nyc_sandbox)
    verdict = judge(fixed, baseline=baseline)
    assert verdict.passed and verdict.rule == "junit", verdict.describe()
