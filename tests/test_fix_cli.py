"""`worker fix` end to end: the real CLI, the real openai client, real sandboxes and git repos,
and a scripted OpenAI-compatible server on 127.0.0.1 standing in for the hosted model."""

from __future__ import annotations

import hashlib
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
from worker.llm.scripted_server import ScriptedServer, http_error, text, tool_call

pytestmark = pytest.mark.docker

API_KEY = "sk-test-SECRET-4242"
BUGGY = {
    "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    "tests/test_calc.py": (
        "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n"
    ),
    "conftest.py": "",
}
GOOD_PATCH = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""


def fix_command(
    repo: Path, out: Path, *extra: str, model: str = "scripted", base_url: str | None = None
) -> list[str]:
    """The `worker fix` command line the tests run, as a user would type it."""
    args = [sys.executable, "-m", "worker.cli", "fix", "--repo", str(repo), "--out", str(out)]
    args += ["--model", model, "--quiet", *extra]
    return args + (["--base-url", base_url] if base_url else [])


def fix_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "OPENAI_API_KEY": API_KEY, **extra}
    env.pop("OPENAI_BASE_URL", None)
    return env


def run_fix(
    repo: Path,
    out: Path,
    *extra: str,
    base_url: str | None = None,
    timeout: float = 240,
    env: dict[str, str] | None = None,
    model: str = "scripted",
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        fix_command(repo, out, *extra, model=model, base_url=base_url),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=fix_env(**(env or {})),
    )


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def tree_state(repo: Path) -> dict[str, str]:
    """Every file's bytes (including .git internals), HEAD, branches and status."""
    state = {}
    for path in sorted(repo.rglob("*")):
        if path.is_file():
            state[str(path.relative_to(repo))] = hashlib.sha256(path.read_bytes()).hexdigest()
    state["HEAD"] = git(repo, "rev-parse", "HEAD")
    state["branches"] = git(repo, "branch", "-a")
    state["status"] = git(repo, "status", "--porcelain")
    return state


