"""The public task set's JavaScript and TypeScript tasks: fetch each project of manifest-node.json
at its pinned commit, plant single bugs (mutate_js.py), keep those that make some test fail, and
verify each task: on a fresh install of the task's own tree, a plain `npm ci && npm test` (the
project's package manager) fails, naming the failing tests by id, and passes with the reference
fix (the mutation undone).

    python3 bench/tasks/generate_node.py [--cache bench/tasks/cache] [--per-project 8]
        [--seed 11] [--only NAME ...] [--baseline] [--write-manifest]
    python3 bench/tasks/generate_node.py --sandbox-check [--cache bench/tasks/cache]

Runs on the host, with the host's Node and the project's package manager (pnpm and yarn by
corepack), as the corpus's references do (bench/node_host.py): the projects are the ones the
manifest names, at pinned commits. --baseline: the untouched trees alone. --write-manifest:
each task's failing tests by id into manifest-node.json's `tasks` (the figures a sandbox run of
the same tree must give). --sandbox-check: each task run by `worker sandbox run-tests`, its
failing and passing tests compared with the host's.

Writes CACHE/node-tasks.jsonl, CACHE/repos/<id>/ (one tree per task, no node_modules: worker's
set-up installs it) and CACHE/reference/<id>.patch. Then: `worker eval
CACHE/node-tasks.jsonl --out DIR --model local`.
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
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BENCH = HERE.parent
sys.path[:] = [str(ROOT), str(HERE), str(BENCH)] + [
    p for p in sys.path if Path(p or ".").resolve() not in (HERE, BENCH)
]

from mutate import Mutant, balanced  # type: ignore[import-not-found]  # noqa: E402
from mutate_js import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402
from node_host import HostRun, node_env, run_shell, run_tests  # noqa: E402

MANIFEST = HERE / "manifest-node.json"
GOAL = "make the failing tests pass"
INSTALL_TIMEOUT_S = 600.0
TEST_TIMEOUT_S = 300.0
SCREEN_TIMEOUT_S = 90.0
MIRROR = Path("/work/.mirror")


def commit_tree(tree: Path, message: str) -> None:
    """A repository of its own (generate.py's: the sandbox copies a tree's git files)."""
    from generate import commit_tree as commit  # type: ignore[import-not-found]

    commit(tree, message)


def source(project: dict, cache: Path) -> Path:
    """The project's tree at its pinned commit (no .git of its own history), fetched once."""
    tree = cache / "node-src" / f"{project['name']}-{project['tag']}"
    if tree.is_dir():
        return tree
    mirrored = MIRROR / project["github"].replace("/", "+") / "repo"
    url = str(mirrored) if mirrored.is_dir() else f"https://github.com/{project['github']}.git"
    tmp = Path(tempfile.mkdtemp(prefix="jstasks-clone-"))
    try:
        subprocess.run(["git", "clone", "-q", "--no-checkout", url, str(tmp)], check=True)
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(tmp), "archive", project["commit"]],
                                 check=True, capture_output=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not any(tree.glob("LICENSE*")):
        raise SystemExit(f"{project['name']}: no LICENSE file at {project['commit']}")
    commit_tree(tree, f"{project['github']} at {project['tag']}")
    return tree


def sources(project: dict, tree: Path) -> list[str]:
    """The files bugs may be planted in: the manifest's globs, test files left out."""
    found = {p.relative_to(tree).as_posix() for g in project["sources"] for p in tree.glob(g)}
    return [f for f in sorted(found) if not is_test_path(f)]


