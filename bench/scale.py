"""How a run's start-up cost grows with the repository: 1,000, 10,000 and 50,000 files.

For each size, a generated repository (a temp folder, removed at the end; nothing committed): a
failing test in `tests/`, and N small Python modules in folders of 100 under `pkg/`, committed.

- `worker fix` with a scripted model, as a user runs it (a fresh `python -m worker.cli`): the
  seconds from the process start to the model's first request (the scripted server, in this
  process, notes when it arrives: the first tool call follows it at once), and the peak memory of
  the worker's process tree (psutil, sampled every 20 ms: Python, git, the docker CLI; not the
  daemon nor the container). The run then patches, re-runs and verifies: the time to exit is
  printed too.
- The bare work, side by side in the same round: `cp -a` of the same files (not `.git`), a bare
  `docker run -d` on that copy, and a `docker exec` of the same test command (the baseline the
  run needs before it can ask the model anything); peak memory of those CLI processes.

The ratio (worker / bare) is printed per size, and the cost per 1,000 files between sizes, which
is constant for a linear curve. Run: python3 bench/scale.py [--sizes 1000 10000 50000] [--repeat 3]
With --copies: only the snapshot's copy and shadow `git add`, each way (before, now, cp -a).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on sys.path and its name hides the `sandbox`
# package: drop that folder so the imports below find the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from sandbox.container.image import DEFAULT_IMAGE  # noqa: E402
from worker.llm.scripted_server import ScriptedServer, tool_call  # noqa: E402

CALC = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"
TEST = "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n"
MODULE = '"""Module {i}."""\n\n\ndef f{i}(x):\n    return x + {i}\n'
PATCH = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""
TEST_CMD = "python -m pytest -q -p no:cacheprovider tests"
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def make_repo(parent: Path, files: int) -> Path:
    """A committed repository of `files` modules plus the failing test."""
    repo = parent / f"repo{files}"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text(CALC)
    (repo / "tests" / "test_calc.py").write_text(TEST)
    for i in range(files):
        folder = repo / "pkg" / f"d{i // 100:04d}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"m{i:05d}.py").write_text(MODULE.format(i=i))
    # No automatic gc in the background: it would collide with the explicit one below.
    ident = ["-c", "user.name=b", "-c", "user.email=b@b", "-c", "gc.auto=0"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=GIT_ENV)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=GIT_ENV)
    subprocess.run(
        ["git", "-C", str(repo), *ident, "commit", "-qm", "buggy"], check=True, env=GIT_ENV
    )
    subprocess.run(["git", "-C", str(repo), "gc", "-q"], check=True, env=GIT_ENV)
    return repo


class PeakMemory:
    """Sample the summed RSS of a process and all its descendants until it exits."""

    def __init__(self, *, pid: int) -> None:
        self.peak = 0
        self._pid = pid
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._thread.join()

    def _sample(self) -> None:
        try:
            root = psutil.Process(self._pid)
            while root.is_running() and root.status() != psutil.STATUS_ZOMBIE:
                total = 0
                for proc in [root, *root.children(recursive=True)]:
                    try:
                        total += proc.memory_info().rss
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
                time.sleep(0.02)
        except psutil.Error:
            pass


def run_measured(args: list[str], **kwargs: Any) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run a command to its end; (the completed process, peak RSS of its tree in bytes)."""
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
    )
    with PeakMemory(pid=proc.pid) as memory:
        out, err = proc.communicate()
    return subprocess.CompletedProcess(args, proc.returncode, out, err), memory.peak


def time_worker(repo: Path, out: Path) -> tuple[float, float, int]:
    """(seconds to the first model request, seconds to exit, peak RSS) of one `worker fix`."""
    first: list[float] = []

    def first_reply(_body: dict[str, Any]) -> dict[str, Any]:
        first.append(time.perf_counter())
        return tool_call("read_file", {"path": "calc.py"})

    script: list[Callable[[dict[str, Any]], dict[str, Any]] | dict[str, Any]] = [
        first_reply,
        {
            "tool_calls": [
                {"name": "apply_patch", "arguments": {"patch": PATCH}},
                {"name": "run_tests", "arguments": {}},
            ]
        },
    ]
    with ScriptedServer(script=script) as server:
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "PYTHONPATH": str(ROOT)}
        env.pop("OPENAI_BASE_URL", None)
        args = [sys.executable, "-m", "worker.cli", "fix", "--repo", str(repo), "--out", str(out)]
        args += ["--model", "scripted", "--base-url", server.base_url, "--quiet"]
        args += ["--test-cmd", TEST_CMD]
        started = time.perf_counter()
        proc, peak = run_measured(args, env=env)
        took = time.perf_counter() - started
    if proc.returncode != 0 or not first:
        raise SystemExit(f"worker fix failed ({proc.returncode}):\n{proc.stderr}")
    return first[0] - started, took, peak


