"""bench/node_host.py, the host side of the JS corpus and task baselines: each runner asked for
the report the sandbox reads, twice in one script when it runs twice, and a real `node --test`
run on the host named by the sandbox's ids (`file::suite > test`)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"


def load():
    spec = importlib.util.spec_from_file_location("node_host", BENCH / "node_host.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["node_host"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_mocha_before_9_1_writes_xunit(tmp_path):
    node_host = load()
    (tmp_path / "node_modules" / "mocha").mkdir(parents=True)
    manifest = tmp_path / "node_modules" / "mocha" / "package.json"
    manifest.write_text('{"version": "8.4.0"}')
    assert node_host.report_flags("mocha", Path("/r.xml"), tree=tmp_path) == (
        "--reporter xunit --reporter-option output=/r.xml",
        "mocha-xunit",
    )
    manifest.write_text('{"version": "10.2.0"}')
    assert node_host.report_flags("mocha", Path("/r.json"), tree=tmp_path)[1] == "mocha-json"


def test_a_runner_run_twice_writes_two_reports():
    node_host = load()
    command, files, fmt = node_host.instrument(
        "vitest run {report_flags} && vitest --typecheck.only {report_flags}",
        "vitest",
        Path("/tmp/r.xml"),
        tree=Path("/nowhere"),
    )
    assert files == [Path("/tmp/r-0.xml"), Path("/tmp/r-1.xml")] and fmt == "vitest-junit"
    assert "--outputFile.junit=/tmp/r-0.xml && vitest --typecheck.only" in command
    assert command.endswith("--outputFile.junit=/tmp/r-1.xml")


def test_ava_reports_its_stdout_and_uvu_and_tape_take_the_preloaded_reporter():
    node_host = load()
    command, files, fmt = node_host.instrument(
        "npx xo && npx ava {report_flags} && npx tsd", "ava", Path("/tmp/r.tap"), tree=Path("/")
    )
    assert command == "npx xo && npx ava --tap > /tmp/r-0.tap && npx tsd" and fmt == "ava-tap"
    flags, fmt = node_host.report_flags("tape", Path("/tmp/t"), tree=Path("/"))
    assert fmt == "tape-junit" and "WORKER_TAPE_REPORT=/tmp/t " in flags
    assert f'--require={BENCH.parent}/sandbox/ecosystems/node/worker_tape_reporter.cjs"' in flags
    command, files, fmt = node_host.instrument(
        "{report_flags} npx uvu test", "uvu", Path("/tmp/u.xml"), tree=Path("/")
    )
    # The sandbox's own reporter, its token and report path for the uvu command alone.
    assert fmt == "uvu-junit" and command.endswith(" npx uvu test")
    assert f'--require={BENCH.parent}/sandbox/ecosystems/node/worker_uvu_reporter.cjs"' in command
    assert "WORKER_UVU_REPORT=/tmp/u-0.xml" in command and "WORKER_RUN_TOKEN=" in command


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node on the host")
def test_node_test_run_names_each_test_by_file_and_suite(tmp_path):
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "a.test.mjs").write_text(
        "import { describe, it } from 'node:test'\n"
        "import assert from 'node:assert'\n"
        "describe('sum', () => {\n"
        "  it('adds', () => assert.equal(1 + 1, 2))\n"
        "  it('fails', () => assert.equal(1 + 1, 3))\n"
        "  it.skip('later', () => {})\n"
        "})\n"
        "// Its error reaches the reporter as an object String() throws on (not an Error).\n"
        "it('shares', () => assert.deepStrictEqual({ b: new SharedArrayBuffer(8) }, []))\n",
        encoding="utf-8",
    )
    (tmp_path / "test" / "b.test.mjs").write_text("throw new Error('at import')\n")
    node_host = load()
    log_path = tmp_path / "run.log"
    with log_path.open("w", encoding="utf-8") as log:
        run = node_host.run_tests(
            tmp_path, runner="node-test", report_cmd="node --test {report_flags}",
            env={"PATH": str(Path(shutil.which("node") or "").parent)}, log=log, timeout_s=60,
            report=tmp_path / "report.xml", plain_cmd="node --test",
        )  # fmt: skip
    assert run.problem is None, log_path.read_text()
    assert run.outcomes == {
        "test/a.test.mjs::sum > adds": "passed",
        "test/a.test.mjs::sum > fails": "failed",
        "test/a.test.mjs::sum > later": "skipped",
        "test/a.test.mjs::shares": "failed",
        "test/b.test.mjs": "error",
    }
    assert run.exit_code == run.plain_exit_code == 1
    assert run.failing() == [
        "test/a.test.mjs::shares",
        "test/a.test.mjs::sum > fails",
        "test/b.test.mjs",
    ]
