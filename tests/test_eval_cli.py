"""`worker eval` end to end: the real CLI, one `worker fix` process per task against a scripted
OpenAI-compatible server, real sandboxes, and the independent re-check on a clean copy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import git, worker_containers
from worker.llm.scripted_server import ScriptedServer, tool_call

pytestmark = pytest.mark.docker

MEAN_BUG = {
    "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    "tests/test_calc.py": (
        "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4]) == 3\n"
    ),
    "conftest.py": "",
}
MEAN_FIX = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""
# A run allowed to edit tests "fixes" this by rewriting the test: never resolved by the eval.
CHEAT = """\
--- a/tests/test_calc.py
+++ b/tests/test_calc.py
@@ -4,2 +4,2 @@ from calc import mean
 def test_mean():
-    assert mean([2, 4]) == 3
+    assert mean([2, 4]) == 6
"""


def run_eval(
    tasks: Path, out: Path, *extra: str, base_url: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    env.pop("OPENAI_BASE_URL", None)
    command = [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(out)]
    command += ["--model", "scripted", "--base-url", base_url, "--max-steps", "1", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=400, env=env)


@pytest.fixture
def task_file(make_repo, tmp_path: Path) -> Path:
    """Three tasks: one the script fixes, one (a git URL at a commit) it does not, and one
    whose only 'fix' edits the test (its repository lets runs edit tests)."""
    make_repo(MEAN_BUG, name="fixable")
    moved = make_repo(MEAN_BUG, name="moved")
    buggy = git(moved, "rev-parse", "HEAD").strip()
    (moved / "calc.py").write_text("def mean(values):\n    return 0\n")  # HEAD moves on
    git(moved, "commit", "-qam", "later")
    make_repo({**MEAN_BUG, "worker.toml": "[paths]\nallow_edit_tests = true\n"}, name="cheat")
    lines = [
        {"id": "fixable", "repo": "fixable", "fail_to_pass": ["tests/test_calc.py::test_mean"]},
        {"id": "moved", "repo": f"file://{moved}", "commit": buggy},
        {"id": "cheat", "repo": "cheat", "goal": "make test_mean pass"},
    ]
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_eval_rechecks_resumes_redoes_and_stops_on_its_budget(task_file, tmp_path):
    out = tmp_path / "eval"
    script = [
        tool_call("apply_patch", {"patch": MEAN_FIX}),  # fixable
        tool_call("read_file", {"path": "calc.py"}),  # moved: one step, then the budget
        tool_call("apply_patch", {"patch": CHEAT}),  # cheat
    ]
    with ScriptedServer(script=script) as server:
        proc = run_eval(task_file, out, base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    results = json.loads((out / "results.json").read_text())
    rows = {row["id"]: row for row in results["tasks"]}
    assert rows["fixable"]["resolved"] is True and rows["fixable"]["status"] == "fixed"
    assert rows["fixable"]["recheck"]["outcomes"] == {"tests/test_calc.py::test_mean": "passed"}
    assert rows["moved"]["resolved"] is False and rows["moved"]["status"] == "not_fixed"
    # The clone is at the task's commit (the bug), not at the repository's later HEAD.
    assert "len(values) - 1" in (out / "repos" / "moved" / "calc.py").read_text()
    # The fix run itself calls the test edit a fix; the eval's re-check does not.
    assert rows["cheat"]["status"] == "fixed" and rows["cheat"]["resolved"] is False
    assert "touches a test file: tests/test_calc.py" in rows["cheat"]["recheck"]["reasons"][0]
    summary = results["summary"]
    assert (summary["ran"], summary["resolved"], summary["resolve_rate"]) == (3, 1, 0.3333)
    assert summary["statuses"] == {"fixed": 2, "not_fixed": 1}
    preds = json.loads((out / "preds.json").read_text())
    assert [p["instance_id"] for p in preds] == ["fixable", "moved", "cheat"]
    assert "+    return sum(values) / len(values)" in preds[0]["model_patch"]
    assert preds[1]["model_patch"] == "" and preds[0]["model_name_or_path"] == "scripted"
    assert "**Resolved 1 of 3 tasks run** (33%)" in (out / "results.md").read_text()
    assert (out / "tasks" / "fixable" / "fix" / "report.json").is_file()

    # Again: every task is done, so no model call at all (an empty script fails on any).
    with ScriptedServer(script=[]) as server:
        proc = run_eval(task_file, out, base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("done before") == 3
    assert json.loads((out / "results.json").read_text())["summary"]["resolved"] == 1

    # --redo with a token budget of 1: the first task runs again, then no new task starts.
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": MEAN_FIX})]) as server:
        proc = run_eval(
            task_file, out, "--redo", "--max-total-tokens", "1", base_url=server.base_url
        )
        server.assert_all_used()
    assert proc.returncode == 1, proc.stderr
    assert "token budget is spent" in proc.stderr
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert (summary["ran"], summary["not_run"], summary["resolved"]) == (1, 2, 1)
    assert "token budget" in summary["stopped"]


def test_a_bad_task_file_is_a_usage_error_naming_the_line(tmp_path):
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "repo": "nowhere"}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert f"{tasks}:1: task a: repository not found" in proc.stderr
    assert not (tmp_path / "o").exists()


def test_sigterm_ends_the_fix_runs_and_keeps_the_results(make_repo, tmp_path, docker_client):
    make_repo(MEAN_BUG, name="slow")
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "slow", "repo": "slow"}) + "\n")
    out = tmp_path / "eval"
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    env.pop("OPENAI_BASE_URL", None)
    with ScriptedServer(script=[{"delay": 60.0}]) as server:
        command = [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(out)]
        command += ["--model", "scripted", "--base-url", server.base_url]
        proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        try:
            deadline = time.monotonic() + 120
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.2)  # wait until the fix run is inside its model call
            assert server.requests, "the fix run never called the model"
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=90) == 130
        finally:
            if proc.poll() is None:
                proc.kill()
    # No container is left whose worker is gone (the eval's fix runs all ended with it; live
    # workers elsewhere on this daemon keep theirs).
    orphans = [
        c
        for c in worker_containers(docker_client)
        if not psutil.pid_exists(int(c.labels.get("worker.pid", "0")))
    ]
    assert not orphans
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert (summary["ran"], summary["not_run"]) == (0, 1)
    assert not (out / "tasks" / "slow" / "result.json").exists()  # a resume runs it again
