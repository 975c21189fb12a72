"""`worker replay` end to end: a `worker fix` run recorded (scripted model, real sandbox), then
replayed from its trace alone: the recorded replies served in order, the tools real, every
observation, test outcome and the verdict compared."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import git
from tests.test_fix_cli import BUGGY, GOOD_PATCH, run_fix
from worker.llm.scripted_server import ScriptedServer, text, tool_call

pytestmark = pytest.mark.docker

SCHEMA = Path(__file__).parents[1] / "worker" / "schemas" / "trace.schema.json"


def record(repo: Path, out: Path, script: list, *flags: str) -> int:
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, out, *flags, base_url=server.base_url)
        server.assert_all_used()
    return proc.returncode


def replay(run_dir: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "worker.cli", "replay", str(run_dir), *flags],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


FIXED = [
    tool_call("read_file", {"path": "calc.py"}),
    tool_call("run_tests", {}),
    tool_call("apply_patch", {"patch": GOOD_PATCH}),
]
BUDGET = [tool_call("read_file", {"path": "calc.py", "start_line": n}) for n in (1, 2)]
CLAIMS = [tool_call("read_file", {"path": "calc.py"}), text("Done."), text("Done, really.")]


@pytest.mark.parametrize(
    ("script", "flags", "code"),
    [(FIXED, (), 0), (BUDGET, ("--max-steps", "2"), 1), (CLAIMS, (), 1)],
    ids=["fixed", "budget", "gave-up"],
)
def test_a_recorded_run_replays_with_no_difference(make_repo, tmp_path, script, flags, code):
    repo = make_repo(BUGGY)
    assert record(repo, tmp_path / "out", script, *flags) == code
    events = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    for event in events:
        validator.validate(event)
    assert events[0]["type"] == "trace" and events[0]["version"] == 1
    assert events[1]["type"] == "run" and len(events[1]["tree"]) == 64
    proc = replay(tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "replay matches the recording" in proc.stdout
    replayed = json.loads((tmp_path / "out" / "replay" / "report.json").read_text())
    assert (
        replayed["status"] == json.loads((tmp_path / "out" / "report.json").read_text())["status"]
    )


def test_a_changed_test_file_is_the_first_difference(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    assert record(repo, tmp_path / "out", FIXED) == 0
    # The same checkout, its test changed: refused as another tree unless --repo says so.
    test = repo / "tests" / "test_calc.py"
    test.write_text(test.read_text().replace("== 4", "== 4.0"))
    git(repo, "commit", "-qam", "the test changed")
    proc = replay(tmp_path / "out")
    assert proc.returncode == 1 and "is not the recorded tree" in proc.stdout, proc.stdout
    assert not (tmp_path / "out" / "replay").exists()  # nothing ran
    other = tmp_path / "other"
    shutil.copytree(repo, other)
    proc = replay(tmp_path / "out", "--repo", str(other))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first = proc.stdout.split("first difference: ", 1)[1]
    # The baseline's headline is the same; read_file too; run_tests shows the changed test.
    assert first.startswith("event 3 (tool_call run_tests, step 2): the observation differs")
    assert "-FAILURE tests/test_calc.py::test_mean: assert 6.0 == 4\n" in first
    assert "+FAILURE tests/test_calc.py::test_mean: assert 6.0 == 4.0\n" in first


def test_an_unversioned_trace_is_refused(tmp_path):
    (tmp_path / "trace.jsonl").write_text('{"type": "tests_before", "t": 1.0}\n')
    proc = replay(tmp_path)
    assert proc.returncode == 2 and "cannot be replayed" in proc.stderr
