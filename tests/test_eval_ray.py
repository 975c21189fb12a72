"""`worker eval --ray` on a real Ray cluster on this machine (loopback only: every node at
127.0.0.2, ../shared/docs/PLATFORM.md), real sandboxes, the scripted model server, and the
driver as its own process, as a user runs it."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import worker_containers
from tests.test_eval_cli import MEAN_BUG, MEAN_FIX
from worker.llm.scripted_server import ScriptedServer, text, tool_call
from worker.replay.llama_stand_in import launcher

ray_cluster_utils = pytest.importorskip("ray.cluster_utils")
pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[1]
LOOPBACK = "127.0.0.2"
# Where a node finds llama-server: the scripted stand-in a test puts there (no real model runs).
ENGINE_DIR = Path(tempfile.gettempdir()) / f"worker-test-eval-ray-{os.getpid()}"
# What a node is started with: the package importable, and the model key in its own environment
# (the driver runs without one: the key never travels with a task).
NODE_ENV = {
    "PYTHONPATH": str(ROOT),
    "OPENAI_API_KEY": "sk-node",
    "WORKER_LLAMA_SERVER": str(ENGINE_DIR / "llama-server"),
}
OTHER_BUG = {**MEAN_BUG, "calc.py": "def mean(values):\n    return 0\n"}  # MEAN_FIX misses


def _node_args(**extra: Any) -> dict[str, Any]:
    return {"num_cpus": 1, "node_ip_address": LOOPBACK, "env_vars": dict(NODE_ENV), **extra}


@pytest.fixture(scope="module")
def cluster(sandbox_image: str) -> Iterator[Any]:
    """A head (no CPU: it runs no task) and two nodes of one CPU each."""
    head = {**_node_args(num_cpus=0), "include_dashboard": False}
    made = ray_cluster_utils.Cluster(initialize_head=True, head_node_args=head)
    try:
        for _ in range(2):
            made.add_node(**_node_args())
        made.wait_for_nodes()
        yield made
    finally:
        made.shutdown()


def _tasks(make_repo, tmp_path: Path, bugs: list[dict[str, str]]) -> tuple[Path, list[Path]]:
    repos, lines = [], []
    for number, files in enumerate(bugs):
        repo = make_repo(files, name=f"t{number}")
        repos.append(repo)
        lines.append({"id": f"t{number}", "repo": repo.name,
                      "fail_to_pass": ["tests/test_calc.py::test_mean"]})  # fmt: skip
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path, repos


def _command(tasks: Path, out: Path, base_url: str, *extra: str) -> list[str]:
    command = [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(out)]
    return command + ["--model", "scripted", "--base-url", base_url, "--max-steps", "1", *extra]


def _driver_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _start(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=_driver_env()
    )


def _ledger(out: Path) -> list[dict[str, Any]]:
    path = out / "ledger.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _orphans(docker_client) -> list[str]:
    return [
        c.name
        for c in worker_containers(docker_client)
        if not psutil.pid_exists(int(c.labels.get("worker.pid", "0")))
    ]


def _labelled(docker_client, out: Path) -> list[dict[str, str]]:
    """The labels of every container, running or not, that this eval's attempts started."""
    eval_id = next(e["eval"] for e in _ledger(out) if e["event"] == "eval")
    found = docker_client.api.containers(all=True, filters={"label": f"worker.eval={eval_id}"})
    return [c.get("Labels") or {} for c in found]


