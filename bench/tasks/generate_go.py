"""The public task set's Go tasks: each project of manifest-go.json (small stdlib-only modules
written for this set, in go-projects/), single bugs planted (mutate_go.py), kept where they make
some test fail by id, and each task verified: on a fresh copy of the task's own tree a plain
`go test ./...` fails, naming the failing tests by id, and passes with the reference fix (the
mutation undone).

    python3 bench/tasks/generate_go.py [--cache bench/tasks/cache] [--per-project 8]
        [--seed 11] [--only NAME ...] [--image worker-sandbox:go1.24]
    python3 bench/tasks/generate_go.py --sandbox-check [--cache bench/tasks/cache]

The tests run in a container of the Go image (`docker run`, no network, the tree mounted; one
container per project, a build cache kept across its runs), never on the host: Go is not
assumed there. The ids are `go test -json`'s as worker reads them (`wrap::TestWrap/exact`,
sandbox/ecosystems/go/testjson.py); the exit code is the plain `go test ./...`'s. --sandbox-check:
each task run by `worker sandbox run-tests --json` (no flag, the same image), its failing tests
and passing count compared with the plain run's.

Writes CACHE/go-tasks.jsonl, CACHE/repos/<id>/ and CACHE/reference/<id>.patch. Then:
`worker eval CACHE/go-tasks.jsonl --out DIR --model local`.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BENCH = HERE.parent
sys.path[:] = [str(ROOT), str(HERE), str(BENCH)] + [
    p for p in sys.path if Path(p or ".").resolve() not in (HERE, BENCH)
]

from generate import commit_tree  # type: ignore[import-not-found]  # noqa: E402
from mutate import Mutant, balanced  # type: ignore[import-not-found]  # noqa: E402
from mutate_go import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402

from sandbox.ecosystems.go.testjson import parse_go_test_json  # noqa: E402

MANIFEST = HERE / "manifest-go.json"
IMAGE = "worker-sandbox:go1.24"
GOAL = "make the failing tests pass"
TEST_TIMEOUT_S = 300.0


@dataclass
class GoRun:
    """One `go test ./...` of a tree: its plain exit code and its tests' outcomes by id."""

    exit_code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    problem: str = ""

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o in ("failed", "error"))

    def passing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o == "passed")

    def describe(self) -> str:
        counts = {k: sum(o == k for o in self.outcomes.values()) for k in ("passed", "failed")}
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests"
        return f"{shown} (exit {self.exit_code}){' ' + self.problem if self.problem else ''}"


