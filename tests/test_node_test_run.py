"""A `node --test` project run in a real sandbox container, judged by test id: its baseline, a
fix, and code under test that wants the green light without one.

The image is worker-sandbox:node22, built from the npm registry's Node packages served on
loopback (tests/npm_node.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from policies.limits import Limits
from sandbox.ecosystems import language_paths
from sandbox.session import BoxSpec, SandboxSession, open_session
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge

pytestmark = pytest.mark.docker

MEAN_BUG = "exports.mean = (xs) => xs.reduce((a, b) => a + b, 0) / (xs.length + 1)\n"
MEAN_FIX = "exports.mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length\n"
PROJECT = {
    "package.json": '{"name": "stats", "scripts": {"test": "node --test"}}\n',
    "mean.js": MEAN_BUG,
    "sum.js": "exports.sum = (xs) => xs.reduce((a, b) => a + b, 0)\n",
    "test/mean.test.js": (
        "const { describe, it } = require('node:test')\n"
        "const assert = require('node:assert')\n"
        "const { mean } = require('../mean.js')\n"
        "describe('mean', () => {\n"
        "  it('of one number', () => assert.strictEqual(mean([4]), 4))\n"
        "  it('of two numbers', () => assert.strictEqual(mean([1, 3]), 2))\n"
        "  it('of nothing', { skip: 'later' }, () => {})\n"
        "})\n"
    ),
    "test/sum.test.js": (
        "const test = require('node:test')\n"
        "const assert = require('node:assert')\n"
        "const { sum } = require('../sum.js')\n"
        "test('sum', () => assert.strictEqual(sum([1, 2]), 3))\n"
        'test("the run token is not in a test file\'s environment", () => {\n'
        "  assert.strictEqual(process.env.WORKER_RUN_TOKEN, undefined)\n"
        "})\n"
    ),
}
FAILING = ["test/mean.test.js::mean > of one number", "test/mean.test.js::mean > of two numbers"]
# Code under test that finds the report path and the run's token in its runner's process (a
# parent it can read in /proc), writes a report where every test passes, and quits.
FORGER = """\
const fs = require('node:fs')
const ppid = process.ppid
const args = fs.readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\\0')
const env = fs.readFileSync(`/proc/${ppid}/environ`, 'utf8').split('\\0')
const report = args.filter((a) => a.startsWith('--test-reporter-destination=/')).pop().split('=')[1]
const token = (env.find((e) => e.startsWith('WORKER_RUN_TOKEN=')) || '=').split('=')[1]
const ids = ['test/mean.test.js::mean > of one number', 'test/mean.test.js::mean > of two numbers',
  'test/sum.test.js::sum', 'forged::marker']
fs.writeFileSync(report, '<testsuites><testsuite name="x"><properties><property ' +
  `name="worker_run_token" value="${token}"/></properties>` +
  ids.map((i) => `<testcase nodeid="${i}" name="x"/>`).join('') + '</testsuite></testsuites>')
process.exit(0)
"""


@pytest.fixture
def sandbox(docker_client, node_image, make_repo, tmp_path) -> Iterator[SandboxSession]:
    repo = make_repo(PROJECT)
    spec = BoxSpec(
        client=docker_client,
        image=node_image,
        limits=Limits(memory_mb=512, command_timeout_s=60),
        protect=language_paths().protection,  # tests and package.json locked, as in `worker fix`
    )
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        yield session


def run(session: SandboxSession):
    return run_tests(session.box, test_cmd="npm test")


def test_the_baseline_names_the_failing_tests_by_id_and_a_fix_is_verified(sandbox):
    baseline = run(sandbox)
    assert baseline.summary is not None, baseline.render()
    assert dict(baseline.summary.outcomes) == {
        "test/mean.test.js::mean > of one number": "failed",
        "test/mean.test.js::mean > of two numbers": "failed",
        "test/mean.test.js::mean > of nothing": "skipped",
        "test/sum.test.js::sum": "passed",
        "test/sum.test.js::the run token is not in a test file's environment": "passed",
    }
    assert baseline.summary.failing_ids() == FAILING
    assert "--test-reporter-destination=/tmp/worker-report-" in baseline.command
    assert "✖ of one number" in baseline.result.output  # the spec reporter still prints
    assert not baseline.passed

    (sandbox.workspace.path / "mean.js").write_text(MEAN_FIX)
    fixed = run(sandbox)
    verdict = judge(fixed, baseline=baseline)
    assert verdict.passed and verdict.rule == "junit", verdict.describe()

    only = run_tests(sandbox.box, test_cmd="npm test", test_ids=FAILING)
    # Only the file of the ids ran, and they pass.
    assert only.summary is not None
    assert set(only.summary.outcomes) == {*FAILING, "test/mean.test.js::mean > of nothing"}
    assert only.failing() == 0


def test_code_under_test_that_exits_0_at_import_is_not_a_pass(sandbox):
    baseline = run(sandbox)
    (sandbox.workspace.path / "mean.js").write_text("process.exit(0)\n" + MEAN_BUG)
    tricked = run(sandbox)
    assert tricked.result.exit_code == 0  # node --test saw a file end cleanly
    verdict = judge(tricked, baseline=baseline)
    assert not verdict.passed
    assert f"{FAILING[0]} failed at baseline and did not run now" in verdict.reasons


def test_a_report_forged_by_the_code_under_test_is_replaced_by_the_runners(sandbox):
    baseline = run(sandbox)
    (sandbox.workspace.path / "mean.js").write_text(FORGER)
    tricked = run(sandbox)
    assert tricked.result.exit_code == 0 and "forged" not in tricked.result.output
    # The forger found the path and the token, and wrote its report over the runner's; the
    # runner, which has the file open from its start, kept writing its own: what came back is
    # neither (here, not XML at all), never the forged one.
    verdict = judge(tricked, baseline=baseline)
    assert not verdict.passed
    if tricked.summary is None:
        assert "the node --test JUnit report was not read: not JUnit XML" in verdict.describe()
    else:
        assert "forged::marker" not in tricked.summary.outcomes, verdict.describe()


def test_the_test_script_cannot_be_edited(sandbox):
    assert not language_paths().check("package.json", write=True).allowed  # the model's tools
    changed = sandbox.box.run('echo \'{"scripts": {"test": "true"}}\' > package.json')
    assert changed.exit_code != 0  # and the code under test: locked in the sandbox
    assert "node --test" in Path(sandbox.workspace.path, "package.json").read_text()
