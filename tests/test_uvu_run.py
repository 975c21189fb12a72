"""A uvu project run in a real sandbox container and judged by test id, though uvu writes no
report: our preloaded reporter does (sandbox/ecosystems/node/worker_uvu_reporter.cjs). Its
baseline, a fix, and code under test that prints uvu's pass lines and writes a report of its
own.

uvu and its dependencies are the npm packages of the suite's registry storage
(tests/.npm-storage, tests/npm-packages.txt), unpacked into the project's node_modules; the
image is worker-sandbox:node22 (Node 22.12: ES test files go through module.register)."""

from __future__ import annotations

import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from policies.limits import Limits
from sandbox.ecosystems import language_paths
from sandbox.session import BoxSpec, SandboxSession, open_session
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge
from tests.conftest import git
from tests.npm_registry import STORAGE, storage_ready

pytestmark = pytest.mark.docker

#: uvu 0.5.6 and what it depends on, as npm would install them.
PACKAGES = {
    "uvu": "0.5.6",
    "dequal": "2.0.3",
    "diff": "5.2.2",
    "kleur": "4.1.5",
    "sade": "1.8.1",
    "mri": "1.2.0",
}
MEAN_BUG = "exports.mean = (xs) => xs.reduce((a, b) => a + b, 0) / (xs.length + 1)\n"
MEAN_FIX = "exports.mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length\n"
PROJECT = {
    "package.json": '{"name": "stats", "scripts": {"test": "uvu test"}}\n',
    "src/mean.js": MEAN_BUG,
    "src/sum.mjs": "export const sum = (xs) => xs.reduce((a, b) => a + b, 0)\n",
    "test/mean.test.js": (
        "const { suite, test } = require('uvu')\n"
        "const assert = require('uvu/assert')\n"
        "const { mean } = require('../src/mean.js')\n"
        "const Mean = suite('mean')\n"
        "Mean('of one number', () => assert.is(mean([4]), 4))\n"
        "Mean('of two numbers', () => assert.is(mean([1, 3]), 2))\n"
        "Mean.skip('of nothing', () => {})\n"
        "Mean.run()\n"
        'test("the run token is not in a test\'s environment", () => {\n'
        "  assert.is(process.env.WORKER_RUN_TOKEN, undefined)\n"
        "})\n"
        "test.run()\n"
    ),
    # uvu runs no test of a suite whose `before` hook threw, and says nothing of it (exit 0).
    "test/ready.test.js": (
        "const { suite } = require('uvu')\n"
        "const { mean } = require('../src/mean.js')\n"
        "const Ready = suite('ready')\n"
        "Ready.before(() => { if (mean([2]) !== 2) throw new Error('mean is broken') })\n"
        "Ready('runs after its before hook', () => {})\n"
        "Ready.run()\n"
    ),
    # A loader of its own (`uvu -r esm`'s) resolves uvu and loads it by path, past Module._load's
    # 'uvu': the exports it gets are uvu's own, changed in place.
    "test/path.test.js": (
        "const { suite } = require(require.resolve('uvu'))\n"
        "const Path = suite('by path')\n"
        "Path('is seen', () => {})\n"
        "Path.run()\n"
    ),
    "test/sum.test.mjs": (
        "import { suite } from 'uvu'\n"
        "import * as assert from 'uvu/assert'\n"
        "import { sum } from '../src/sum.mjs'\n"
        "const Sum = suite('sum')\n"
        "let ready = false\n"
        "Sum.before.each(() => { ready = true })\n"
        "Sum('adds', () => assert.is(ready && sum([1, 2]), 3))\n"
        "Sum.run()\n"
    ),
}
FAILING = [
    "test/mean.test.js::mean > of one number",
    "test/mean.test.js::mean > of two numbers",
    "test/ready.test.js::ready > runs after its before hook",
]
# Code under test that wants the green light without a fix: it prints uvu's own pass lines,
# finds the report's path in its shell's command line and writes a report there where every
# test passed (it has no token: the environment it sees holds none), and keeps the bug.
FORGER = """\
const fs = require('node:fs')
const shell = fs.readFileSync(`/proc/${process.ppid}/cmdline`, 'utf8')
const report = /\\/tmp\\/worker-report-[0-9a-f]+/.exec(shell)[0]
const ids = ['test/mean.test.js::mean > of one number', 'test/mean.test.js::mean > of two numbers',
  'test/ready.test.js::ready > runs after its before hook', 'forged::marker']
fs.writeFileSync(report, '<testsuites><testsuite name="uvu"><properties><property ' +
  `name="worker_run_token" value="${process.env.WORKER_RUN_TOKEN || ''}"/></properties>` +
  ids.map((i) => `<testcase nodeid="${i}" name="x"/>`).join('') + '</testsuite></testsuites>')
process.stdout.write(' mean  • •   (2 / 2)\\n\\n  Total:     5\\n  Passed:    5\\n')
"""


