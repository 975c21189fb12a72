"""A step's time on a large suite: the harness's test run after an edit, before and after the
failing tests run first (worker/loop/failing_first.py).

A generated project (a temp folder, removed at the end): one planted failure,
`tests/test_calc.py::test_mean`, and N passing tests in files of 50 under `tests/gen/`, each
busy for `--test-ms` of CPU (a suite that computes, not one that sleeps). `worker fix` with a
scripted model, as a user runs it: two replies, an edit that does not fix (the step the model
then waits for) and one that does; the run verifies the fix on a clean copy and exits.

Printed per tree, from each run's trace and report: the baseline, each edit's tool call (the
edit and the harness's test run after it: the step), the verification after the fixing edit,
and the whole run. `--compare TREE` times another checkout (e.g. the commit before this change,
as a git worktree) in the same rounds; extra `worker fix` flags go after `--`.

    python3 bench/step_time.py [--tests 5000] [--test-ms 5] [--repeat 1] [--compare TREE] [-- FLAGS]

With `--tasks TASKS` (a task file of bench/tasks/, e.g. the public set's), no `worker fix`: for
each task, its suite in a sandbox, whole and its failing tests by id, twice, the second round
printed (the first beside it): what a run by id saves, or costs, on small real suites.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on sys.path and its name hides the `sandbox`
# package: drop that folder so the imports below find the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from worker.llm.scripted_server import ScriptedServer, tool_call  # noqa: E402

PER_FILE = 50
CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"
TEST = "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n"
GENERATED = """\
import time

import pytest


def busy():
    end = time.perf_counter() + {seconds}
    while time.perf_counter() < end:
        pass


@pytest.mark.parametrize("n", range({count}))
def test_case(n):
    busy()
    assert n >= 0
"""
NOT_FIXING = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return 1.0 * sum(values) / (len(values) - 1)
"""
FIXING = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return 1.0 * sum(values) / (len(values) - 1)
+    return 1.0 * sum(values) / len(values)
"""
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def make_repo(parent: Path, tests: int, test_ms: float) -> Path:
    repo = parent / "big"
    (repo / "tests" / "gen").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_calc.py").write_text(TEST)
    for i in range(0, tests, PER_FILE):
        body = GENERATED.format(seconds=test_ms / 1000, count=min(PER_FILE, tests - i))
        (repo / "tests" / "gen" / f"test_g{i // PER_FILE:04d}.py").write_text(body)
    (repo / "conftest.py").write_text("")
    ident = ["-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=GIT_ENV)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=GIT_ENV)
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-qm", "x"], check=True, env=GIT_ENV)
    return repo


def time_fix(repo: Path, out: Path, tree: Path, flags: list[str]) -> dict[str, float]:
    """One `worker fix` of the code in `tree`; the seconds of its parts."""
    script = [
        tool_call("apply_patch", {"patch": NOT_FIXING}),
        tool_call("apply_patch", {"patch": FIXING}),
    ]
    with ScriptedServer(script=script) as server:
        env = {**os.environ, "PYTHONPATH": str(tree), "OPENAI_API_KEY": "sk-bench"}
        env.pop("OPENAI_BASE_URL", None)
        args = [sys.executable, "-m", "worker.cli", "fix", "--repo", str(repo), "--out", str(out)]
        args += ["--model", "scripted", "--base-url", server.base_url, "--quiet", *flags]
        started = time.perf_counter()
        proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tree, check=False)
        took = time.perf_counter() - started
        server.assert_all_used()
    report = json.loads((out / "report.json").read_text())
    if proc.returncode != 0 or report["status"] != "fixed":
        raise SystemExit(f"worker fix did not end fixed ({proc.returncode}):\n{proc.stderr}")
    events = [json.loads(line) for line in (out / "trace.jsonl").open()]
    edits = [e["duration_s"] for e in events if e.get("type") == "tool_call"]
    verified = [e["duration_s"] for e in events if e.get("type") == "verification"]
    return {
        "baseline": report["tests_before"]["duration_s"],
        "step: edit that does not fix": edits[0],
        "step: edit that fixes": edits[1],
        "verification after it": verified[0],
        "worker fix, start to exit": took,
    }


def time_tasks(tasks: Path) -> None:
    """Each task's suite, whole and by id of its failing tests, in one sandbox."""
    from policies.limits import Limits
    from sandbox.container.client import connect
    from sandbox.container.image import DEFAULT_IMAGE
    from sandbox.session import BoxSpec, open_session
    from sandbox.testrun.run import run_tests

    spec = BoxSpec(client=connect(), image=DEFAULT_IMAGE, limits=Limits())
    print(f"{'task':<44}{'failing':>10}{'whole':>8}{'by id':>8}  (first round)")
    for line in tasks.read_text().splitlines():
        task = json.loads(line)
        if task["id"].startswith("example-"):
            continue
        command, rounds, total = task["test_cmd"], [], 0
        with (
            tempfile.TemporaryDirectory() as run_dir,
            open_session(
                tasks.parent / task["repo"], spec=spec, run_dir=Path(run_dir), keep_logs=False
            ) as session,
        ):
            for _ in range(2):
                whole = run_tests(session.box, test_cmd=command, timeout_s=300)
                assert whole.summary is not None, f"{task['id']}: no report"
                ids, total = sorted(set(whole.summary.failing_ids())), whole.summary.total
                by_id = run_tests(session.box, test_cmd=command, test_ids=ids, timeout_s=300)
                rounds.append((whole.result.duration_s, by_id.result.duration_s))
        (w0, b0), (w1, b1) = rounds
        failing = f"{len(ids)}/{total}"
        print(f"{task['id']:<44}{failing:>10}{w1:8.2f}{b1:8.2f}  ({w0:.2f}, {b0:.2f})")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--tests", type=int, default=5000, help="passing tests besides the failing one"
    )
    parser.add_argument("--test-ms", type=float, default=5.0, help="each passing test's CPU time")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--compare", type=Path, help="another checkout, timed in the same rounds")
    parser.add_argument("--tasks", type=Path, help="time each task's suite, whole and by id")
    parser.add_argument("flags", nargs="*", help="worker fix flags, after --")
    args = parser.parse_args()
    if args.tasks:
        time_tasks(args.tasks)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-step-"))
    trees = [ROOT] + ([args.compare.resolve()] if args.compare else [])
    samples: dict[Path, dict[str, list[float]]] = {tree: {} for tree in trees}
    try:
        repo = make_repo(tmp, args.tests, args.test_ms)
        for i in range(args.repeat):
            for tree in trees:
                parts = time_fix(repo, tmp / f"out-{i}-{trees.index(tree)}", tree, args.flags)
                for key, value in parts.items():
                    samples[tree].setdefault(key, []).append(value)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    flags = " ".join(args.flags) or "none"
    print(f"{args.tests + 1} tests ({args.tests} of {args.test_ms:g} ms CPU, 1 failing), "
          f"{os.cpu_count()} cores, {args.repeat} round(s), worker fix flags: {flags}")  # fmt: skip
    keys = list(samples[ROOT])
    print(f"{'seconds (median)':<32}" + "".join(f"{_name(t):>16}" for t in trees))
    for key in keys:
        row = "".join(f"{statistics.median(samples[t][key]):16.2f}" for t in trees)
        print(f"{key:<32}{row}")
    return 0


def _name(tree: Path) -> str:
    head = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return (head.stdout.strip() or tree.name)[:14]


if __name__ == "__main__":
    sys.exit(main())
