"""The public task set's Java tasks: fetch each project of manifest-java.json at its pinned
commit, plant single bugs (mutate_java.py), keep those that make some test fail by id, and
verify each task: on a fresh copy of the task's own tree a plain `mvn -B test` (the project's
CI command) fails, naming the failing tests by id, and passes with the reference fix (the
mutation undone).

    python3 bench/tasks/generate_java.py [--cache bench/tasks/cache] [--per-project 4]
        [--seed 11] [--only NAME ...] [--write-manifest]
    python3 bench/tasks/generate_java.py --sandbox-check [--cache bench/tasks/cache]

Runs on the host with its JDK 17 and Maven, as the Java corpus's references do
(bench/corpus_java.py): a local repository of its own (CACHE/java-work/m2, filled from Maven
Central by each project's first run, offline with `-o` after it), the host's ~/.m2 and Java
settings left out. The ids are the sandbox's own reader's (sandbox/ecosystems/java/reports.py)
over each run's Surefire reports (`.::com.example.RangeTest#includes`), stale reports removed
before each run. --sandbox-check: each task run by `worker sandbox run-tests --json` (no flag),
its failing tests and passing count compared with the host's.

Writes CACHE/java-tasks.jsonl, CACHE/repos/<id>/ and CACHE/reference/<id>.patch. Then:
`worker eval CACHE/java-tasks.jsonl --out DIR --model local`.
"""

from __future__ import annotations

import json
import os
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
from corpus_java import DROPPED_ENV, JAVA_HOME, surefire_reports  # noqa: E402
from mutate import Mutant  # type: ignore[import-not-found]  # noqa: E402
from mutate_java import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402
from node_host import SYSTEM_PATH, run_shell  # noqa: E402

from sandbox.ecosystems.java.reports import read_xml_reports  # noqa: E402

MANIFEST = HERE / "manifest-java.json"
TEST_TIMEOUT_S = 600.0
SCREEN_TIMEOUT_S = 180.0


class JavaRun(taskgen.TreeRun):
    """One `mvn test` of a tree: its exit code and its tests' outcomes by id."""

    shown = ("passed", "failed", "error")


class Project:
    """One project's runs on the host: its environment, its log, a local repository shared by
    the projects of one cache."""

    def __init__(self, project: dict, cache: Path) -> None:
        self.project = project
        self.work = cache / "java-work"
        home, repo = self.work / "home", self.work / "m2"
        for folder in (home, repo):
            folder.mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
        self.env = {
            **base,
            "HOME": str(home),
            "JAVA_HOME": str(JAVA_HOME),
            "PATH": f"{JAVA_HOME / 'bin'}:{SYSTEM_PATH}",
            "MAVEN_OPTS": f"-Dmaven.repo.local={repo}",
        }
        self.log_path = self.work / f"{project['name']}.log"

    def test(
        self, tree: Path, *, offline: bool = True, timeout_s: float = TEST_TIMEOUT_S
    ) -> JavaRun:
        """The project's test command in `tree` (offline after the first run), read by id."""
        for stale in tree.glob("**/target/surefire-reports"):
            shutil.rmtree(stale, ignore_errors=True)
        command = f"{self.project['test']} -o" if offline else self.project["test"]
        with self.log_path.open("a", encoding="utf-8") as log:
            code = run_shell(command, cwd=tree, env=self.env, log=log, timeout_s=timeout_s)
        if code == 124:
            return JavaRun(exit_code=code, problem="timed out")
        try:
            summary = read_xml_reports(list(surefire_reports(tree)))
        except ValueError as exc:
            return JavaRun(exit_code=code, problem=f"no report: {exc}")
        return JavaRun(exit_code=code, outcomes=dict(summary.outcomes))


def source(project: dict, cache: Path) -> Path:
    """The project's tree at its pinned commit (no history of its own), fetched once."""
    tree = cache / "java-src" / f"{project['name']}-{project['tag']}"
    return taskgen.pinned_tree(project, tree, prefix="javatasks-clone-")


