"""`worker replay` end to end: a `worker fix` run recorded (scripted model, real sandbox), then
replayed from its trace alone: the recorded replies served in order, the tools real, every
observation, test outcome and the verdict compared."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import git
from tests.test_fix_cli import BUGGY, GOOD_PATCH, fix_command, fix_env, run_fix
from worker.llm.scripted_server import ScriptedServer, text, tool_call
from worker.record.header import RunHeader
from worker.replay.llama_stand_in import launcher, served

pytestmark = pytest.mark.docker

SCHEMA = Path(__file__).parents[1] / "worker" / "schemas" / "trace.schema.json"
EXAMPLE = Path(__file__).parents[1] / "examples" / "calc"


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
    assert events[0]["type"] == "trace" and events[0]["version"] == 2
    assert events[1]["type"] == "run" and len(events[1]["tree"]) == 64
    written = {k: v for k, v in events[1].items() if k not in ("type", "t")}
    assert list(RunHeader.from_dict(events[1]).to_dict().items()) == list(written.items())
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


def events_of(out: Path) -> list[dict]:
    events = [json.loads(line) for line in (out / "trace.jsonl").open()]
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))
    for event in events:
        validator.validate(event)
    return events


def bundled_env(**extra: str) -> dict[str, str]:
    """No endpoint configured: `worker fix` takes the bundled model, as a user's first run."""
    drop = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "WORKER_MODEL", "WORKER_LLAMA_SERVER")
    return {**{k: v for k, v in os.environ.items() if k not in drop}, **extra}


def fix_local(repo: Path, out: Path, env: dict[str, str], timeout: float) -> int:
    command = [sys.executable, "-m", "worker.cli", "fix", "--repo", str(repo), "--out", str(out),
               "--model", "local", "--quiet"]  # fmt: skip
    return subprocess.run(command, env=env, capture_output=True, timeout=timeout).returncode