def test_fix_in_two_steps_verified_and_patch_applies(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    before = tree_state(repo)
    script = [
        tool_call("read_file", {"path": "calc.py"}),
        tool_call("apply_patch", {"patch": GOOD_PATCH}),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert r["tests_before"]["failing"] == ["tests/test_calc.py::test_mean"]
    assert r["steps"] == 2
    patch = (tmp_path / "out" / "fix.patch").read_text()
    assert "+    return sum(values) / len(values)" in patch
    # The user's tree is untouched, and the patch applies to it as it was.
    assert tree_state(repo) == before
    git(repo, "apply", "--check", str(tmp_path / "out" / "fix.patch"))
    # The first request grounds the model in the failing test, with the goal.
    first = server.requests[0]["messages"][1]["content"]
    assert "test_mean" in first and "1 failed" in first
    # The trace has every model call and tool call.
    kinds = [json.loads(line)["type"] for line in (tmp_path / "out" / "trace.jsonl").open()]
    assert kinds.count("model_call") == 2 and kinds.count("tool_call") == 2
    assert "verification" in kinds


def test_api_key_never_reaches_the_sandbox_or_outputs(make_repo, tmp_path):
    files = {
        **BUGGY,
        "tests/test_env.py": (
            "import os\n\ndef test_env():\n    print(dict(os.environ))\n"
            "    assert 'OPENAI_API_KEY' not in os.environ\n"
        ),
    }
    repo = make_repo(files)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert API_KEY not in path.read_text(errors="replace"), path
    assert API_KEY not in proc.stdout + proc.stderr


def test_every_tool_error_is_fed_back_and_recovered_from(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    bad_hunk = GOOD_PATCH.replace("(len(values) - 1)", "(len(vals) - 2)")
    script = [
        tool_call("read_file", "{not json"),  # invalid JSON arguments
        tool_call("open_file", {"path": "calc.py"}),  # no such tool
        tool_call("read_file", {"file": "calc.py"}),  # schema violation
        tool_call("read_file", {"path": "../../etc/passwd"}),  # refused by path policy
        tool_call("apply_patch", {"patch": bad_hunk}),  # does not apply
        tool_call("apply_patch", {"patch": GOOD_PATCH.replace("calc.py", "tests/test_calc.py")}),
        tool_call("apply_patch", {"patch": GOOD_PATCH}),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    calls = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
    observations = [c["observation"] for c in calls if c["type"] == "tool_call"]
    assert "JSON" in observations[0]
    assert "read_file" in observations[1] and "apply_patch" in observations[1]
    assert "path" in observations[2]
    assert not any("root:" in o for o in observations)  # nothing of /etc/passwd came back
    assert [c["ok"] for c in calls if c["type"] == "tool_call"][:6] == [False] * 6
    # Each error went back to the model as the result of its own call.
    last = server.requests[-1]["messages"]
    tool_ids = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    call_ids = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert tool_ids == call_ids[: len(tool_ids)] and len(tool_ids) == 6


def test_false_claim_of_success_is_not_fixed(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    script = [text("I fixed it, all tests pass."), text("Done, really.")]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "not_fixed" and "done twice" in r["reason"]
    # The model was told, once, that the tests still fail.
    told = server.requests[1]["messages"][-1]["content"]
    assert "do not pass" in told and "1 failed" in told
    assert not (tmp_path / "out" / "fix.patch").exists()


def test_repeating_the_same_call_ends_the_run_early(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    script = [tool_call("read_file", {"path": "calc.py"})] * 4 + [
        tool_call("read_file", {"path": "calc.py"})
    ] * 6
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 1, proc.stderr
    assert "repeated" in report(tmp_path / "out")["reason"]
    assert len(server.requests) <= 5  # ended early, not at the step budget
    nudged = server.requests[2]["messages"][-1]["content"]
    assert "same call" in nudged


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--max-steps", "2"], "step"),
        (["--max-tokens", "150"], "token"),
        (["--timeout", "1"], "wall"),
    ],
)
def test_each_budget_ends_the_run(make_repo, tmp_path, flags, words):
    repo = make_repo(BUGGY)
    script = [
        tool_call(
            "read_file",
            {"path": "calc.py", "start_line": n},
            delay=0.6,
            usage={"prompt_tokens": 100, "completion_tokens": 10},
        )
        for n in range(1, 8)
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", *flags, base_url=server.base_url)
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert words in r["reason"].lower()
    assert len(server.requests) <= 3  # overspend is at most one call


def test_cost_cap_with_known_price_ends_the_run(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    script = [
        tool_call(
            "read_file",
            {"path": "calc.py", "start_line": n},
            usage={"prompt_tokens": 400_000, "completion_tokens": 1000},
        )
        for n in range(1, 5)
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--max-cost", "0.5", model="gpt-4o", base_url=server.base_url
        )
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert "cost" in r["reason"].lower() and r["cost_usd"] > 0


def test_cost_cap_for_unknown_price_is_refused(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    proc = run_fix(repo, tmp_path / "out", "--max-cost", "1", base_url="http://127.0.0.1:9/v1")
    assert proc.returncode == 2
    assert "price" in proc.stderr.lower() and len(proc.stderr.strip().splitlines()) == 1


def test_http_500_is_retried_then_fixed(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    script = [http_error(500, "overloaded"), tool_call("apply_patch", {"patch": GOOD_PATCH})]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr


def test_dead_endpoint_is_an_environment_error_in_bounded_time(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    started = time.monotonic()
    proc = run_fix(repo, tmp_path / "out", base_url="http://127.0.0.1:9/v1")
    assert proc.returncode == 3, proc.stderr
    assert time.monotonic() - started < 60
    assert report(tmp_path / "out")["status"] == "environment_error"


def test_missing_repository_is_a_usage_error(tmp_path):
    proc = run_fix(tmp_path / "nope", tmp_path / "out", base_url="http://127.0.0.1:9/v1")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "not found" in proc.stderr


def test_dirty_working_tree_is_left_byte_for_byte(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    (repo / "calc.py").write_text("# my edit\n" + (repo / "calc.py").read_text())
    (repo / "notes.txt").write_text("untracked\n")
    git(repo, "add", "notes.txt")  # staged too
    (repo / "scratch.txt").write_text("untracked, unstaged\n")
    before = tree_state(repo)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert tree_state(repo) == before
    # The patch is against the tree as it was (with the uncommitted edit).
    git(repo, "apply", "--check", str(tmp_path / "out" / "fix.patch"))


def test_apply_changes_the_working_tree_only_when_asked(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    head = git(repo, "rev-parse", "HEAD")
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(repo, tmp_path / "out", "--apply", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert "len(values)\n" in (repo / "calc.py").read_text()
    assert git(repo, "rev-parse", "HEAD") == head
    assert report(tmp_path / "out")["delivered"].startswith("applied")


def test_branch_commits_without_touching_tree_or_head(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    before = tree_state(repo)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--branch", "worker/fix-mean", base_url=server.base_url
        )
    assert proc.returncode == 0, proc.stderr
    after = tree_state(repo)
    assert after["HEAD"] == before["HEAD"] and after["status"] == before["status"]
    assert (repo / "calc.py").read_text() == BUGGY["calc.py"]
    shown = git(repo, "show", "worker/fix-mean:calc.py")
    assert "/ len(values)\n" in shown
    assert git(repo, "rev-parse", "worker/fix-mean~1") == before["HEAD"]


def test_sigint_mid_run_exits_130_and_leaves_no_container(make_repo, tmp_path, docker_client):
    repo = make_repo(BUGGY)
    script = [tool_call("read_file", {"path": "calc.py"}), {"delay": 60, "content": "late"}]
    with ScriptedServer(script=script) as server:
        proc = subprocess.Popen(
            fix_command(repo, tmp_path / "out", base_url=server.base_url),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=fix_env(),
        )
        deadline = time.monotonic() + 120
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(server.requests) == 2
        mine = [
            c
            for c in worker_containers(docker_client)
            if c.labels.get("worker.pid") == str(proc.pid)
        ]
        assert mine, "the sandbox should be running mid-run"
        helpers = psutil.Process(proc.pid).children(recursive=True)  # the model client's
        assert any("worker.llm.serve" in " ".join(h.cmdline()) for h in helpers)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert not [h for h in helpers if h.is_running() and h.status() != psutil.STATUS_ZOMBIE]
    assert not [
        c for c in worker_containers(docker_client) if c.labels.get("worker.pid") == str(proc.pid)
    ]
    r = report(tmp_path / "out")
    assert r["status"] == "interrupted" and r["steps"] >= 1
    assert (tmp_path / "out" / "trace.jsonl").read_text().count("tool_call") >= 1


def test_json_schema_mode_for_models_without_native_tool_calls(make_repo, tmp_path):
    """Small local models: tool calls forced through response_format, answers as JSON text."""
    repo = make_repo(BUGGY)
    action = {"tool": "apply_patch", "arguments": {"patch": GOOD_PATCH}}
    with ScriptedServer(script=[text(json.dumps(action))]) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--tool-mode", "json_schema", "--json", base_url=server.base_url
        )
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    sent = server.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    branches = sent["response_format"]["json_schema"]["schema"]["oneOf"]
    names = {b["properties"]["tool"]["const"] for b in branches}
    assert {"read_file", "apply_patch", "run_tests", "final_answer"} <= names
    assert "tools" not in sent
    # --json: the report on stdout, valid against the published schema.
    import jsonschema

    from worker.record.report import report_schema

    printed = json.loads(proc.stdout)
    jsonschema.validate(printed, report_schema())
    assert printed["status"] == "fixed" and printed["tool_mode"] == "json_schema"


def test_first_edit_holds_the_first_reply_to_the_edit_tools_with_the_code_shown(
    make_repo, tmp_path
):
    repo = make_repo(BUGGY)
    edit = {
        "tool": "replace",
        "arguments": {"path": "calc.py", "old": "(len(values) - 1)", "new": "len(values)"},
    }
    with ScriptedServer(script=[text(json.dumps(edit))]) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--tool-mode", "json_schema", "--first-edit",
            base_url=server.base_url,
        )  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    sent = server.requests[0]
    branches = sent["response_format"]["json_schema"]["schema"]["oneOf"]
    assert [b["properties"]["tool"]["const"] for b in branches] == ["replace", "apply_patch"]
    # The first message shows the function the failing test reaches, numbered for copying.
    task = sent["messages"][1]["content"]
    assert "Source code the failing tests use:\ncalc.py: mean, lines 1-2" in task
    assert "2|     return sum(values) / (len(values) - 1)" in task


def test_an_edit_that_makes_more_tests_fail_is_undone_in_the_sandbox(make_repo, tmp_path):
    repo = make_repo(
        {
            **BUGGY,
            "calc.py": BUGGY["calc.py"] + "\n\ndef add(a, b):\n    return a + b\n",
            "tests/test_add.py": "from calc import add\n\n\ndef test_add():\n"
            "    assert add(2, 3) == 5\n",
        }
    )
    worse = {"path": "calc.py", "old": "return a + b", "new": "return a * b"}
    good = {"path": "calc.py", "old": "(len(values) - 1)", "new": "len(values)"}
    script = [tool_call("replace", worse), tool_call("replace", good)]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", "--undo-worse-edits", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    told = server.requests[1]["messages"][-1]["content"]
    assert "made more tests fail (2) than before it (1), so the harness undid it" in told
    patch = (tmp_path / "out" / "fix.patch").read_text()
    assert "return a * b" not in patch and "+    return sum(values) / len(values)" in patch
    events = [json.loads(line)["type"] for line in (tmp_path / "out" / "trace.jsonl").open()]
    assert "undone" in events


def test_text_mode_parses_tool_call_blocks(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    reply = (
        "I will fix it.\n<tool_call>\n"
        + json.dumps({"name": "apply_patch", "arguments": {"patch": GOOD_PATCH}})
        + "\n</tool_call>"
    )
    with ScriptedServer(script=[text(reply)]) as server:
        proc = run_fix(repo, tmp_path / "out", "--tool-mode", "text", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    assert "apply_patch" in server.requests[0]["messages"][0]["content"]  # tools described


def test_fix_with_the_local_backend(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(repo, tmp_path / "out", "--backend", "local", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["sandbox"] == "local" and r["verification"]["passed"]
    assert "no network or filesystem isolation" in proc.stderr


def test_reused_out_folder_holds_no_stale_outputs(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    out = tmp_path / "out"
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        assert run_fix(repo, out, base_url=server.base_url).returncode == 0
    assert (out / "fix.patch").exists()
    with ScriptedServer(script=[text("done"), text("done")]) as server:
        proc = run_fix(repo, out, base_url=server.base_url)
    assert proc.returncode == 1, proc.stderr
    assert not (out / "fix.patch").exists()  # the earlier run's patch is not left to mislead
    assert report(out)["status"] == "not_fixed"
    assert "verification" not in (out / "trace.jsonl").read_text()


def test_code_that_rewrites_the_tests_cannot_make_them_pass(make_repo, tmp_path):
    """The model may not edit tests; neither may the code it writes, when the tests import it.
    Such side effects stay out of the patch, so the clean re-run uses the original tests."""
    repo = make_repo(BUGGY)
    cheat = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,11 @@
+import pathlib
+
+_here = pathlib.Path(__file__).parent
+(_here / "notes.txt").write_text("a side effect\\n")
+try:
+    (_here / "tests" / "test_calc.py").write_text("def test_mean():\\n    assert True\\n")
+except PermissionError:
+    pass
+
 def mean(values):
     return sum(values) / (len(values) - 1)
"""
    script = [tool_call("apply_patch", {"patch": cheat}), text("done"), text("done")]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "not_fixed"
    # The test file is read-only to the sandbox user: the rewrite failed, the test still fails.
    assert r["tests_after"]["failing"] == ["tests/test_calc.py::test_mean"]
    assert r["files_left_out"] == ["notes.txt"]  # a side effect: not part of the fix
    patch = (tmp_path / "out" / "fix.patch").read_text()
    assert "+++ b/calc.py" in patch
    assert "+++ b/tests/" not in patch and "+++ b/notes.txt" not in patch


def test_no_docker_is_exit_3_with_a_report(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    proc = run_fix(
        repo,
        tmp_path / "out",
        base_url="http://127.0.0.1:9/v1",
        env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    )
    assert proc.returncode == 3
    assert proc.stderr.strip().splitlines()[-1].startswith("worker: error: Docker is not available")
    assert report(tmp_path / "out")["status"] == "environment_error"


@pytest.mark.parametrize(
    ("files", "flags", "words"),
    [
        ({"conftest.py": "", "calc.py": "x = 1\n"}, [], "collected no tests"),
        (BUGGY, ["--test-cmd", "no-such-runner"], "not found"),
    ],
)
def test_a_test_command_that_runs_nothing_is_a_usage_error(
    make_repo, tmp_path, files, flags, words
):
    repo = make_repo(files)
    proc = run_fix(repo, tmp_path / "out", *flags, base_url="http://127.0.0.1:9/v1")
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr.strip().splitlines()[-1]


def test_tests_that_already_pass_need_no_model_call(make_repo, tmp_path):
    repo = make_repo(
        {**BUGGY, "calc.py": "def mean(values):\n    return sum(values) / len(values)\n"}
    )
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert "NOTHING TO FIX: the tests already pass" in proc.stderr
    assert server.requests == [] and not (tmp_path / "out" / "fix.patch").exists()


def test_invalid_config_is_a_usage_error_naming_the_key(make_repo, tmp_path):
    repo = make_repo({**BUGGY, "worker.toml": "[budgets]\nmax_stepz = 3\n"})
    proc = run_fix(repo, tmp_path / "out", base_url="http://127.0.0.1:9/v1")
    assert proc.returncode == 2
    line = proc.stderr.strip().splitlines()[-1]
    assert "max_stepz" in line and "max_steps" in line


def test_out_folder_inside_the_repository_is_not_copied_into_the_sandbox(make_repo):
    repo = make_repo(BUGGY)
    out = repo / "worker-out"
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(repo, out, base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    first_task = server.requests[0]["messages"][1]["content"]
    assert "worker-out" not in first_task
    assert "worker-out" not in (out / "fix.patch").read_text()


def test_the_time_budget_cuts_a_model_call_that_never_answers(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    with ScriptedServer(script=[tool_call("read_file", {"path": "calc.py"}, delay=120)]) as server:
        started = time.monotonic()
        proc = run_fix(repo, tmp_path / "out", "--timeout", "5", base_url=server.base_url)
        took = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "not_fixed" and "time budget" in r["reason"], r["reason"]
    assert took < 40  # not the 120 s the server would take
    # Every request caps the answer's length.
    assert server.requests[0]["max_tokens"] == 1536


def test_the_time_budget_cuts_a_test_run_that_an_edit_made_hang(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    hang = {"path": "calc.py", "old": "def mean(values):",
            "new": "def mean(values):\n    while True:\n        pass"}  # fmt: skip
    with ScriptedServer(script=[tool_call("replace", hang)]) as server:
        started = time.monotonic()
        proc = run_fix(
            repo, tmp_path / "out", "--timeout", "15", "--test-timeout", "120",
            base_url=server.base_url,
        )  # fmt: skip
        took = time.monotonic() - started
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "not_fixed" and "time budget" in r["reason"], r["reason"]
    assert took < 60  # not the 120 s the test command may take
    (edit,) = [e for e in map(json.loads, (tmp_path / "out" / "trace.jsonl").open())
               if e["type"] == "tool_call"]  # fmt: skip
    assert "killed at the time limit" in edit["observation"]


def test_a_run_of_the_tests_before_any_edit_is_the_first_runs_result(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    script = [tool_call("run_tests", {}), tool_call("apply_patch", {"patch": GOOD_PATCH})]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    # Edited trees get a shorter time limit than the first run had: the first run still fits.
    told = server.requests[1]["messages"][-1]["content"]
    assert "Not run again" in told and "1 failed" in told


def test_an_answer_cut_off_by_length_is_told_and_the_run_goes_on(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    runaway = text(
        '{"tool": "read_file", "arguments": {"path": "' + "a" * 3000,
        finish_reason="length",
        usage={"prompt_tokens": 900, "completion_tokens": 1536},
    )
    script = [runaway, tool_call("apply_patch", {"patch": GOOD_PATCH})]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    told = server.requests[1]["messages"]
    assert "cut off at 1536 tokens" in told[-1]["content"] and told[-1]["role"] == "user"
    assert len(told[-2]["content"]) < 300  # the runaway is not sent back whole
    kinds = [json.loads(line)["type"] for line in (tmp_path / "out" / "trace.jsonl").open()]
    assert "cut_off" in kinds and "claim" not in kinds


def test_a_request_too_long_for_the_window_is_retried_compacted(make_repo, tmp_path):
    repo = make_repo({**BUGGY, "notes.txt": "a long line of notes\n" * 400})
    too_long = "the request exceeds the available context size, try increasing it"
    script = [
        tool_call("read_file", {"path": "notes.txt"}),
        tool_call("read_file", {"path": "calc.py"}),
        http_error(400, too_long),
        tool_call("apply_patch", {"patch": GOOD_PATCH}),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    refused, retried = (json.dumps(server.requests[i]["messages"]) for i in (2, 3))
    assert len(retried) < len(refused) and "collapsed" in retried


def test_a_request_that_cannot_fit_the_window_ends_as_a_budget(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    too_long = (
        "This model's maximum context length is 8192 tokens. However, your messages resulted "
        "in 9000 tokens. Please reduce the length of the messages."
    )
    with ScriptedServer(script=[http_error(400, too_long)]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "not_fixed" and "context" in r["reason"], r["reason"]


def test_the_sandbox_time_running_out_is_a_spent_budget_exit_1(make_repo, tmp_path):
    repo = make_repo(
        {
            **BUGGY,
            # It writes into the tree, so no run of it is ever answered from an earlier one.
            "tests/test_slow.py": (
                "import time\n\n\ndef test_slow():\n    time.sleep(1.5)\n"
                "    open('stamp', 'a').write('x')\n"
            ),
            "worker.toml": "[limits]\ntotal_timeout_s = 4\n",
        }
    )
    script = [tool_call("run_tests", {}) for _ in range(4)]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    r = report(tmp_path / "out")
    assert proc.returncode == 1, proc.stderr
    assert r["status"] == "not_fixed" and "total time limit" in r["reason"]


def test_the_report_says_what_ran_and_never_repeats_old_figures(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    with ScriptedServer(script=[tool_call("read_file", {"path": "calc.py"})]) as server:
        proc = run_fix(repo, tmp_path / "out", "--max-steps", "1", base_url=server.base_url)
    r = report(tmp_path / "out")
    assert proc.returncode == 1, proc.stderr
    # The command that really ran, with the flags the harness added, not only `python -m pytest`.
    assert r["test_cmd"].startswith("rm -f /tmp/worker-junit-") and "--junitxml=" in r["test_cmd"]
    assert r["tests_before"]["command"] == r["test_cmd"]
    # No patch was applied, so the tests were not run again: no copy of the old figures.
    assert r["tests_after"] == "not re-run" and r["verdict"] is None


def test_first_edits_are_sampled_on_the_original_tree_in_the_sandbox(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    wrong = {"path": "calc.py", "old": "(len(values) - 1)", "new": "(len(values) + 1)"}
    good = {"path": "calc.py", "old": "(len(values) - 1)", "new": "len(values)"}
    edits = [text(json.dumps({"tool": "replace", "arguments": a})) for a in (wrong, good)]
    with ScriptedServer(script=edits) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--tool-mode", "json_schema", "--first-edit",
            "--edit-samples", "3", base_url=server.base_url,
        )  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    # The second sample was asked the same conversation, warmer, on the original file: the
    # first one's edit was undone, so its `old` still matched.
    first, second = server.requests
    assert second["messages"] == first["messages"] and second["temperature"] > 0
    patch = (tmp_path / "out" / "fix.patch").read_text()
    assert "+ 1)" not in patch and "+    return sum(values) / len(values)" in patch
    events = [json.loads(line)["type"] for line in (tmp_path / "out" / "trace.jsonl").open()]
    assert events.count("sample_undone") == 1


def test_with_locate_the_first_message_names_the_lines_the_failing_tests_run(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    good = {"path": "calc.py", "old": "(len(values) - 1)", "new": "len(values)"}
    with ScriptedServer(script=[tool_call("replace", good)]) as server:
        proc = run_fix(repo, tmp_path / "out", "--locate", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    # One traced run of the failing test's file ranked calc.py's line; the model was told.
    task = server.requests[0]["messages"][1]["content"]
    assert "Lines the failing tests run, most suspicious first" in task
    assert "calc.py:2: return sum(values) / (len(values) - 1)   (run by 1 of 1 failing" in task
    events = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
    (suspects,) = [e for e in events if e["type"] == "suspects"]
    assert suspects["lines"][0]["where"] == "calc.py:2" and suspects["failed"] == 1
    assert "locate" in report(tmp_path / "out")["durations"]


def test_a_pointed_sample_is_a_replace_of_the_suspect_line_pinned_in_the_schema(
    make_repo, tmp_path
):
    # The test reaches mean() by a computed name: no function can be shown in the first
    # message, but the traced run still finds the line.
    test = (
        "import calc\n\n\ndef test_mean():\n    assert getattr(calc, 'me' + 'an')([1, 2, 3]) == 2\n"
    )
    repo = make_repo({**BUGGY, "tests/test_calc.py": test})
    wrong = {"path": "calc.py", "old": "no such line", "new": "x"}
    good = {"path": "calc.py", "old": "return sum(values) / (len(values) - 1)", "line": 2,
            "new": "return sum(values) / len(values)"}  # fmt: skip
    script = [text(json.dumps({"tool": "replace", "arguments": a})) for a in (wrong, good)]
    with ScriptedServer(script=script) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--tool-mode", "json_schema", "--first-edit", "--locate",
            "--edit-samples", "2", base_url=server.base_url,
        )  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    greedy, pointed = server.requests
    assert "calc.py: mean, lines" not in greedy["messages"][1]["content"]  # no function shown
    # The pointed sample may only write `new`: path, old and line are constants of its schema.
    (branch,) = pointed["response_format"]["json_schema"]["schema"]["oneOf"]
    args = branch["properties"]["arguments"]["properties"]
    assert branch["properties"]["tool"] == {"const": "replace"}
    assert args["path"] == {"const": "calc.py"} and args["line"] == {"const": 2}
    assert args["old"] == {"const": "return sum(values) / (len(values) - 1)"}
    assert args["new"]["type"] == "string"
    assert "\n\nLook at line calc.py:2: return sum" in pointed["messages"][-1]["content"]
    assert "+    return sum(values) / len(values)" in (tmp_path / "out" / "fix.patch").read_text()


def test_an_edit_the_model_nearly_wrote_is_tried_by_the_tests_and_kept(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    greedy = {"path": "calc.py", "old": "no such line", "new": "x"}
    old = "return sum(values) / (len(values) - 1)"
    # The pointed answer keeps the bug; at its least sure token the runner-up drops the `- 1`.
    head = json.dumps({"tool": "replace", "arguments": {"path": "calc.py", "old": old, "line": 2}})
    head = head[:-2] + ', "new": "return sum(values) / (len(values)'
    tokens = [(head, []), (" - 1)", [(" - 1)", -0.4), (")", -1.3)]), ('"}}', [])]
    logprobs = {
        "content": [{"token": t, "logprob": -0.1, "top_logprobs": [
            {"token": o, "logprob": lp} for o, lp in others]} for t, others in tokens]
    }  # fmt: skip
    answer = text("".join(t for t, _ in tokens), logprobs=logprobs)
    script = [text(json.dumps({"tool": "replace", "arguments": greedy})), answer]
    with ScriptedServer(script=script) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--tool-mode", "json_schema", "--first-edit", "--locate",
            "--edit-samples", "2", "--second-choices", "2", "--json", base_url=server.base_url,
        )  # fmt: skip
        server.assert_all_used()  # two answers: the second choice cost no model call
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "fixed"  # verified on a clean copy, as ever
    greedy_request, pointed = server.requests
    assert pointed.get("logprobs") is True and "logprobs" not in greedy_request
    assert "+    return sum(values) / (len(values))" in (tmp_path / "out" / "fix.patch").read_text()
    events = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
    (second,) = [e for e in events if e["type"] == "second_choice"]
    assert (second["was"], second["token"]) == (" - 1)", ")")
    # The progress says one line for the pointed answer, its second choice counted on it.
    (step,) = [line for line in proc.stderr.splitlines() if line.startswith("step  2")]
    assert "old and new are the same" in step and "; 1 second choice tried, the last fixed" in step


def test_without_locate_a_hosted_model_gets_no_suspect_lines(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    good = {"path": "calc.py", "old": "(len(values) - 1)", "new": "len(values)"}
    with ScriptedServer(script=[tool_call("replace", good)]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert "Lines the failing tests run" not in server.requests[0]["messages"][1]["content"]
    assert "locate" not in report(tmp_path / "out")["durations"]


def test_without_converse_a_run_ends_after_its_samples(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    edits = [
        {"path": "calc.py", "old": "(len(values) - 1)", "new": f"(len(values) + {n})"}
        for n in (1, 2)
    ]
    script = [text(json.dumps({"tool": "replace", "arguments": a})) for a in edits]
    with ScriptedServer(script=script) as server:
        proc = run_fix(
            repo, tmp_path / "out", "--tool-mode", "json_schema", "--first-edit",
            "--edit-samples", "2", "--no-converse", base_url=server.base_url,
        )  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 1, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "not_fixed" and "no sampled first edit fixed" in r["reason"]
    assert len(server.requests) == 2 and not (tmp_path / "out" / "fix.patch").exists()