def caught(box: Project, copy: Path, total: int, m: Mutant) -> bool:
    """The screening copy's run, `m` planted, makes some test fail by id (not a compile error,
    not a hang), every one of the baseline's `total` tests reported (a forked VM that dies part
    way reports a different part each run)."""
    run = box.test(copy, timeout_s=SCREEN_TIMEOUT_S)
    failing = run.failing()
    print(f"  {m.path}:{m.line} {m.kind}: {run.describe()}", flush=True)
    whole = len(run.outcomes) == total
    return run.exit_code not in (0, 124) and bool(failing) and len(failing) <= 20 and whole


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: Project) -> dict | None:
    """One task's tree, its reference fix, and the proof on a fresh copy of that tree: a plain
    run fails (the failing ids recorded), and passes with the fix."""
    task_id = f"{project['name']}-{m.function.replace('.', '_')}-{m.line}-{m.kind}"
    repo = cache / "repos" / task_id
    fixed, reference = taskgen.task_tree(tree, m, repo, "target")
    check = box.work / "check"
    taskgen.fresh_copy(repo, check, "target")
    before = box.test(check)
    (check / m.path).write_text(fixed, encoding="utf-8")
    after = box.test(check)
    shutil.rmtree(check, ignore_errors=True)
    failing, passing = before.failing(), before.passing()
    if before.problem or not failing or before.exit_code == 0:
        print(f"  {task_id}: dropped (no failing test by id before the fix: {before.problem})")
        return None
    if after.problem or after.exit_code != 0 or after.failing():
        print(f"  {task_id}: dropped (the fix does not pass: {after.describe()})")
        return None
    return taskgen.record(
        cache, task_id, m, reference=reference, failing=failing, passing=passing, test_cmd=None,
        tally={"fail_to_pass": failing, "passed": len(passing)}, said=before.describe(),
    )  # fmt: skip


def main() -> int:
    args = taskgen.command_line(
        __doc__, language="java", per_project=4, against="host's"
    ).parse_args()
    cache = args.cache.resolve()
    if args.sandbox_check:
        differ = taskgen.sandbox_check(cache / "java-tasks.jsonl", against="host", timeout_s=1200.0,
                               baseline="the host's mvn test baseline")  # fmt: skip
        return 1 if differ else 0
    cache.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    tasks: list[dict] = []
    written: dict[str, list[dict]] = {}
    for project in manifest["projects"]:
        if args.only and project["name"] not in args.only:
            continue
        tree = source(project, cache)
        box = Project(project, cache)
        base_tree = box.work / "base" / project["name"]
        taskgen.fresh_copy(tree, base_tree, "target")
        base = box.test(base_tree, offline=False)
        print(f"{project['name']}: baseline {base.describe()}", flush=True)
        if base.problem or base.exit_code != 0 or base.failing():
            raise SystemExit(f"{project['name']}: tests fail before any bug: {box.log_path}")
        copy = box.work / "screen" / project["name"]
        taskgen.fresh_copy(tree, copy, "target")
        kept = taskgen.screen(
            project, tree, copy, mutants=mutants, is_test_path=is_test_path,
            caught=partial(caught, box, copy, len(base.outcomes)), want=args.per_project,
            seed=args.seed, most_tried=args.per_project * 4,
        )  # fmt: skip
        for m in kept:
            built = build_task(project, tree, m, cache, box)
            if built is not None:
                tasks.append(built["task"])
                written.setdefault(project["name"], []).append(built["manifest"])
    if args.write_manifest:
        taskgen.write_manifest(MANIFEST, manifest, written, {"seed": args.seed,
                                                     "per_project": args.per_project})  # fmt: skip
    taskgen.write_tasks(cache / "java-tasks.jsonl", tasks, built=f"{len(written)} projects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