@pytest.mark.local_model
def test_a_run_of_the_bundled_model_replays_to_the_same_verdict(tmp_path, sandbox_image):
    # The real model on llama.cpp (the suite's one slow test: 1.5 to 3 minutes on 2 cores): its
    # json_schema answers, as it spelled them, replayed with every bundled-model setting.
    out = tmp_path / "out"
    assert fix_local(EXAMPLE, out, bundled_env(), timeout=600) == 0
    calls = [e for e in events_of(out) if e["type"] == "model_call"]
    assert calls and all(c["mode"] == "json_schema" and c["answer"] for c in calls)
    assert calls[0]["sample"] == 1  # sampled first edits: the bundled model's settings
    proc = replay(out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "replay matches the recording" in proc.stdout
    assert json.loads((out / "replay" / "report.json").read_text())["status"] == "fixed"


@pytest.mark.local_model  # the recorded and the replayed run check the pulled weights
def test_a_bundled_model_run_fixed_by_a_second_choice_replays(make_repo, tmp_path):
    # The same run with llama-server's answers scripted (the stand-in replay itself uses): the
    # pointed sample's answer keeps the bug; the runner-up at its least sure token drops the
    # `- 1`, and that second choice, tried by the tests alone, is the fix.
    old = "return sum(values) / (len(values) - 1)"
    head = json.dumps({"tool": "replace", "arguments": {"path": "calc.py", "old": old, "line": 2}})
    tokens = [(head[:-2] + ', "new": "return sum(values) / (len(values)', []),
              (" - 1)", [(" - 1)", -0.4), (")", -1.3)]), ('"}}', [])]  # fmt: skip
    logprobs = {"content": [{"token": t, "logprob": -0.1, "top_logprobs": [
        {"token": o, "logprob": lp} for o, lp in others]} for t, others in tokens]}  # fmt: skip
    greedy = {"path": "calc.py", "old": "no such line", "new": "x"}
    script = [text(json.dumps({"tool": "replace", "arguments": greedy})),
              text("".join(t for t, _ in tokens), logprobs=logprobs)]  # fmt: skip
    engine, report = launcher(tmp_path / "engine", script=script)
    out = tmp_path / "out"
    env = bundled_env(WORKER_LLAMA_SERVER=str(engine))
    assert fix_local(make_repo(BUGGY), out, env, timeout=240) == 0
    assert served(report) == (0, 0)
    events = events_of(out)
    assert events[1]["local"] is True
    (pointed,) = [e for e in events if e["type"] == "model_call" and e.get("logprobs")]
    assert pointed["logprobs"][1] == [" - 1)", [[" - 1)", -0.4], [")", -1.3]]]
    assert [e["type"] for e in events].count("second_choice") == 1
    proc = replay(out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seconds = [
        [(e["was"], e["token"], e["probability"]) for e in trace if e["type"] == "second_choice"]
        for trace in (events, events_of(out / "replay"))
    ]
    assert seconds[0] == seconds[1] == [(" - 1)", ")", round(math.exp(-1.3), 4))]


def test_a_run_stopped_by_a_signal_replays_up_to_where_it_ended(make_repo, tmp_path):
    # SIGTERM while the model thinks about its second answer: the trace holds one step.
    repo = make_repo(BUGGY)
    script = [tool_call("read_file", {"path": "calc.py"}),
              tool_call("run_tests", {}, delay=60)]  # fmt: skip
    with ScriptedServer(script=script) as server:
        proc = subprocess.Popen(fix_command(repo, tmp_path / "out", base_url=server.base_url),
                                env=fix_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 120
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130
    recorded = json.loads((tmp_path / "out" / "report.json").read_text())
    assert recorded["status"] == "interrupted" and "signal 15" in recorded["reason"]
    proc = replay(tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "up to where a signal stopped it" in proc.stdout
    assert "the recording was stopped by a signal (received signal 15)" in proc.stdout
    replayed = json.loads((tmp_path / "out" / "replay" / "report.json").read_text())
    assert (replayed["status"], replayed["exit_code"]) == ("interrupted", 130)
    kinds = [e["type"] for e in events_of(tmp_path / "out" / "replay")]
    assert kinds.count("model_call") == 1 and kinds.count("tool_call") == 1


def test_a_run_ended_by_its_environment_replays_to_the_same_ending(make_repo, tmp_path):
    # The baseline cannot import a module: exit 6 before any model call, and again on replay.
    broken = {**BUGGY, "tests/test_calc.py": "import yaml_not_installed_anywhere\n" + BUGGY[
        "tests/test_calc.py"]}  # fmt: skip
    assert record(make_repo(broken), tmp_path / "out", []) == 6
    proc = replay(tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    replayed = json.loads((tmp_path / "out" / "replay" / "report.json").read_text())
    assert (replayed["status"], replayed["exit_code"]) == ("project_environment", 6)
    assert "yaml_not_installed_anywhere" in replayed["reason"]


def test_an_eval_output_replays_task_by_task(make_repo, tmp_path):
    # A real `worker eval` (tests/test_eval_cli.py's flags): one task fixed, one ended by its
    # step budget; each task's fix run replays alone, and the eval's folder task by task.
    from tests.test_eval_cli import MEAN_BUG, MEAN_FIX, run_eval

    make_repo(MEAN_BUG, name="fixable")
    make_repo(MEAN_BUG, name="budget")
    tasks = tmp_path / "tasks.jsonl"
    lines = [json.dumps({"id": name, "repo": name}) + "\n" for name in ("fixable", "budget")]
    tasks.write_text("".join(lines))
    script = [tool_call("apply_patch", {"patch": MEAN_FIX}),
              tool_call("read_file", {"path": "calc.py"})]  # fmt: skip
    out = tmp_path / "eval"
    with ScriptedServer(script=script) as server:
        assert run_eval(tasks, out, base_url=server.base_url).returncode == 0
        server.assert_all_used()
    proc = replay(out / "tasks" / "fixable" / "fix")
    assert proc.returncode == 0 and "replay matches the recording" in proc.stdout, proc.stdout
    proc = replay(out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith(("fix", "bud"))]
    assert ["fixable", "fixed", "fixed", "match"] in rows
    assert ["budget", "not_fixed", "not_fixed", "match"] in rows
    assert "2 of 2 task(s) replay as recorded" in proc.stdout
    assert (out / "tasks" / "budget" / "fix" / "replay" / "report.json").is_file()
    # Its tasks replay on their own clones: --repo is for one run.
    assert replay(out, "--repo", str(tmp_path)).returncode == 2


def test_a_worker_ci_run_replays_with_no_difference(make_repo, tmp_path):
    from tests.test_ci_cli import ci

    repo = make_repo(BUGGY)
    with ScriptedServer(script=FIXED) as server:
        proc = ci(repo, tmp_path / "out", "--reruns", "1", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    proc = replay(tmp_path / "out")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "replay matches the recording" in proc.stdout
