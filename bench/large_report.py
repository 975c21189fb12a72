"""A suite of many tests in the sandbox, one of them failing: what its JUnit report costs.

The suite of tests/test_large_suite.py (one parametrized test, run by its fast conftest), with
--tests tests. Prints the test run's time (pytest inside the container, and the whole
`run_tests` call around it), the report's size, its size as the runner sends it (zlib level 1),
the time to compress and to inflate it, and `parse_junit`'s time (median of three) and peak
memory (tracemalloc, one more pass). Run: python3 bench/large_report.py [--tests N]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on sys.path and its name hides the `sandbox`
# package: drop that folder so the imports below find the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from policies.limits import Limits  # noqa: E402
from sandbox.container.capture import inflate  # noqa: E402
from sandbox.container.client import connect  # noqa: E402
from sandbox.container.image import DEFAULT_IMAGE, ensure_image  # noqa: E402
from sandbox.session import BoxSpec, open_session  # noqa: E402
from sandbox.testrun.junit import parse_junit  # noqa: E402
from sandbox.testrun.run import run_tests  # noqa: E402
from tests.test_large_suite import FAST_CONFTEST  # noqa: E402

LIMITS = Limits(command_timeout_s=1200, total_timeout_s=3600)


def make_repo(folder: Path, tests: int) -> Path:
    failing = tests * 7 // 9
    files = {
        "calc.py": f"def double(n):\n    return 0 if n == {failing} else n + n\n",
        "tests/test_many.py": (
            "import pytest\n\nfrom calc import double\n\n\n"
            f"@pytest.mark.parametrize('n', range({tests}))\n"
            "def test_double(n):\n    assert double(n) == n + n\n"
        ),
        "conftest.py": FAST_CONFTEST,
    }
    repo = folder / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "PATH": "/usr/bin:/bin"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "suite"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env)
    return repo


def timed(fn, repeat: int = 3) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=100_000)
    args = parser.parse_args()
    client = connect()
    ensure_image(client)
    work = Path(tempfile.mkdtemp(prefix="worker-large-report-"))
    try:
        repo = make_repo(work, args.tests)
        spec = BoxSpec(client=client, image=DEFAULT_IMAGE, limits=LIMITS)
        with open_session(repo, spec=spec, run_dir=work / "run", keep_logs=False) as session:
            started = time.monotonic()
            run = run_tests(session.box, test_cmd="python -m pytest")
            whole = time.monotonic() - started
        report = run.result.captured
        assert report is not None and run.summary is not None, run.render()
        packed = zlib.compress(report, 1)
        ratio = len(report) / len(packed)
        tracemalloc.start()
        parse_junit(report)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        rows = [
            ("tests", f"{run.summary.total:,} ({run.summary.failing_ids()})"),
            ("pytest in the sandbox", f"{run.result.duration_s:.1f} s"),
            ("run_tests, whole call", f"{whole:.1f} s"),
            ("report", f"{len(report) / 1e6:.1f} MB"),
            ("compressed (zlib 1)", f"{len(packed) / 1e6:.2f} MB ({ratio:.0f}:1)"),
            ("compress", f"{timed(lambda: zlib.compress(report, 1)):.2f} s"),
            ("inflate", f"{timed(lambda: inflate(packed, name='report')):.2f} s"),
            ("parse_junit", f"{timed(lambda: parse_junit(report)):.2f} s"),
            ("parse_junit peak", f"{peak / 2**20:.0f} MiB (tracemalloc)"),
        ]
        for name, value in rows:
            print(f"{name:24} {value}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