class Project:
    """One project's installed working copy on the host, where its tests run."""

    def __init__(self, project: dict, tree: Path, cache: Path) -> None:
        self.project = project
        self.work = cache / "node-work"
        self.copy = self.work / "trees" / project["name"]
        self.env = node_env(self.work, self.work / "home")
        self.log_path = self.work / f"{project['name']}.log"
        fresh_copy(tree, self.copy)
        self.install(self.copy)

    def install(self, tree: Path) -> None:
        with self.log_path.open("a", encoding="utf-8") as log:
            code = run_shell(self.project["install"], cwd=tree, env=self.env, log=log,
                             timeout_s=INSTALL_TIMEOUT_S)  # fmt: skip
        if code != 0:
            raise SystemExit(f"{self.project['name']}: `{self.project['install']}` exit {code}: "
                             f"see {self.log_path}")  # fmt: skip

    def test(self, tree: Path, *, plain: bool, timeout_s: float = TEST_TIMEOUT_S) -> HostRun:
        with self.log_path.open("a", encoding="utf-8") as log:
            return run_tests(
                tree, runner=self.project["runner"], report_cmd=self.project["report"],
                env=self.env, log=log, timeout_s=timeout_s, report=self.work / "report",
                plain_cmd=self.project["test"] if plain else None,
            )  # fmt: skip


