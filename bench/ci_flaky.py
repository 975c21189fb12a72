"""`worker ci` on a red build whose only failure is flaky: model calls (must be 0) and wall time,
against N bare `docker run`s of the same failing test in the same image (the physical floor of
N re-runs in fresh containers).

    python3 bench/ci_flaky.py [--reruns N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path: drop it (as bench/sandbox.py does).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from sandbox.container.image import DEFAULT_IMAGE  # noqa: E402
from worker.llm.scripted_server import ScriptedServer  # noqa: E402

# Order-dependent: fails in the whole suite, passes when re-run alone (deterministic flakiness).
FILES = {
    "conftest.py": "",
    "tests/test_order.py": (
        "STATE = []\n\n\ndef test_a_pollutes():\n    STATE.append(1)\n\n\n"
        "def test_b_polluted():\n    assert not STATE\n"
    ),
}
FLAKY_ID = "tests/test_order.py::test_b_polluted"


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    who = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b"}
    env = {**os.environ, **who, "GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "red"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    return repo


def bare_runs(repo: Path, n: int) -> float:
    """N `docker run --rm` of pytest on the failing test, no hardening, no copy: the floor."""
    started = time.monotonic()
    for _ in range(n):
        subprocess.run(
            ["docker", "run", "--rm", "--network=none", "-v", f"{repo}:/w:ro", "-w", "/w",
             DEFAULT_IMAGE, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", FLAKY_ID],
            capture_output=True, check=False,
        )  # fmt: skip
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ci-") as tmp:
        repo = make_repo(Path(tmp))
        out = Path(tmp) / "out"
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench"}
        with ScriptedServer(script=[]) as server:
            started = time.monotonic()
            proc = subprocess.run(
                [sys.executable, "-m", "worker.cli", "ci", "--repo", str(repo), "--out", str(out),
                 "--model", "scripted", "--base-url", server.base_url, "--reruns",
                 str(args.reruns)],
                capture_output=True, text=True, env=env, check=False,
            )  # fmt: skip
            wall = time.monotonic() - started
            calls = len(server.requests)
        report = json.loads((out / "report.json").read_text())
        floor = bare_runs(repo, args.reruns + 1)
    durations = report["durations"]
    print(f"worker ci, flaky-only build, --reruns {args.reruns}: exit {proc.returncode} "
          f"({report['status']}), model calls {calls}, wall {wall:.1f}s "
          f"(triage {durations.get('triage', 0):.1f}s)")  # fmt: skip
    print(
        f"bare docker run x{args.reruns + 1} (the sandbox run and {args.reruns} re-runs): "
        f"{floor:.1f}s"
    )
    print(f"overhead over bare runs: {wall - floor:.1f}s ({wall / floor:.2f}x)")
    return 0 if calls == 0 and proc.returncode == 4 else 1


if __name__ == "__main__":
    sys.exit(main())
