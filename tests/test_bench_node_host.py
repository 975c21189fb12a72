"""bench/node_host.py, the host side of the JS corpus and task baselines: the runners' reports
read into test ids of the sandbox's scheme (`file::suite > test`), and a real `node --test` run
with bench's reporter."""

from __future__ import annotations

import importlib.util
import json
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


def test_jest_and_vitest_reports_give_ids_counts_and_file_errors():
    report = {
        "testResults": [
            {
                "name": "/repo/tests/colord.test.ts",
                "status": "failed",
                "assertionResults": [
                    {"ancestorTitles": ["Colord", "parse"], "title": "hex", "status": "passed"},
                    {"ancestorTitles": [], "title": "alpha", "status": "failed"},
                    {"ancestorTitles": ["Colord"], "title": "later", "status": "todo"},
                ],
            },
            {"name": "/repo/tests/broken.test.ts", "status": "failed", "assertionResults": []},
        ]
    }
    outcomes, counts = load().read_report("vitest", json.dumps(report), root="/repo")
    assert outcomes == {
        "tests/colord.test.ts::Colord > parse > hex": "passed",
        "tests/colord.test.ts::alpha": "failed",
        "tests/colord.test.ts::Colord > later": "skipped",
        "tests/broken.test.ts": "errors",
    }
    assert counts == {"passed": 1, "failed": 1, "errors": 1, "skipped": 1}


def test_a_runner_run_twice_writes_two_reports():
    node_host = load()
    command, env, files = node_host.instrument(
        "vitest run {report_flags} && vitest --typecheck.only {report_flags}",
        "vitest",
        Path("/tmp/r.json"),
    )
    assert files == [Path("/tmp/r-0.json"), Path("/tmp/r-1.json")]
    assert "--outputFile.json=/tmp/r-0.json && vitest --typecheck.only" in command
    assert command.endswith("--outputFile.json=/tmp/r-1.json") and env == {}


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
        "})\n",
        encoding="utf-8",
    )
    (tmp_path / "test" / "b.test.mjs").write_text("throw new Error('at import')\n")
    node_host = load()
    log_path = tmp_path / "run.log"
    with log_path.open("w", encoding="utf-8") as log:
        run = node_host.run_tests(
            tmp_path, runner="node-test", report_cmd="node --test {report_flags}",
            env={"PATH": str(Path(shutil.which("node") or "").parent)}, log=log, timeout_s=60,
            report=tmp_path / "report.json", plain_cmd="node --test",
        )  # fmt: skip
    assert run.problem is None, log_path.read_text()
    assert run.outcomes == {
        "test/a.test.mjs::sum > adds": "passed",
        "test/a.test.mjs::sum > fails": "failed",
        "test/a.test.mjs::sum > later": "skipped",
        "test/b.test.mjs": "errors",
    }
    assert run.exit_code == run.plain_exit_code == 1
    assert run.failing() == ["test/a.test.mjs::sum > fails", "test/b.test.mjs"]