class GoBox:
    """A container of the Go image with a folder of the host mounted at /w, kept for a
    project's runs (its build cache makes each run after the first incremental)."""

    def __init__(self, work: Path, image: str) -> None:
        self.work = work
        self.name = f"worker-gotasks-{uuid.uuid4().hex[:8]}"
        work.mkdir(parents=True, exist_ok=True)
        os.chmod(work, 0o777)
        subprocess.run(
            ["docker", "run", "-d", "--rm", "--name", self.name, "--network", "none",
             "-v", f"{work}:/w", "-e", "GOCACHE=/tmp/gocache", "-e", "GOFLAGS=-mod=readonly",
             "-e", "GOTOOLCHAIN=local", "-e", "HOME=/tmp", "--entrypoint", "sleep", image,
             "infinity"],
            check=True, capture_output=True,
        )  # fmt: skip

    def close(self) -> None:
        subprocess.run(["docker", "rm", "-f", self.name], capture_output=True, check=False)

    def test(self, folder: str, *, timeout_s: float = TEST_TIMEOUT_S) -> GoRun:
        """`go test ./...` in /w/<folder>: plain (its exit code), then with -json (the ids)."""
        script = (
            f"cd /w/{folder} && go test ./... >/dev/null 2>&1; echo $? > /tmp/plain; "
            "go test -json ./... 2>/dev/null; exit $(cat /tmp/plain)"
        )
        try:
            done = subprocess.run(
                ["docker", "exec", self.name, "sh", "-c", script],
                capture_output=True, timeout=timeout_s, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return GoRun(exit_code=124, problem="timed out")
        try:
            summary = parse_go_test_json(done.stdout, module=_module(self.work / folder))
        except ValueError as exc:
            return GoRun(exit_code=done.returncode, problem=str(exc))
        return GoRun(exit_code=done.returncode, outcomes=dict(summary.outcomes))


def _module(tree: Path) -> str | None:
    for line in (tree / "go.mod").read_text(encoding="utf-8").splitlines():
        if line.startswith("module "):
            return line.split()[1]
    return None


def fresh_copy(tree: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree, dest, symlinks=True)


def source(project: dict, cache: Path) -> Path:
    """The project's tree (go-projects/<name>), a repository of its own."""
    tree = cache / "go-src" / project["name"]
    fresh_copy(HERE / project["path"], tree)
    commit_tree(tree, f"{project['name']}: the public task set's Go module")
    return tree


def sources(project: dict, tree: Path) -> list[str]:
    found = {p.relative_to(tree).as_posix() for g in project["sources"] for p in tree.glob(g)}
    return [f for f in sorted(found) if not is_test_path(f)]


def screen(project: dict, tree: Path, box: GoBox, *, want: int, seed: int) -> list[Mutant]:
    """Mutants that make some test fail by id (not a package failing to build, not a hang),
    one per function, balanced over kinds."""
    pool: list[Mutant] = []
    for rel in sources(project, tree):
        pool += mutants((tree / rel).read_text(encoding="utf-8"), path=rel)
    order = balanced(pool, random.Random(f"{seed}-{project['name']}"))
    copy = box.work / "screen"
    fresh_copy(tree, copy)
    kept: list[Mutant] = []
    used: set[tuple[str, str]] = set()
    tried = 0
    for m in order:
        if len(kept) >= want:
            break
        if (m.path, m.function) in used:
            continue
        tried += 1
        target = copy / m.path
        original = target.read_text(encoding="utf-8")
        target.write_text(m.apply(original), encoding="utf-8")
        try:
            run = box.test("screen", timeout_s=90)
        finally:
            target.write_text(original, encoding="utf-8")
        failing = run.failing()
        if run.exit_code not in (0, 124) and failing and all("::" in t for t in failing):
            kept.append(m)
            used.add((m.path, m.function))
    print(f"{project['name']}: {len(kept)} of {tried} mutants tried make a test fail", flush=True)
    return kept


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: GoBox) -> dict | None:
    """One task's tree, its reference fix, and the proof on a fresh copy of that tree: a plain
    run fails (the failing ids recorded), and passes with the fix."""
    task_id = f"{project['name']}-{m.function.replace('.', '_')}-{m.line}-{m.kind}"
    repo = cache / "repos" / task_id
    fresh_copy(tree, repo)
    shutil.rmtree(repo / ".git")
    target = repo / m.path
    fixed = target.read_text(encoding="utf-8")
    buggy = m.apply(fixed)
    target.write_text(buggy, encoding="utf-8")
    commit_tree(repo, "the task")
    reference = "".join(
        difflib.unified_diff(
            buggy.splitlines(keepends=True), fixed.splitlines(keepends=True),
            fromfile=f"a/{m.path}", tofile=f"b/{m.path}",
        )
    )  # fmt: skip
    check = box.work / "check"
    fresh_copy(repo, check)
    before = box.test("check")
    (check / m.path).write_text(fixed, encoding="utf-8")
    after = box.test("check")
    shutil.rmtree(check, ignore_errors=True)
    failing, passing = before.failing(), before.passing()
    if before.problem or not failing or before.exit_code == 0:
        print(f"  {task_id}: dropped (no failing test by id before the fix: {before.problem})")
        return None
    if after.problem or after.exit_code != 0 or after.failing():
        print(f"  {task_id}: dropped (the fix does not pass: {after.describe()})")
        return None
    (cache / "reference").mkdir(exist_ok=True)
    (cache / "reference" / f"{task_id}.patch").write_text(reference, encoding="utf-8")
    print(f"  {task_id}: {before.describe()}: {len(failing)} failing", flush=True)
    return {
        "task": {
            "id": task_id, "repo": f"repos/{task_id}", "goal": GOAL,
            "test_cmd": project["test"], "fail_to_pass": failing, "pass_to_pass": passing,
        },
        "manifest": {
            "id": task_id, "path": m.path, "line": m.line, "kind": m.kind, "old": m.old,
            "new": m.new, "fail_to_pass": failing, "passed": len(passing),
        },
    }  # fmt: skip