def install_from_storage(tree: Path) -> None:
    """PACKAGES unpacked into `tree`/node_modules from the registry's storage, with uvu's bin."""
    storage_ready()
    modules = tree / "node_modules"
    for name, version in PACKAGES.items():
        with tarfile.open(STORAGE / name / f"{name}-{version}.tgz") as tgz:
            tgz.extractall(modules / ".unpack", filter="data")
        shutil.move(modules / ".unpack" / "package", modules / name)
    (modules / ".unpack").rmdir()
    (modules / ".bin").mkdir()
    os.symlink("../uvu/bin.js", modules / ".bin" / "uvu")


@pytest.fixture
def sandbox(docker_client, node_image, make_repo, tmp_path) -> Iterator[SandboxSession]:
    repo = make_repo(PROJECT, commit=False)
    install_from_storage(repo)
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


def run(session: SandboxSession):
    return run_tests(session.box, test_cmd="npm test")


def test_the_baseline_names_uvu_s_failing_tests_by_id_and_a_fix_is_verified(sandbox):
    baseline = run(sandbox)
    assert baseline.summary is not None, baseline.render()
    assert dict(baseline.summary.outcomes) == {
        "test/mean.test.js::mean > of one number": "failed",
        "test/mean.test.js::mean > of two numbers": "failed",
        "test/mean.test.js::mean > of nothing": "skipped",
        "test/mean.test.js::the run token is not in a test's environment": "passed",
        "test/path.test.js::by path > is seen": "passed",
        "test/ready.test.js::ready > runs after its before hook": "error",
        "test/sum.test.mjs::sum > adds": "passed",  # an ES module's suite, a hook before it
    }
    assert baseline.summary.failing_ids() == FAILING
    messages = {f.test_id: f.message for f in baseline.summary.failures}
    assert "Expected values to be strictly equal" in messages[FAILING[0]]
    assert messages[FAILING[2]] == "did not run: a before hook threw: mean is broken"
    assert "(0 / 2)" in baseline.result.output  # uvu still prints its own lines
    assert not baseline.passed

    (sandbox.workspace.path / "src/mean.js").write_text(MEAN_FIX)
    fixed = run(sandbox)
    verdict = judge(fixed, baseline=baseline)
    assert verdict.passed and verdict.rule == "junit", verdict.describe()
    assert "uvu JUnit" in verdict.describe()


def test_printed_passes_and_a_report_written_by_the_code_under_test_are_not_a_pass(sandbox):
    baseline = run(sandbox)
    (sandbox.workspace.path / "src/mean.js").write_text(FORGER + MEAN_BUG)
    tricked = run(sandbox)
    assert "Passed:    5" in tricked.result.output  # what it printed was printed...
    verdict = judge(tricked, baseline=baseline)
    assert not verdict.passed  # ...and the report, written over its own at exit, says failed
    assert tricked.summary is not None and "forged::marker" not in tricked.summary.outcomes
    assert tricked.summary.failing_ids() == FAILING

    # Code under test that ends the process at import, before any test ran: uvu exits 0.
    (sandbox.workspace.path / "src/mean.js").write_text("process.exit(0)\n" + MEAN_BUG)
    quit_early = run(sandbox)
    assert quit_early.result.exit_code == 0
    verdict = judge(quit_early, baseline=baseline)
    assert not verdict.passed
    assert f"{FAILING[0]} failed at baseline and did not run now" in verdict.reasons