def test_same_results_as_the_local_eval_with_trees_sent_as_data_and_a_bad_node_unused(
    cluster, make_repo, tmp_path, docker_client
):
    tasks, repos = _tasks(make_repo, tmp_path, [MEAN_BUG] * 4 + [OTHER_BUG] * 2)
    script = [tool_call("apply_patch", {"patch": MEAN_FIX})] * 6
    with ScriptedServer(script=script) as server:
        local = subprocess.run(
            _command(tasks, tmp_path / "local", server.base_url, "--workers", "2"),
            capture_output=True, text=True, timeout=300,
            env={**_driver_env(), "OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
    assert local.returncode == 0, local.stderr

    # A node whose Docker does not answer joins: it is checked, named, and gets no task.
    bad = cluster.add_node(**_node_args(env_vars={**NODE_ENV, "DOCKER_HOST": "unix:///nowhere"}))
    try:
        out = tmp_path / "ray"
        with ScriptedServer(script=script) as server:
            proc = _start(_command(tasks, out, server.base_url, "--ray", cluster.address))
            lines: list[str] = []
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                if "into the object store" in line:
                    for repo in repos:  # the driver's copies go: nodes must not need them
                        subprocess.run(["rm", "-rf", str(repo)], check=True)
            assert proc.wait(timeout=300) == 0, "".join(lines)
            server.assert_all_used()
    finally:
        cluster.remove_node(bad)
    stderr = "".join(lines)
    assert f"({bad.node_id[:8]}) refused: Docker is not available" in stderr
    attempts = [e for e in _ledger(out) if e["event"] == "attempt"]
    assert len(attempts) == 6 and not any(bad.node_id[:8] in e["node"] for e in attempts)
    assert json.loads((out / "preds.json").read_text()) == json.loads(
        (tmp_path / "local" / "preds.json").read_text()
    )
    resolved = {
        name: {r["id"] for r in json.loads((d / "results.json").read_text())["tasks"]
               if r["resolved"]}
        for name, d in (("local", tmp_path / "local"), ("ray", out))
    }  # fmt: skip
    assert resolved["ray"] == resolved["local"] == {"t0", "t1", "t2", "t3"}
    assert (out / "tasks" / "t0" / "fix" / "report.json").is_file()
    assert "refused by the self-check" in (out / "results.md").read_text()
    assert not _orphans(docker_client)


def _worker_nodes(cluster) -> list[Any]:
    return [n for n in cluster.list_all_nodes() if n is not cluster.head_node]


def _wait(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_a_node_killed_mid_batch_loses_nothing_and_counts_each_task_once(
    cluster, make_repo, tmp_path, docker_client
):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG] * 4)
    slow = tool_call("apply_patch", {"patch": MEAN_FIX}, delay=20.0)
    # Two first attempts held in their model call, then the other tasks and the one retry.
    script = [slow, slow] + [tool_call("apply_patch", {"patch": MEAN_FIX})] * 3
    out = tmp_path / "ray"
    with ScriptedServer(script=script) as server:
        proc = _start(_command(tasks, out, server.base_url, "--ray", cluster.address))
        try:
            _wait(lambda: len(server.requests) == 2, 120, "two attempts in their model call")
            # Each attempt's container names the eval, the task and the attempt.
            started = {(e["task"], e["attempt"]) for e in _ledger(out) if e["event"] == "attempt"}
            labels = _labelled(docker_client, out)
            assert {(c["worker.task"], c["worker.attempt"]) for c in labels} == started
            victim = _worker_nodes(cluster)[0]
            cluster.remove_node(victim, allow_graceful=False)
            cluster.add_node(**_node_args())  # joins mid-batch: checked, then used
            _, stderr = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, stderr
        server.assert_all_used()
    ledger = _ledger(out)
    results = [e["task"] for e in ledger if e["event"] == "result"]
    assert sorted(results) == ["t0", "t1", "t2", "t3"]  # each exactly once
    lost = [e for e in ledger if e["event"] == "lost"]
    assert len(lost) == 1 and "node" in lost[0]["why"]
    rows = {r["id"]: r for r in json.loads((out / "results.json").read_text())["tasks"]}
    assert all(r["resolved"] for r in rows.values())
    assert len(rows[lost[0]["task"]]["attempts"]) == 2
    assert stderr.count("passed the self-check") >= 4  # the head, two nodes, the newcomer
    assert "tasks run more than once: " + lost[0]["task"] in (out / "results.md").read_text()
    assert not _orphans(docker_client)
    assert not _labelled(docker_client, out), "the lost attempt's container is still there"
    assert not _fix_runs_left(), "a fix run outlived its node"


def _fix_runs_left() -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if "worker-eval-task-" in
            " ".join(p.info["cmdline"] or [])]  # fmt: skip