def time_bare(repo: Path, parent: Path) -> tuple[float, float, float, float, int]:
    """(cp -a, docker run, docker exec of the tests, total, peak RSS of the CLI processes)."""
    dest = Path(tempfile.mkdtemp(prefix="bench-scale-bare-", dir=parent))
    entries = [str(p) for p in repo.iterdir() if p.name != ".git"]
    peak = 0
    try:
        started = time.perf_counter()
        _, mem = run_measured(["cp", "-a", *entries, str(dest)])
        copied = time.perf_counter()
        peak = max(peak, mem)
        os.chmod(dest, 0o777)
        proc, mem = run_measured(
            ["docker", "run", "-d", "--network", "none", "-v", f"{dest}:/workspace",
             "-w", "/workspace", DEFAULT_IMAGE, "sleep", "infinity"]
        )  # fmt: skip
        peak = max(peak, mem)
        cid = proc.stdout.strip()
        ran = time.perf_counter()
        _, mem = run_measured(["docker", "exec", cid, *TEST_CMD.split()])
        peak = max(peak, mem)
        tested = time.perf_counter()
        subprocess.run(["docker", "rm", "-f", cid], capture_output=True, check=False)
    finally:
        subprocess.run(["rm", "-rf", str(dest)], check=False)
    return copied - started, ran - copied, tested - ran, tested - started, peak


def copy_per_file(repo: Path, files: list[str], dest: Path) -> None:
    """The snapshot's copy before the tar pipe: shutil.copy2 per file."""
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(repo / rel, dest / rel, follow_symlinks=False)


def shadow_add(tree: Path, git_dir: Path, *config: str) -> None:
    env = {**GIT_ENV, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(tree)}
    subprocess.run(["git", "init", "-q"], env=env, check=True)
    subprocess.run(["git", *config, "add", "-A", "."], env=env, cwd=tree, check=True)


def compare_copies(sizes: list[int], repeat: int) -> None:
    """The copy and the shadow `git add` alone, each way in turn, interleaved: on a shared disk
    the same copy varies tenfold from one minute to the next, so only interleaved medians say
    which way is faster."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-copies-"))
    try:
        for size in sizes:
            repo = make_repo(tmp, size)
            for name, values in time_copies(repo, tmp, repeat).items():
                print(
                    f"{size:>6} files: {name:<32} median {statistics.median(values):6.2f} s"
                    f" (min {min(values):.2f}, max {max(values):.2f})",
                    flush=True,
                )
            shutil.rmtree(repo, ignore_errors=True)
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def time_copies(repo: Path, tmp: Path, repeat: int) -> dict[str, list[float]]:
    from sandbox.worktree.workspace import _copy_files, tree_files

    files = tree_files(repo)
    entries = [str(p) for p in repo.iterdir() if p.name != ".git"]
    ways: dict[str, Callable[[Path], object]] = {
        "cp -a": lambda d: subprocess.run(["cp", "-a", *entries, str(d)], check=True),
        "copy2 per file (before)": lambda d: copy_per_file(repo, files, d),
        "tar pipe (now)": lambda d: _copy_files(repo, files, d),
        "git add, loose objects (before)": lambda d: shadow_add(repo, d / "g.git"),
        "git add, one pack (now)": lambda d: shadow_add(
            repo, d / "g.git", "-c", "core.bigFileThreshold=1"
        ),
    }
    took: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeat):
        for name, way in ways.items():
            dest = Path(tempfile.mkdtemp(dir=tmp))
            started = time.perf_counter()
            way(dest)
            took[name].append(time.perf_counter() - started)
            subprocess.run(["rm", "-rf", str(dest)], check=True)
    return took


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 50000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--copies", action="store_true", help="only the copy and the shadow git add, each way"
    )
    args = parser.parse_args()
    if args.copies:
        compare_copies(args.sizes, args.repeat)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    rows: list[tuple[int, float, float, float, float, float, float, int, int]] = []
    try:
        for size in args.sizes:
            repo = make_repo(tmp, size)
            time_worker(repo, tmp / f"warm{size}")  # page cache: not what is measured
            firsts, exits, peaks, bares, copies, starts, execs, bare_peaks = (
                [], [], [], [], [], [], [], [],
            )  # fmt: skip
            for i in range(args.repeat):
                first, took, peak = time_worker(repo, tmp / f"out{size}-{i}")
                copy, start, exe, bare, bare_peak = time_bare(repo, tmp)
                firsts.append(first)
                exits.append(took)
                peaks.append(peak)
                bares.append(bare)
                copies.append(copy)
                starts.append(start)
                execs.append(exe)
                bare_peaks.append(bare_peak)
            med = statistics.median
            row = (
                size, med(firsts), med(exits), med(bares), med(copies), med(starts), med(execs),
                max(peaks), max(bare_peaks),
            )  # fmt: skip
            rows.append(row)
            print(
                f"{size:>6} files: worker to first model call {row[1]:6.2f} s (exit {row[2]:.2f} s,"
                f" peak {row[7] / 2**20:.0f} MiB) | bare {row[3]:.2f} s (cp -a {row[4]:.2f},"
                f" docker run {row[5]:.2f}, exec tests {row[6]:.2f}; peak"
                f" {row[8] / 2**20:.0f} MiB) | ratio {row[1] / row[3]:.2f}",
                flush=True,
            )
            shutil.rmtree(repo, ignore_errors=True)
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    print(f"runs: {args.repeat} per size (after one warm-up), medians; {os.cpu_count()} cores")
    for before, after in zip(rows, rows[1:], strict=False):
        files = (after[0] - before[0]) / 1000
        print(
            f"per 1,000 files from {before[0]} to {after[0]}: worker"
            f" {(after[1] - before[1]) / files:.3f} s, bare {(after[3] - before[3]) / files:.3f} s"
        )
    print("ratio (worker to first model call / bare): " + ", ".join(
        f"{row[0]}: {row[1] / row[3]:.2f}" for row in rows
    ) + " (target <= 1.5 at every size)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
