"""`worker eval --ray` against `worker eval --workers N` on this machine, with the scripted model:
tasks per minute, the per-task overhead the cluster path adds, and the time from a node's death
to its task running again on another node. A local Ray cluster of the same total CPUs (a head
with none, N nodes of one CPU each, all on 127.0.0.2: ../shared/docs/PLATFORM.md).

    python3 bench/cluster.py [--tasks 8] [--cpus 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path: drop it (as bench/sandbox.py does).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from ray.cluster_utils import Cluster  # noqa: E402

from worker.llm.scripted_server import ScriptedServer, tool_call  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FILES = {
    "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    "tests/test_calc.py": (
        "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4]) == 3\n"
    ),
    "conftest.py": "",
}
FIX = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def mean(values):\n"
    "-    return sum(values) / (len(values) - 1)\n+    return sum(values) / len(values)\n"
)
NODE_ENV = {"PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-node"}
GIT = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "init.defaultBranch=main"]


def make_tasks(root: Path, count: int) -> Path:
    lines = []
    for n in range(count):
        repo = root / f"t{n}"
        for rel, text in FILES.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        subprocess.run([*GIT, "init", "-q", str(repo)], check=True)
        subprocess.run([*GIT, "-C", str(repo), "add", "-A"], check=True)
        subprocess.run([*GIT, "-C", str(repo), "commit", "-qm", "bug"], check=True)
        lines.append(json.dumps({"id": f"t{n}", "repo": repo.name}))
    path = root / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def run_eval(tasks: Path, out: Path, base_url: str, *extra: str) -> tuple[float, float]:
    """(wall seconds, seconds until the first task started) of one eval as its own process."""
    command = [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(out)]
    command += ["--model", "scripted", "--base-url", base_url, "--max-steps", "1", *extra]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    first = None
    lines = []
    assert proc.stderr is not None
    for line in proc.stderr:
        lines.append(line)
        if first is None and (": running" in line or ": attempt 1 on" in line):
            first = time.monotonic() - started
    if proc.wait() != 0 or first is None:
        raise SystemExit("".join(lines))
    return time.monotonic() - started, first


def per_task(out: Path) -> float:
    rows = json.loads((out / "results.json").read_text())["tasks"]
    return statistics.median(r["seconds"] + r["recheck_seconds"] for r in rows)


def breakdown(out: Path) -> dict[str, float]:
    """Median seconds of each phase of the committed attempts (cluster.py's `_phases`)."""
    laps: dict[str, list[float]] = {}
    for row in json.loads((out / "results.json").read_text())["tasks"]:
        for side, phases in row["attempts"][-1].get("phases", {}).items():
            for name, seconds in phases.items():
                laps.setdefault(f"{side}.{name}", []).append(seconds)
    return {name: statistics.median(values) for name, values in sorted(laps.items())}


def death_to_rerun(cluster: Cluster, tasks: Path, out: Path) -> float:
    """Seconds from a node's kill to the driver starting its task again on another node."""
    slow = tool_call("apply_patch", {"patch": FIX}, delay=15.0)
    script = [slow] * 2 + [tool_call("apply_patch", {"patch": FIX})] * 8
    with ScriptedServer(script=script) as server:
        command = [sys.executable, "-m", "worker.cli", "eval", str(tasks), "--out", str(out)]
        command += ["--model", "scripted", "--base-url", server.base_url, "--max-steps", "1"]
        command += ["--ray", cluster.address]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
        seen: dict[str, float] = {}

        def read() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                if "attempt 2 on" in line:
                    seen.setdefault("rerun", time.monotonic())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        while len(server.requests) < 2:
            time.sleep(0.1)
        victim = [n for n in cluster.list_all_nodes() if n is not cluster.head_node][0]
        killed = time.monotonic()
        cluster.remove_node(victim, allow_graceful=False)
        cluster.add_node(num_cpus=1, node_ip_address="127.0.0.2", env_vars=dict(NODE_ENV))
        proc.wait()
        reader.join()
    return seen["rerun"] - killed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--no-death", action="store_true", help="skip the node-death timing")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    tasks = make_tasks(root, args.tasks)
    script = [tool_call("apply_patch", {"patch": FIX})] * args.tasks
    with ScriptedServer(script=script) as server:
        workers = ("--workers", str(args.cpus))
        local_s, local_start = run_eval(tasks, root / "local", server.base_url, *workers)
    head = {"num_cpus": 0, "node_ip_address": "127.0.0.2", "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={**head, "env_vars": dict(NODE_ENV)})
    try:
        for _ in range(args.cpus):
            cluster.add_node(num_cpus=1, node_ip_address="127.0.0.2", env_vars=dict(NODE_ENV))
        cluster.wait_for_nodes()
        with ScriptedServer(script=script) as server:
            on_ray = ("--ray", cluster.address)
            ray_s, ray_start = run_eval(tasks, root / "ray", server.base_url, *on_ray)
        rerun_s = None if args.no_death else death_to_rerun(cluster, tasks, root / "death")
    finally:
        cluster.shutdown()
    local_task, ray_task = per_task(root / "local"), per_task(root / "ray")
    # The start (connecting, packing the trees, every node's self-check) is paid once per eval;
    # the rest is spread over the task slots.
    steady = ((ray_s - ray_start) - (local_s - local_start)) / args.tasks * args.cpus
    print(f"tasks: {args.tasks}, CPUs: {args.cpus} (scripted model, one step per task)")
    for name, wall, start, task in (
        (f"local --workers {args.cpus}", local_s, local_start, local_task),
        (f"--ray, {args.cpus} nodes", ray_s, ray_start, ray_task),
    ):
        print(
            f"{name}: {wall:.1f} s, {args.tasks / wall * 60:.1f} tasks/min, first task started "
            f"after {start:.1f} s, median task (fix + re-check) {task:.1f} s"
        )
    print(f"overhead per task after the start: {steady:.2f} s ({steady / local_task:.0%} of one)")
    rows = json.loads((root / "local" / "results.json").read_text())["tasks"]
    local_fix = statistics.median(r["seconds"] for r in rows)
    local_recheck = statistics.median(r["recheck_seconds"] for r in rows)
    print(f"local, median: fix process {local_fix:.2f} s, re-check {local_recheck:.2f} s")
    print("--ray, median seconds per phase (side.phase):")
    phases = breakdown(root / "ray")
    for name, seconds in phases.items():
        print(f"  {name:<24} {seconds:6.3f}")
    # What only the cluster path does on a task's way: every phase but the fix process and the
    # re-check's own work, which a local eval does as well.
    work = ("fix.child", "recheck.recheck")
    added = sum(v for k, v in phases.items() if k not in work)
    print(f"cluster-only phases on a task's path: {added:.2f} s ({added / local_task:.1%} of one)")
    if rerun_s is not None:
        print(f"node death to its task running again elsewhere: {rerun_s:.1f} s")


if __name__ == "__main__":
    main()
