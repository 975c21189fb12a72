"""Where the planted bug's line ranks among the suspects (worker/search/suspects.py), per task.

    python3 bench/locate.py bench/tasks/cache/tasks.jsonl [--only ID ...] [--counts DIR]

For each task with a reference fix (CACHE/reference/ID.patch), runs the traced run of the
failing tests' files in a sandbox, exactly as `worker fix` does with --locate, and prints the
rank of the line the reference fix changes (1 = named first), the traced run's seconds, and at
the end how many tasks have the bug's line in the top 1, 3 and 5. The tasks come from
bench/tasks/generate.py; nothing is tuned on them here, it only prints figures.

With --counts DIR, each task's line counts are kept in DIR/ID.json, and a task whose counts are
there already is ranked from them without a sandbox: a change of the ranking alone is compared
in seconds.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policies.limits import Limits  # noqa: E402
from sandbox.container.client import connect  # noqa: E402
from sandbox.container.image import DEFAULT_IMAGE, ensure_image  # noqa: E402
from sandbox.ecosystems import language_paths  # noqa: E402
from sandbox.ecosystems.python.lines_run import LineCounts, count_lines  # noqa: E402
from sandbox.session import BoxSpec, open_session  # noqa: E402
from sandbox.testrun.run import run_tests  # noqa: E402
from worker.search.suspects import rank  # noqa: E402

LIMITS = Limits(memory_mb=1024, command_timeout_s=300, total_timeout_s=3600)


def bug_lines(patch: str) -> set[int]:
    """The lines of the task's tree that the reference fix changes."""
    out, old = set(), 0
    for line in patch.splitlines():
        if line.startswith("@@"):
            old = int(line.split()[1].split(",")[0][1:])
        elif line.startswith("-") and not line.startswith("---"):
            out.add(old)
            old += 1
        elif line.startswith(" "):
            old += 1
    return out


def trace(repo: Path, test_cmd: str, client) -> tuple[LineCounts, float]:
    """The traced run of a task's failing tests' files, as `worker fix --locate` runs it."""
    work = Path(tempfile.mkdtemp(prefix="worker-locate-"))
    try:
        spec = BoxSpec(client=client, image=DEFAULT_IMAGE, limits=LIMITS)
        with open_session(repo, spec=spec, run_dir=work, keep_logs=False) as session:
            baseline = run_tests(session.box, test_cmd=test_cmd, timeout_s=300)
            files = [f.test_id.split("::")[0] for f in baseline.summary.failures]
            started = time.monotonic()
            counts = count_lines(session.box, test_cmd=test_cmd, test_files=files, timeout_s=120)
            return counts, time.monotonic() - started
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _dump(counts: LineCounts) -> dict:
    lines = {rel: {str(n): list(c) for n, c in per.items()} for rel, per in counts.lines.items()}
    return {"failed": counts.failed, "passed": counts.passed, "lines": lines,
            "why_empty": counts.why_empty}  # fmt: skip


def _load(path: Path) -> LineCounts:
    raw = json.loads(path.read_text())
    lines = {
        rel: {int(n): (c[0], c[1]) for n, c in per.items()} for rel, per in raw["lines"].items()
    }
    return LineCounts(raw["failed"], raw["passed"], lines, raw["why_empty"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tasks", type=Path)
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--counts", type=Path, help="keep (and reuse) each task's line counts here")
    args = p.parse_args()
    folder = args.tasks.resolve().parent
    client = None
    paths = language_paths()
    ranks: list[int | None] = []
    for raw in args.tasks.read_text().splitlines():
        task = json.loads(raw)
        ref = folder / "reference" / f"{task['id']}.patch"
        if not ref.is_file() or (args.only and task["id"] not in args.only):
            continue
        patch = ref.read_text()
        target = patch.splitlines()[0].split("a/", 1)[1]
        lines = bug_lines(patch)
        kept = args.counts / f"{task['id']}.json" if args.counts else None
        if kept is not None and kept.is_file():
            counts, took = _load(kept), 0.0
        else:
            if client is None:
                client = connect()
                ensure_image(client)
            counts, took = trace(folder / task["repo"], task["test_cmd"], client)
            if kept is not None:
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(json.dumps(_dump(counts)))
        found = rank(
            counts, workspace=folder / task["repo"], limit=10_000,
            allowed=lambda rel: paths.check(rel, write=True).allowed,
        )  # fmt: skip
        where = next(
            (i + 1 for i, s in enumerate(found) if s.path == target and s.line in lines), None
        )
        ties = sum(1 for s in found if where and s.score == found[where - 1].score)
        ranks.append(where)
        print(
            f"{task['id']:45} rank {where or '-':>4} (tied with {ties}) of {len(found):4} lines;"
            f" {counts.failed} failing, {counts.passed} passing traced in {took:.1f}s"
            f"{' ' + counts.why_empty if counts.why_empty else ''}",
            flush=True,
        )
    n = len(ranks)
    for k in (1, 3, 5, 10):
        hit = sum(1 for r in ranks if r is not None and r <= k)
        print(f"top {k:2}: {hit} of {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