def sandbox_check(cache: Path, *, image: str, timeout_s: float = 600.0) -> int:
    """Each task of CACHE/go-tasks.jsonl in the sandbox (`worker sandbox run-tests --json`, no
    flag but the image): its failing tests must be the task's `fail_to_pass` and its passing
    count the plain run's. The number of tasks that differ."""
    differ = 0
    for line in (cache / "go-tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--json",
                   "--repo", str(cache / task["repo"]), "--image", image]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout_s
        )
        summary = json.loads(done.stdout[done.stdout.index("{") :]) if "{" in done.stdout else {}
        failing = sorted(summary.get("failing") or [])
        passed = (summary.get("counts") or {}).get("passed")
        want = len(task["pass_to_pass"])
        same = failing == sorted(task["fail_to_pass"]) and passed == want
        differ += not same
        last = (done.stderr.strip().splitlines() or [""])[-1] if not summary else ""
        print(f"{task['id']}: sandbox {len(failing)} failing, {passed} passed (plain "
              f"{len(task['fail_to_pass'])}, {want}): {'equal' if same else 'DIFFERS'} "
              f"{summary.get('headline', last)}", flush=True)  # fmt: skip
    print(f"{differ} task(s) differ from the plain go test ./... baseline")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--per-project", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help="project names to build (default: all)")
    parser.add_argument("--image", default=IMAGE, help=f"the Go image (default {IMAGE})")
    parser.add_argument("--write-manifest", action="store_true",
                        help="each task's failing ids into manifest-go.json")  # fmt: skip
    parser.add_argument("--sandbox-check", action="store_true",
                        help="run CACHE/go-tasks.jsonl's tasks in the sandbox, against the "
                        "plain runs' baselines")  # fmt: skip
    args = parser.parse_args()
    cache = args.cache.resolve()
    if args.sandbox_check:
        return 1 if sandbox_check(cache, image=args.image) else 0
    cache.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    tasks: list[dict] = []
    written: dict[str, list[dict]] = {}
    for project in manifest["projects"]:
        if args.only and project["name"] not in args.only:
            continue
        tree = source(project, cache)
        box = GoBox(cache / "go-work" / project["name"], args.image)
        try:
            fresh_copy(tree, box.work / "base")
            base = box.test("base")
            print(f"{project['name']}: baseline {base.describe()}", flush=True)
            if base.problem or base.exit_code != 0 or base.failing():
                raise SystemExit(f"{project['name']}: tests fail before any bug")
            kept = screen(project, tree, box, want=args.per_project, seed=args.seed)
            for m in kept:
                built = build_task(project, tree, m, cache, box)
                if built is not None:
                    tasks.append(built["task"])
                    written.setdefault(project["name"], []).append(built["manifest"])
        finally:
            box.close()
    if args.write_manifest:
        manifest["tasks"] = {"seed": args.seed, "per_project": args.per_project} | {
            p["name"]: written.get(p["name"], []) for p in manifest["projects"]
        }
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    out = cache / "go-tasks.jsonl"
    out.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    print(f"{len(tasks)} tasks ({len(written)} projects): {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
