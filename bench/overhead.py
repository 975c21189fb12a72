"""Harness overhead: one scripted `worker fix` against the Docker work it cannot avoid.

The trajectory (a scripted model that answers at once, on a two-file repository): read_file,
list_dir, search, run_tests of the failing test by id (a command of its own, so a real run),
then apply_patch and run_tests in one reply; the harness runs the
tests after the patch, finds them fixed and verifies on a clean copy. The physical limit, timed in
the same run on the same image with the docker CLI: two bare `docker run -d` starts (the working
sandbox and the verification one) and four bare `docker exec` pytest runs (baseline, the model's
first run_tests, the run after the patch, the verification). The model's second run_tests sees
the same tree and command as the run after the patch, so it is not in the limit.

Container removal is printed on its own line: the limit leaves it out (it can happen after the
answer is known). Run: python3 bench/overhead.py [--repeat N]; the ratio is printed last.

A second limit adds what the model's first call needs: the same Docker work, with a fresh
interpreter importing the openai SDK and building a client from the start, and nothing after the
baseline until it is ready. The SDK is the project's required client; its import (1.4-1.6 s of
one core here) is longer than a docker run and the baseline together.

Since verify-ahead (hosted models), the run after the patch and the verification run side by
side, so part of the run can beat the limit's sequential sum: the limit stays as the issue set
it.

Our modules' bytecode is cached (in the benchmark's temporary folder), as it is for a user: pip
compiles it at install time, and an editable install writes it on first use. The project's VM
sets PYTHONDONTWRITEBYTECODE=1, under which every run compiles about 60 of our modules from
source again; `--compile-every-run` measures that way (the figures of the first three passes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on sys.path and its name hides the `sandbox`
# package: drop that folder so the imports below find the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from sandbox.container.image import DEFAULT_IMAGE  # noqa: E402
from worker.llm.scripted_server import ScriptedServer, tool_call  # noqa: E402

PHASES = Path(__file__).resolve().parent / "phases.py"

FILES = {
    "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    "tests/test_calc.py": (
        "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n"
    ),
}
PATCH = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""
PYTEST = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]


def script() -> list[dict[str, object]]:
    return [
        tool_call("read_file", {"path": "calc.py"}),
        tool_call("list_dir", {}),
        tool_call("search", {"pattern": "def mean"}),
        tool_call("run_tests", {"tests": ["tests/test_calc.py::test_mean"]}),
        {
            "tool_calls": [
                {"name": "apply_patch", "arguments": {"patch": PATCH}},
                {"name": "run_tests", "arguments": {}},
            ]
        },
    ]


def make_repo(parent: Path) -> Path:
    repo = parent / "calc"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    ident = ["-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), *ident, "commit", "-qm", "buggy"], check=True, env=env)
    return repo


def python_env(tree: Path, pycache: Path | None) -> dict[str, str]:
    """The environment of a fresh interpreter running the code in `tree`; with `pycache`, its
    bytecode is written there once and read back on later runs."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def time_fix(
    repo: Path,
    out: Path,
    tree: Path = ROOT,
    pycache: Path | None = None,
    phases: dict[str, list[float]] | None = None,
) -> tuple[float, float, dict[str, object]]:
    """One `worker fix` (of the code in `tree`) as a user runs it: a fresh interpreter, start
    to exit: (seconds, CPU seconds of it and the children it waited for, report). With `phases`,
    run through bench/phases.py, which times the named phases of the run; each phase's seconds
    (summed over its calls) and when it ended are added there."""
    with ScriptedServer(script=script()) as server:
        env = {**python_env(tree, pycache), "OPENAI_API_KEY": "sk-bench"}
        env.pop("OPENAI_BASE_URL", None)
        timed = out.parent / f"{out.name}-phases.json"
        entry = ["-m", "worker.cli"] if phases is None else [str(PHASES), str(timed)]
        args = [sys.executable, *entry, "fix", "--repo", str(repo), "--out", str(out)]
        args += ["--model", "scripted", "--base-url", server.base_url, "--quiet"]
        started, wall, cpu = time.perf_counter(), time.time(), _children_cpu()
        # From the tree itself: `python -m` puts the working folder first on sys.path, so run
        # from elsewhere (the repository root, say) it would import that folder's `worker`.
        proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=tree, check=False)
        took, cpu = time.perf_counter() - started, _children_cpu() - cpu
        server.assert_all_used()
    if proc.returncode != 0:
        raise SystemExit(f"worker fix failed ({proc.returncode}):\n{proc.stderr}")
    report = json.loads((out / "report.json").read_text())
    if phases is not None:
        add_phases(phases, json.loads(timed.read_text()), wall)
    return took, cpu, report


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def add_phases(phases: dict[str, list[float]], timed: dict[str, Any], wall: float) -> None:
    """One run's phases (bench/phases.py's rows) into `phases`: per phase and thread, the
    seconds of all its calls and when the last one ended, from the process's start."""
    took: dict[str, float] = {}
    ended: dict[str, float] = {}
    for name, thread, start, end in timed["rows"]:
        key = name if thread == "MainThread" else f"{name} [{thread}]"
        took[key] = took.get(key, 0.0) + end - start
        ended[key] = max(ended.get(key, 0.0), end - wall)
    took["(exit: the report written to the process gone)"] = 0.0
    ended["(exit: the report written to the process gone)"] = timed["exit"] - wall
    for key, seconds in took.items():
        phases.setdefault(key, []).append(seconds)
        phases.setdefault(f"{key}\0end", []).append(ended[key])


