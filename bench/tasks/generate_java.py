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

import argparse
import difflib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BENCH = HERE.parent
sys.path[:] = [str(ROOT), str(HERE), str(BENCH)] + [
    p for p in sys.path if Path(p or ".").resolve() not in (HERE, BENCH)
]

from corpus_java import DROPPED_ENV, JAVA_HOME, surefire_reports  # noqa: E402
from generate import commit_tree  # type: ignore[import-not-found]  # noqa: E402
from mutate import Mutant, balanced  # type: ignore[import-not-found]  # noqa: E402
from mutate_java import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402
from node_host import SYSTEM_PATH, run_shell  # noqa: E402

from sandbox.ecosystems.java.reports import read_xml_reports  # noqa: E402

MANIFEST = HERE / "manifest-java.json"
GOAL = "make the failing tests pass"
TEST_TIMEOUT_S = 600.0
SCREEN_TIMEOUT_S = 180.0
MIRROR = Path("/work/.mirror")


@dataclass
class JavaRun:
    """One `mvn test` of a tree: its exit code and its tests' outcomes by id."""

    exit_code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    problem: str = ""

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o in ("failed", "error"))

    def passing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o == "passed")

    def describe(self) -> str:
        counts = {
            k: sum(o == k for o in self.outcomes.values()) for k in ("passed", "failed", "error")
        }
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests"
        return f"{shown} (exit {self.exit_code}){' ' + self.problem if self.problem else ''}"


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


def fresh_copy(tree: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree, dest, symlinks=True, ignore=shutil.ignore_patterns("target"))


def source(project: dict, cache: Path) -> Path:
    """The project's tree at its pinned commit (no history of its own), fetched once."""
    tree = cache / "java-src" / f"{project['name']}-{project['tag']}"
    if tree.is_dir():
        return tree
    mirrored = MIRROR / project["github"].replace("/", "+") / "repo"
    url = str(mirrored) if mirrored.is_dir() else f"https://github.com/{project['github']}.git"
    tmp = Path(tempfile.mkdtemp(prefix="javatasks-clone-"))
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
    found = {p.relative_to(tree).as_posix() for g in project["sources"] for p in tree.glob(g)}
    return [f for f in sorted(found) if not is_test_path(f)]


def screen(
    project: dict, tree: Path, box: Project, *, want: int, seed: int, total: int
) -> list[Mutant]:
    """Mutants that make some test fail by id (not a compile error, not a hang), every one of
    the baseline's `total` tests reported (a forked VM that dies part way reports a different
    part each run), one per method, balanced over kinds."""
    pool: list[Mutant] = []
    for rel in sources(project, tree):
        pool += mutants((tree / rel).read_text(encoding="utf-8"), path=rel)
    order = balanced(pool, random.Random(f"{seed}-{project['name']}"))
    copy = box.work / "screen" / project["name"]
    fresh_copy(tree, copy)
    kept: list[Mutant] = []
    used: set[tuple[str, str]] = set()
    tried = 0
    for m in order:
        if len(kept) >= want or tried >= want * 4:
            break
        if (m.path, m.function) in used:
            continue
        tried += 1
        target = copy / m.path
        original = target.read_text(encoding="utf-8")
        target.write_text(m.apply(original), encoding="utf-8")
        try:
            run = box.test(copy, timeout_s=SCREEN_TIMEOUT_S)
        finally:
            target.write_text(original, encoding="utf-8")
        failing = run.failing()
        print(f"  {m.path}:{m.line} {m.kind}: {run.describe()}", flush=True)
        whole = len(run.outcomes) == total
        if run.exit_code not in (0, 124) and failing and len(failing) <= 20 and whole:
            kept.append(m)
            used.add((m.path, m.function))
    print(f"{project['name']}: {len(kept)} of {tried} mutants tried make a test fail", flush=True)
    return kept


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: Project) -> dict | None:
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
    (cache / "reference").mkdir(exist_ok=True)
    (cache / "reference" / f"{task_id}.patch").write_text(reference, encoding="utf-8")
    print(f"  {task_id}: {before.describe()}: {len(failing)} failing", flush=True)
    return {
        "task": {
            "id": task_id, "repo": f"repos/{task_id}", "goal": GOAL,
            "fail_to_pass": failing, "pass_to_pass": passing,
        },
        "manifest": {
            "id": task_id, "path": m.path, "line": m.line, "kind": m.kind, "old": m.old,
            "new": m.new, "fail_to_pass": failing, "passed": len(passing),
        },
    }  # fmt: skip


def sandbox_check(cache: Path, *, timeout_s: float = 1200.0) -> int:
    """Each task of CACHE/java-tasks.jsonl in the sandbox (`worker sandbox run-tests --json`, no
    flag): its failing tests must be the task's `fail_to_pass` and its passing count the host's.
    The number of tasks that differ."""
    differ = 0
    for line in (cache / "java-tasks.jsonl").read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--json",
                   "--repo", str(cache / task["repo"])]  # fmt: skip
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
        print(f"{task['id']}: sandbox {len(failing)} failing, {passed} passed (host "
              f"{len(task['fail_to_pass'])}, {want}): {'equal' if same else 'DIFFERS'} "
              f"{summary.get('headline', last)}", flush=True)  # fmt: skip
    print(f"{differ} task(s) differ from the host's mvn test baseline")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--per-project", type=int, default=4)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help="project names to build (default: all)")
    parser.add_argument("--write-manifest", action="store_true",
                        help="each task's failing ids into manifest-java.json")  # fmt: skip
    parser.add_argument("--sandbox-check", action="store_true",
                        help="run CACHE/java-tasks.jsonl's tasks in the sandbox, against the "
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
        box = Project(project, cache)
        base_tree = box.work / "base" / project["name"]
        fresh_copy(tree, base_tree)
        base = box.test(base_tree, offline=False)
        print(f"{project['name']}: baseline {base.describe()}", flush=True)
        if base.problem or base.exit_code != 0 or base.failing():
            raise SystemExit(f"{project['name']}: tests fail before any bug: {box.log_path}")
        kept = screen(
            project, tree, box, want=args.per_project, seed=args.seed, total=len(base.outcomes)
        )
        for m in kept:
            built = build_task(project, tree, m, cache, box)
            if built is not None:
                tasks.append(built["task"])
                written.setdefault(project["name"], []).append(built["manifest"])
    if args.write_manifest:
        manifest["tasks"] = {"seed": args.seed, "per_project": args.per_project} | {
            p["name"]: written.get(p["name"], []) for p in manifest["projects"]
        }
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    out = cache / "java-tasks.jsonl"
    out.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    print(f"{len(tasks)} tasks ({len(written)} projects): {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