def fresh_copy(tree: Path, dest: Path) -> None:
    """`tree`'s files (its git folder too: a tree without one looks empty to the sandbox)."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree, dest, symlinks=True, ignore=shutil.ignore_patterns("node_modules"))


def describe(run: HostRun) -> str:
    counts = run.counts or {}
    shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests"
    return f"{shown} (exit {run.exit_code}, plain exit {run.plain_exit_code})"


def baseline(project: dict, box: Project) -> HostRun:
    """The untouched tree's run (plain and instrumented), said against the manifest's."""
    run = box.test(box.copy, plain=True)
    print(f"{project['name']}: baseline {describe(run)} in {run.test_s}s", flush=True)
    if run.problem or run.exit_code != 0 or run.failing():
        raise SystemExit(f"{project['name']}: tests fail before any bug: {run.problem or ''}")
    want = project.get("baseline")
    if want and {k: want.get(k, 0) for k in run.counts or {}} != run.counts:
        print(f"  DIFFERS from the manifest's {want}")
    return run


def screen(project: dict, tree: Path, box: Project, *, want: int, seed: int) -> list[Mutant]:
    """Mutants that make some test fail by id (not a whole file failing to load, not a lint or
    type check stopping the run first, not a hang), one per function, balanced over kinds."""
    pool: list[Mutant] = []
    for rel in sources(project, tree):
        pool += mutants((tree / rel).read_text(encoding="utf-8"), path=rel)
    order = balanced(pool, random.Random(f"{seed}-{project['name']}"))
    kept: list[Mutant] = []
    used: set[tuple[str, str]] = set()
    tried = 0
    for m in order:
        if len(kept) >= want:
            break
        if (m.path, m.function) in used:
            continue
        tried += 1
        target = box.copy / m.path
        original = target.read_text(encoding="utf-8")
        target.write_text(m.apply(original), encoding="utf-8")
        try:
            run = box.test(box.copy, plain=False, timeout_s=SCREEN_TIMEOUT_S)
        finally:
            target.write_text(original, encoding="utf-8")
        failing = run.failing()
        if run.exit_code not in (0, 124) and failing and all("::" in t for t in failing):
            kept.append(m)
            used.add((m.path, m.function))
    print(f"{project['name']}: {len(kept)} of {tried} mutants tried make a test fail", flush=True)
    return kept


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: Project) -> dict | None:
    """One task's tree, its reference fix, and the proof on a fresh install of that tree: a plain
    run fails (the failing ids recorded), and passes with the fix."""
    task_id = f"{project['name']}-{m.function.strip('_')}-{m.line}-{m.kind}"
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
    check = box.work / "trees" / "task"
    fresh_copy(repo, check)
    box.install(check)
    before = box.test(check, plain=True)
    (check / m.path).write_text(fixed, encoding="utf-8")
    after = box.test(check, plain=True)
    shutil.rmtree(check, ignore_errors=True)
    failing = before.failing()
    passing = sorted(t for t, o in before.outcomes.items() if o == "passed")
    if before.problem or not failing or before.plain_exit_code == 0:
        print(f"  {task_id}: dropped (no failing test by id before the fix: {before.problem})")
        return None
    if (
        after.problem
        or after.plain_exit_code != 0
        or any(after.outcomes.get(t) != "passed" for t in failing + passing)
    ):
        print(f"  {task_id}: dropped (the fix does not pass: {describe(after)})")
        return None
    (cache / "reference").mkdir(exist_ok=True)
    (cache / "reference" / f"{task_id}.patch").write_text(reference, encoding="utf-8")
    print(f"  {task_id}: {describe(before)}: {len(failing)} failing", flush=True)
    return {
        "task": {
            "id": task_id, "repo": f"repos/{task_id}", "goal": GOAL,
            "test_cmd": project["test"], "fail_to_pass": failing, "pass_to_pass": passing,
        },
        "manifest": {
            "id": task_id, "path": m.path, "line": m.line, "kind": m.kind, "old": m.old,
            "new": m.new, "counts": before.counts, "fail_to_pass": failing,
        },
    }  # fmt: skip


def sandbox_check(cache: Path, *, timeout_s: float = 1800.0) -> int:
    """Each task of CACHE/node-tasks.jsonl in the sandbox (`worker sandbox run-tests --json`, no
    flag): its failing tests must be the task's `fail_to_pass`, its passing ones `pass_to_pass`,
    as the host's plain run gave them. The number of tasks that differ."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8")).get("tasks", {})
    host_counts = {t["id"]: t["counts"] for ts in manifest.values() if isinstance(ts, list)
                   for t in ts}  # fmt: skip
    differ = 0
    for line in (cache / "node-tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        # Passing tests are counted, not named: a name used twice is one id, two tests.
        want = host_counts.get(task["id"], {}).get("passed", len(task["pass_to_pass"]))
        command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--json",
                   "--repo", str(cache / task["repo"])]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout_s
        )
        summary = json.loads(done.stdout[done.stdout.index("{") :]) if "{" in done.stdout else {}
        failing = sorted(set(summary.get("failing") or []))
        counts = summary.get("counts") or {}
        passed = counts.get("passed")
        same = failing == sorted(task["fail_to_pass"]) and passed == want
        differ += not same
        said = "equal" if same else "DIFFERS"
        last = (done.stderr.strip().splitlines() or [""])[-1] if not summary else ""
        print(f"{task['id']}: sandbox {len(failing)} failing, {passed} passed "
              f"(host {len(task['fail_to_pass'])}, {want}): {said} "
              f"{summary.get('headline', last)}", flush=True)  # fmt: skip
    print(f"{differ} task(s) differ from the host's baseline")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--per-project", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help="project names to build (default: all)")
    parser.add_argument("--baseline", action="store_true", help="the untouched trees alone")
    parser.add_argument("--write-manifest", action="store_true",
                        help="each task's failing ids into manifest-node.json")  # fmt: skip
    parser.add_argument("--sandbox-check", action="store_true",
                        help="run CACHE/node-tasks.jsonl's tasks in the sandbox, against the "
                        "host's baselines")  # fmt: skip
    args = parser.parse_args()
    cache = args.cache.resolve()
    if args.sandbox_check:
        return 1 if sandbox_check(cache) else 0
    cache.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    tasks: list[dict] = []
    written: dict[str, list[dict]] = {}
    for project in manifest["projects"]:
        if args.only and project["name"] not in args.only:
            continue
        tree = source(project, cache)
        box = Project(project, tree, cache)
        project["baseline"] = baseline(project, box).counts
        if args.baseline:
            continue
        kept = screen(project, tree, box, want=args.per_project, seed=args.seed)
        for m in kept:
            built = build_task(project, tree, m, cache, box)
            if built is not None:
                tasks.append(built["task"])
                written.setdefault(project["name"], []).append(built["manifest"])
    if args.write_manifest or args.baseline:
        if args.write_manifest:
            manifest["tasks"] = {"seed": args.seed, "per_project": args.per_project} | {
                name: written.get(name, manifest.get("tasks", {}).get(name, []))
                for name in [p["name"] for p in manifest["projects"]]
            }
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    if args.baseline:
        return 0
    out = cache / "node-tasks.jsonl"
    if args.only and out.is_file():  # the other projects' tasks stay as they were built
        built = {p["name"] for p in manifest["projects"] if p["name"] in args.only}
        kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        tasks = [t for t in kept if t["id"].split("-")[0] not in built] + tasks
    out.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    print(f"{len(tasks)} tasks ({len({t['id'].split('-')[0] for t in tasks})} projects): {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