def test_ctrl_c_on_the_driver_cancels_its_tasks_and_leaves_nothing(
    cluster, make_repo, tmp_path, docker_client
):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG] * 4)
    out = tmp_path / "ray"
    # In their model call when Ctrl-C comes, a call that would not answer for 10 minutes: the
    # cancel reaches each attempt at once (its fix process ended mid-call), not when the call
    # answers, nor after the driver's 90 s of grace.
    slow = tool_call("apply_patch", {"patch": MEAN_FIX}, delay=600.0)
    with ScriptedServer(script=[slow] * 4) as server:
        proc = _start(_command(tasks, out, server.base_url, "--ray", cluster.address))
        try:
            _wait(lambda: len(server.requests) == 2, 120, "two attempts in their model call")
            # Two attempts, each with its containers (its sandbox, and the clean copy a hosted
            # model's run prepares while the model thinks) labelled.
            assert len({c["worker.attempt"] for c in _labelled(docker_client, out)}) == 2
            proc.send_signal(signal.SIGINT)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, stderr
    assert "cancelling 2 running attempt(s)" in stderr
    ledger = _ledger(out)
    attempts = {e["attempt"] for e in ledger if e["event"] == "attempt"}
    cancelled = {e["attempt"] for e in ledger if e["event"] == "cancelled"}
    assert len(attempts) == 2 and cancelled == attempts
    assert not [e for e in ledger if e["event"] == "result"]
    assert not _labelled(docker_client, out), "a cancelled attempt's container is still there"
    assert not _orphans(docker_client)
    assert not _fix_runs_left()


def test_a_restarted_driver_does_not_run_finished_tasks_again(
    cluster, make_repo, tmp_path, docker_client
):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG] * 4)
    out = tmp_path / "ray"
    fix = tool_call("apply_patch", {"patch": MEAN_FIX})
    with ScriptedServer(script=[fix] * 2 + [{**fix, "delay": 60.0}] * 2) as server:
        proc = _start(_command(tasks, out, server.base_url, "--ray", cluster.address))
        try:
            done = lambda: [e["task"] for e in _ledger(out) if e["event"] == "result"]  # noqa: E731
            _wait(lambda: len(done()) >= 2, 180, "two committed tasks")
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    finished = done()
    with ScriptedServer(script=[fix] * (4 - len(finished))) as server:
        again = subprocess.run(
            _command(tasks, out, server.base_url, "--ray", cluster.address),
            capture_output=True, text=True, timeout=300, env=_driver_env(),
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        server.assert_all_used()  # only the unfinished tasks asked the model
    assert again.stderr.count("done before") == len(finished)
    results = [e["task"] for e in _ledger(out) if e["event"] == "result"]
    assert sorted(results) == ["t0", "t1", "t2", "t3"]
    # A local eval on the cluster's --out finds every task done: no model call at all.
    with ScriptedServer(script=[]) as server:
        local = subprocess.run(
            _command(tasks, out, server.base_url), capture_output=True, text=True, timeout=120,
            env={**_driver_env(), "OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
    assert local.returncode == 0 and local.stderr.count("done before") == 4, local.stderr
    assert not _orphans(docker_client)  # the killed driver's runs ended with their Ray workers


def test_ray_runs_none_of_the_tasks_a_local_eval_finished_on_the_same_out(
    cluster, make_repo, tmp_path
):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG] * 2)
    out = tmp_path / "eval"
    fix = tool_call("apply_patch", {"patch": MEAN_FIX})
    with ScriptedServer(script=[fix] * 2) as server:
        local = subprocess.run(
            _command(tasks, out, server.base_url, "--workers", "2"), capture_output=True,
            text=True, timeout=300, env={**_driver_env(), "OPENAI_API_KEY": "sk-test"},
        )  # fmt: skip
        assert local.returncode == 0, local.stderr
    with ScriptedServer(script=[]) as server:  # any model call fails the run
        ray = subprocess.run(
            _command(tasks, out, server.base_url, "--ray", cluster.address),
            capture_output=True, text=True, timeout=300, env=_driver_env(),
        )  # fmt: skip
        assert ray.returncode == 0, ray.stderr
    assert ray.stderr.count("done before") == 2
    attempts = sorted((e["task"], e["node"]) for e in _ledger(out) if e["event"] == "attempt")
    assert attempts == [("t0", "local"), ("t1", "local")]
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert (summary["ran"], summary["resolved"]) == (2, 2)


def test_the_batch_budget_stops_new_tasks_on_the_whole_cluster(cluster, make_repo, tmp_path):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG] * 4)
    out = tmp_path / "ray"
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": MEAN_FIX})]) as server:
        proc = subprocess.run(
            _command(tasks, out, server.base_url, "--ray", cluster.address,
                     "--max-total-tokens", "1", "--max-in-flight", "1"),
            capture_output=True, text=True, timeout=300, env=_driver_env(),
        )  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 1, proc.stderr
    assert "token budget is spent" in proc.stderr
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert (summary["ran"], summary["not_run"]) == (1, 3)
    assert len([e for e in _ledger(out) if e["event"] == "attempt"]) == 1


