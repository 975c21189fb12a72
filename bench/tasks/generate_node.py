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

import json
import shutil
import sys
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BENCH = HERE.parent
sys.path[:] = [str(ROOT), str(HERE), str(BENCH)] + [
    p for p in sys.path if Path(p or ".").resolve() not in (HERE, BENCH)
]

import taskgen  # type: ignore[import-not-found]  # noqa: E402
from mutate import Mutant  # type: ignore[import-not-found]  # noqa: E402
from mutate_js import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402
from node_host import HostRun, node_env, run_shell, run_tests  # noqa: E402

MANIFEST = HERE / "manifest-node.json"
INSTALL_TIMEOUT_S = 600.0
TEST_TIMEOUT_S = 300.0
SCREEN_TIMEOUT_S = 90.0


def source(project: dict, cache: Path) -> Path:
    """The project's tree at its pinned commit (no .git of its own history), fetched once."""
    tree = cache / "node-src" / f"{project['name']}-{project['tag']}"
    return taskgen.pinned_tree(project, tree, prefix="jstasks-clone-")


class Project:
    """One project's installed working copy on the host, where its tests run."""

    def __init__(self, project: dict, tree: Path, cache: Path) -> None:
        self.project = project
        self.work = cache / "node-work"
        self.copy = self.work / "trees" / project["name"]
        self.env = node_env(self.work, self.work / "home")
        self.log_path = self.work / f"{project['name']}.log"
        taskgen.fresh_copy(tree, self.copy, "node_modules")
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


def caught(box: Project, m: Mutant) -> bool:
    """The installed copy's run, `m` planted, makes some test fail by id (not a whole file
    failing to load, not a lint or type check stopping the run first, not a hang)."""
    run = box.test(box.copy, plain=False, timeout_s=SCREEN_TIMEOUT_S)
    failing = run.failing()
    return run.exit_code not in (0, 124) and bool(failing) and all("::" in t for t in failing)


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: Project) -> dict | None:
    """One task's tree, its reference fix, and the proof on a fresh install of that tree: a plain
    run fails (the failing ids recorded), and passes with the fix."""
    task_id = f"{project['name']}-{m.function.strip('_')}-{m.line}-{m.kind}"
    repo = cache / "repos" / task_id
    fixed, reference = taskgen.task_tree(tree, m, repo, "node_modules")
    check = box.work / "trees" / "task"
    taskgen.fresh_copy(repo, check, "node_modules")
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
    return taskgen.record(
        cache, task_id, m, reference=reference, failing=failing, passing=passing,
        test_cmd=project["test"], tally={"counts": before.counts, "fail_to_pass": failing},
        said=describe(before),
    )  # fmt: skip


def host_passed(task: dict) -> int:
    """The host's count of passing tests for a task, as the manifest records it. Passing tests
    are counted, not named: a name used twice is one id, two tests."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8")).get("tasks", {})
    host_counts = {t["id"]: t["counts"] for ts in manifest.values() if isinstance(ts, list)
                   for t in ts}  # fmt: skip
    return host_counts.get(task["id"], {}).get("passed", len(task["pass_to_pass"]))


def main() -> int:
    def baseline_flag(parser):
        parser.add_argument("--baseline", action="store_true", help="the untouched trees alone")

    args = taskgen.command_line(__doc__, language="node", per_project=8, against="host's",
                        more=baseline_flag).parse_args()  # fmt: skip
    cache = args.cache.resolve()
    if args.sandbox_check:
        differ = taskgen.sandbox_check(cache / "node-tasks.jsonl", against="host", timeout_s=1800.0,
                               baseline="the host's baseline", passed=host_passed,
                               distinct=True)  # fmt: skip
        return 1 if differ else 0
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
        kept = taskgen.screen(
            project, tree, box.copy, mutants=mutants, is_test_path=is_test_path,
            caught=partial(caught, box), want=args.per_project, seed=args.seed,
        )  # fmt: skip
        for m in kept:
            built = build_task(project, tree, m, cache, box)
            if built is not None:
                tasks.append(built["task"])
                written.setdefault(project["name"], []).append(built["manifest"])
    if args.write_manifest or args.baseline:
        if args.write_manifest:  # a project not built keeps the tasks it had
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
    taskgen.write_tasks(out, tasks, built=f"{len({t['id'].split('-')[0] for t in tasks})} projects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