def docker(*args: str) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, check=True)
    return proc.stdout.strip()


# What any program that reaches the model through the openai SDK does before its first call:
# a fresh interpreter imports the SDK and builds a client.
SDK_READY = (
    "import openai; openai.OpenAI(api_key='sk-bench', base_url='http://127.0.0.1:9/v1')"
    ".chat.completions"
)


def time_limit(
    repo: Path, *, sdk: bool = False, parts: dict[str, list[float]] | None = None
) -> tuple[float, float]:
    """The unavoidable Docker work of the same run: (starts and test runs, removals).

    With `sdk`, the first model call's need is added: a fresh interpreter readies the openai SDK
    (SDK_READY) from the start, and the work after the baseline waits for it. `parts` gets the
    seconds of each start and each test run."""
    parts = {} if parts is None else parts
    work = 0.0
    removal = 0.0
    for runs in (3, 1):  # the working sandbox, then the verification one
        copy = Path(tempfile.mkdtemp(prefix="bench-limit-"))
        shutil.copytree(repo, copy / "w", ignore=shutil.ignore_patterns(".git"))
        os.chmod(copy / "w", 0o777)
        started = time.perf_counter()
        ready = subprocess.Popen([sys.executable, "-c", SDK_READY]) if sdk and runs == 3 else None
        cid = docker(
            "run", "-d", "--network", "none", "-v", f"{copy / 'w'}:/workspace",
            "-w", "/workspace", DEFAULT_IMAGE, "sleep", "infinity",
        )  # fmt: skip
        parts.setdefault("docker run -d", []).append(time.perf_counter() - started)
        for _ in range(runs):
            began = time.perf_counter()
            subprocess.run(["docker", "exec", cid, *PYTEST], capture_output=True, check=False)
            parts.setdefault("docker exec pytest", []).append(time.perf_counter() - began)
            if ready is not None and ready.wait() != 0:
                raise SystemExit("the openai SDK did not import")
            ready = None
        work += time.perf_counter() - started
        started = time.perf_counter()
        docker("rm", "-f", cid)
        removal += time.perf_counter() - started
        shutil.rmtree(copy, ignore_errors=True)
    return work, removal


IMPORTS = {
    "python start (python -c pass)": "pass",
    "import openai (the model SDK, alone)": "import openai",
    "import worker.cli.fix, worker.run.fix": "import worker.cli.fix, worker.run.fix",
}