def test_without_ray_the_flag_is_one_line_and_exit_2(tmp_path, make_repo):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG])
    blocker = tmp_path / "no_ray"
    (blocker / "ray").mkdir(parents=True)
    (blocker / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    env = {**_driver_env(), "PYTHONPATH": f"{blocker}{os.pathsep}{ROOT}"}
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(tmp_path / "o"),
         "--ray", "auto"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith("pip install 'worker[ray]'")


def _stand_in_engine(script: list[dict[str, Any]]) -> None:
    """llama-server, as every node finds it: the scripted stand-in, which notes each start (its
    pid) and reports, on its own file, the replies it served when it is stopped."""
    shutil.rmtree(ENGINE_DIR, ignore_errors=True)
    stand_in, _ = launcher(ENGINE_DIR / "stand-in", script=script)
    engine = ENGINE_DIR / "llama-server"
    starts, report = shlex.quote(str(ENGINE_DIR / "starts")), shlex.quote(str(ENGINE_DIR))
    engine.write_text(
        "#!/bin/sh\n"
        f"echo $$ >> {starts}\n"
        f'exec {shlex.quote(str(stand_in))} "$@" --report {report}/served-$$.json\n'
    )
    engine.chmod(0o755)


@pytest.mark.local_model  # each node's server checks the pulled weights, as a real run's does
def test_the_bundled_model_is_one_server_per_node_shared_by_its_tasks(
    cluster, make_repo, tmp_path, docker_client
):
    tasks, _ = _tasks(make_repo, tmp_path, [MEAN_BUG] * 4)
    old, new = "return sum(values) / (len(values) - 1)", "return sum(values) / len(values)"
    fix = text(json.dumps({"tool": "replace", "arguments": {"path": "calc.py", "old": old,
                                                            "new": new}}))  # fmt: skip
    # Each server holds enough for every task, with room for a call asked again (a client
    # retry on a slow machine): once in CI a node's 8 ran out and its last task ended in an
    # environment error. Every call made is still counted against those served, below.
    script = [fix] * 16
    _stand_in_engine(script)
    out = tmp_path / "ray"
    try:
        command = [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(out),
                   "--ray", cluster.address, "--model", "local"]  # fmt: skip
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=300, env=_driver_env()
        )
        assert proc.returncode == 0, proc.stderr
        rows = json.loads((out / "results.json").read_text())["tasks"]
        assert len(rows) == 4 and all(r["resolved"] for r in rows)
        # Exactly one server on each node that ran a task, none anywhere else.
        ran_on = {e["node"] for e in _ledger(out) if e["event"] == "attempt"}
        started = re.findall(r"node (.+): bundled model server at \S+ \(pid (\d+)\)", proc.stderr)
        assert sorted(node for node, _ in started) == sorted(ran_on), proc.stderr
        pids = {int(pid) for _, pid in started}
        assert {int(p) for p in (ENGINE_DIR / "starts").read_text().split()} == pids
        # Every task ran the bundled model's way, and every model call it made went to them.
        calls = 0
        for row in rows:
            trace = (out / "tasks" / row["id"] / "fix" / "trace.jsonl").read_text().splitlines()
            events = [json.loads(line) for line in trace]
            assert [e["local"] for e in events if e["type"] == "run"] == [True]
            calls += sum(1 for e in events if e["type"] == "model_call")
        served = [json.loads((ENGINE_DIR / f"served-{pid}.json").read_text()) for pid in pids]
        assert calls >= 4 and sum(len(script) - s["unused"] for s in served) == calls
        # All stopped with the eval (each wrote its report on SIGTERM), none left running.
        assert not [pid for pid in pids if psutil.pid_exists(pid)]
        assert "bundled model servers stopped: pid" in proc.stderr
        assert not _orphans(docker_client)
    finally:
        shutil.rmtree(ENGINE_DIR, ignore_errors=True)