def time_imports(tree: Path, pycache: Path | None = None) -> dict[str, float]:
    """Fresh interpreters, start to exit: what any Python program that reaches the model
    through the openai SDK pays before its first call, and what our own modules add."""
    env = python_env(tree, pycache)
    took = {}
    for label, code in IMPORTS.items():
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=tree)
        took[label] = time.perf_counter() - started
    return took


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the samples here")
    parser.add_argument(
        "--compare", type=Path, help="another checkout (e.g. main), timed in the same rounds"
    )
    parser.add_argument(
        "--compile-every-run",
        action="store_true",
        help="no bytecode cache for our modules: each run compiles them from source",
    )
    parser.add_argument(
        "--timeline", action="store_true", help="also print the last run's trace, event by event"
    )
    parser.add_argument(
        "--phases",
        action="store_true",
        help="also one run a round through bench/phases.py: where its time goes, phase by phase",
    )
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-overhead-"))
    ours: list[float] = []
    limit: list[float] = []
    with_sdk: list[float] = []
    removal: list[float] = []
    other: list[float] = []
    phases: dict[str, list[float]] = {}
    imports: dict[str, list[float]] = {}
    timeline: list[str] = []
    cpu: list[float] = []
    named: dict[str, list[float]] = {}  # --phases: bench/phases.py's figures
    parts: dict[str, list[float]] = {}  # the limit's own parts
    try:
        repo = make_repo(tmp)
        pycache = None if args.compile_every_run else tmp / "pycache"
        # The warm-up: page cache, image layers, bytecode (for both trees): not what is measured.
        time_fix(repo, tmp / "warm-up", pycache=pycache)
        if args.compare:
            time_fix(repo, tmp / "warm-up-cmp", args.compare, pycache=pycache)
        for i in range(args.repeat):
            took, used, report = time_fix(repo, tmp / f"out{i}", pycache=pycache)
            if report["status"] != "fixed":
                raise SystemExit(f"the scripted run did not end fixed: {report['reason']}")
            ours.append(took)
            cpu.append(used)
            if args.compare:
                other.append(time_fix(repo, tmp / f"cmp{i}", args.compare, pycache=pycache)[0])
            if args.phases:
                time_fix(repo, tmp / f"phases{i}", pycache=pycache, phases=named)
            durations = report.get("durations") or {}
            assert isinstance(durations, dict)
            for key, value in durations.items():
                phases.setdefault(key, []).append(float(value))
            # What the report cannot see: from writing it to the process's exit.
            rest = took - float(durations.get("startup", 0)) - float(durations.get("total", 0))
            phases.setdefault("(exit, after the report)", []).append(rest)
            work, removed = time_limit(repo, parts=parts)
            limit.append(work)
            removal.append(removed)
            with_sdk.append(time_limit(repo, sdk=True)[0])
            for label, value in time_imports(ROOT, pycache).items():
                imports.setdefault(label, []).append(value)
        if args.timeline:
            timeline = trace_lines(tmp / f"out{args.repeat - 1}" / "trace.jsonl", took)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    mine, bare = statistics.median(ours), statistics.median(limit)
    print(f"runs: {args.repeat} (after one warm-up), machine: {os.cpu_count()} cores, "
          f"bytecode {'compiled every run' if args.compile_every_run else 'cached'}")  # fmt: skip
    print(f"worker fix, 5 replies, start to exit        median {mine:6.2f} s  "
          f"(min {min(ours):.2f}, max {max(ours):.2f})")  # fmt: skip
    print(f"  CPU, user+sys, the process and its reaped children median "
          f"{statistics.median(cpu):6.2f} s")  # fmt: skip
    for key, values in sorted(phases.items()):
        label = key if key.startswith("(") else f"report durations.{key}"
        print(f"  {label:<41} median {statistics.median(values):6.2f} s")
    print(f"physical limit: 2 docker run + 4 pytest exec median {bare:6.2f} s  "
          f"(min {min(limit):.2f}, max {max(limit):.2f})")  # fmt: skip
    for label, values in parts.items():
        print(f"  {label:<41} median {statistics.median(values):6.2f} s  ({len(values)} samples)")
    print(f"  bare removal of those 2 containers        median {statistics.median(removal):6.2f} s")
    sdk_limit = statistics.median(with_sdk)
    print(f"  the same, the model's SDK ready first     median {sdk_limit:6.2f} s  "
          f"(min {min(with_sdk):.2f}, max {max(with_sdk):.2f}; "
          f"ratio to it {mine / sdk_limit:.2f})")  # fmt: skip
    print("fresh interpreters (one CPU-bound thread each: Python imports hold the GIL):")
    for label, values in imports.items():
        print(f"  {label:<41} median {statistics.median(values):6.2f} s")
    if other:
        theirs = statistics.median(other)
        print(f"{args.compare}: worker fix, same rounds  median {theirs:6.2f} s  "
              f"ratio {theirs / bare:.2f}; fastest {min(other):.2f} s, "
              f"ratio {min(other) / min(limit):.2f}")  # fmt: skip
    if args.json:
        samples = {"ours": ours, "limit": limit, "removal": removal, "other": other}
        samples["limit_with_sdk"] = with_sdk
        args.json.write_text(json.dumps(samples))
    if named:
        print(phase_lines(named))
    if timeline:
        print("the last run, from its trace (seconds on the run's clock):")
        print("\n".join(timeline))
    # On a shared machine the fastest of each is the least disturbed: said beside the medians.
    print(f"ratio of the fastest runs (min / min): {min(ours) / min(limit):.2f}")
    print(f"ratio (worker fix / physical limit): {mine / bare:.2f} (target <= 1.05)")
    return 0


def phase_lines(named: dict[str, list[float]]) -> str:
    """--phases: each phase's seconds (its calls summed) and when it ended, medians over the
    rounds, in the order they end; a phase on a thread other than the main one is marked."""
    rows = []
    for key, values in named.items():
        if "\0" not in key:
            ended = statistics.median(named[f"{key}\0end"])
            rows.append((ended, key, statistics.median(values), len(values)))
    lines = ["phase by phase, one traced run a round (bench/phases.py; seconds from the start):"]
    lines.append(f"  {'ends at':>7}  {'took':>6}  phase")
    for ended, key, took, n in sorted(rows):
        lines.append(f"  {ended:7.3f}  {took:6.3f}  {key}" + ("" if n == max(r[3] for r in rows)
                     else f" (in {n} rounds)"))  # fmt: skip
    return "\n".join(lines)


def trace_lines(trace: Path, took: float) -> list[str]:
    """One line per trace event: when it ended, what it was, how long it took."""
    lines = []
    for raw in trace.read_text().splitlines():
        event = json.loads(raw)
        what = " ".join(str(event[k]) for k in ("type", "name") if k in event)
        took_s = f"{event['duration_s']:.3f} s" if "duration_s" in event else ""
        lines.append(f"  {event.get('t', 0):7.3f}  {what:<28} {took_s}")
    lines.append(f"  (the process, start to exit: {took:.3f} s)")
    return lines


if __name__ == "__main__":
    sys.exit(main())
