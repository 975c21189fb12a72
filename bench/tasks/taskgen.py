"""What the public task generators of Go, Java, Rust and Node (generate_go.py, generate_java.py,
generate_rust.py, generate_node.py) share: a project's tree at its pinned commit, fresh copies,
the files bugs may be planted in, the screening loop, a task's tree and reference fix, its
record, and the sandbox check of the tasks written. Each generator gives its own test run (a
container, the host's JDK, cargo or Node) as a callable, and keeps its own rules for what a run
that catches a bug looks like: those differ by language (a Rust target that does not compile, a
Java VM that reports part of the tests, a Node run's plain exit code).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from generate import commit_tree, reference_fix  # type: ignore[import-not-found]
from mutate import Mutant, balanced  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parent.parent.parent
MIRROR = Path("/work/.mirror")
GOAL = "make the failing tests pass"


@dataclass
class TreeRun:
    """One test run of a tree: its exit code and its tests' outcomes by id."""

    exit_code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    problem: str = ""
    shown: ClassVar[tuple[str, ...]] = ("passed", "failed")  # the outcomes `describe` counts

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o in ("failed", "error"))

    def passing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o == "passed")

    def describe(self) -> str:
        counts = {k: sum(o == k for o in self.outcomes.values()) for k in self.shown}
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests"
        return f"{shown} (exit {self.exit_code}){' ' + self.problem if self.problem else ''}"


def fresh_copy(tree: Path, dest: Path, *skip: str) -> None:
    """`tree`'s files at `dest` (its git folder too: a tree without one looks empty to the
    sandbox), the folders named in `skip` (build outputs, installed packages) left out."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns(*skip) if skip else None
    shutil.copytree(tree, dest, symlinks=True, ignore=ignore)


def pinned_tree(project: dict, tree: Path, *, prefix: str) -> Path:
    """The project's tree at its pinned commit in `tree` (no history of its own but one commit),
    from the local mirror or else GitHub, fetched once; its LICENSE file required."""
    if tree.is_dir():
        return tree
    mirrored = MIRROR / project["github"].replace("/", "+") / "repo"
    url = str(mirrored) if mirrored.is_dir() else f"https://github.com/{project['github']}.git"
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
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


def sources(project: dict, tree: Path, is_test_path: Callable[[str], bool]) -> list[str]:
    """The files bugs may be planted in: the manifest's globs, test files left out."""
    found = {p.relative_to(tree).as_posix() for g in project["sources"] for p in tree.glob(g)}
    return [f for f in sorted(found) if not is_test_path(f)]


def screen(
    project: dict,
    tree: Path,
    copy: Path,
    *,
    mutants: Callable[..., list[Mutant]],
    is_test_path: Callable[[str], bool],
    caught: Callable[[Mutant], bool],
    want: int,
    seed: int,
    most_tried: int | None = None,
) -> list[Mutant]:
    """Up to `want` mutants of the project's sources that `caught` keeps, each planted in turn
    in `copy` (a copy of `tree` its tests run in) and undone after, one per function, in a
    shuffled order balanced over kinds; at most `most_tried` tried."""
    pool: list[Mutant] = []
    for rel in sources(project, tree, is_test_path):
        pool += mutants((tree / rel).read_text(encoding="utf-8"), path=rel)
    order = balanced(pool, random.Random(f"{seed}-{project['name']}"))
    kept: list[Mutant] = []
    used: set[tuple[str, str]] = set()
    tried = 0
    for m in order:
        if len(kept) >= want or (most_tried is not None and tried >= most_tried):
            break
        if (m.path, m.function) in used:
            continue  # one bug per function: tasks stay distinct
        tried += 1
        target = copy / m.path
        original = target.read_text(encoding="utf-8")
        target.write_text(m.apply(original), encoding="utf-8")
        try:
            keep = caught(m)
        finally:
            target.write_text(original, encoding="utf-8")
        if keep:
            kept.append(m)
            used.add((m.path, m.function))
    print(f"{project['name']}: {len(kept)} of {tried} mutants tried make a test fail", flush=True)
    return kept


def task_tree(tree: Path, m: Mutant, repo: Path, *skip: str) -> tuple[str, str]:
    """The task's tree at `repo`: `tree` with the mutant planted, a repository of one commit.
    The fixed file's text and the reference fix (the diff that undoes the mutant)."""
    fresh_copy(tree, repo, *skip)
    shutil.rmtree(repo / ".git")
    target = repo / m.path
    fixed = target.read_text(encoding="utf-8")
    buggy = m.apply(fixed)
    target.write_text(buggy, encoding="utf-8")
    commit_tree(repo, "the task")
    reference = reference_fix(buggy, fixed, path=m.path)
    return fixed, reference


def record(
    cache: Path,
    task_id: str,
    m: Mutant,
    *,
    reference: str,
    failing: list[str],
    passing: list[str],
    test_cmd: str | None,
    tally: dict,
    said: str,
) -> dict:
    """A proven task kept: its reference fix written, and its task line and manifest entry
    (the mutant, then `tally`: what the run before the fix gave)."""
    (cache / "reference").mkdir(exist_ok=True)
    (cache / "reference" / f"{task_id}.patch").write_text(reference, encoding="utf-8")
    print(f"  {task_id}: {said}: {len(failing)} failing", flush=True)
    task = {"id": task_id, "repo": f"repos/{task_id}", "goal": GOAL}
    task |= {"test_cmd": test_cmd} if test_cmd is not None else {}
    return {
        "task": task | {"fail_to_pass": failing, "pass_to_pass": passing},
        "manifest": {
            "id": task_id, "path": m.path, "line": m.line, "kind": m.kind, "old": m.old,
            "new": m.new, **tally,
        },
    }  # fmt: skip


def sandbox_check(
    tasks_file: Path,
    *,
    against: str,
    baseline: str,
    timeout_s: float,
    flags: Sequence[str] = (),
    passed: Callable[[dict], int] | None = None,
    distinct: bool = False,
    show_differences: bool = False,
) -> int:
    """Each task of `tasks_file` in the sandbox (`worker sandbox run-tests --json`, no flag but
    `flags`): its failing tests must be the task's `fail_to_pass` and its passing count the
    `against` run's (`passed(task)`, by default its `pass_to_pass`'s). The number of tasks that
    differ. `distinct`: a failing id the sandbox names twice counted once."""
    differ = 0
    for line in tasks_file.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        want = passed(task) if passed is not None else len(task["pass_to_pass"])
        command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--json",
                   "--repo", str(tasks_file.parent / task["repo"]), *flags]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=timeout_s
        )
        summary = json.loads(done.stdout[done.stdout.index("{") :]) if "{" in done.stdout else {}
        named = summary.get("failing") or []
        failing = sorted(set(named) if distinct else named)
        got = (summary.get("counts") or {}).get("passed")
        same = failing == sorted(task["fail_to_pass"]) and got == want
        differ += not same
        last = (done.stderr.strip().splitlines() or [""])[-1] if not summary else ""
        print(f"{task['id']}: sandbox {len(failing)} failing, {got} passed ({against} "
              f"{len(task['fail_to_pass'])}, {want}): {'equal' if same else 'DIFFERS'} "
              f"{summary.get('headline', last)}", flush=True)  # fmt: skip
        if show_differences and not same:
            print(f"  sandbox failing {failing}\n  {against} failing {task['fail_to_pass']}")
    print(f"{differ} task(s) differ from {baseline}")
    return differ


def command_line(
    doc: str,
    *,
    language: str,
    per_project: int,
    against: str,
    unit: str = "project",
    more: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.ArgumentParser:
    """A generator's command line: its cache, how many tasks a project, the seed, the projects
    to build, then `more` (its own flags), --write-manifest and --sandbox-check."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path(__file__).resolve().parent / "cache")
    parser.add_argument("--per-project", type=int, default=per_project)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help=f"{unit} names to build (default: all)")
    if more is not None:
        more(parser)
    parser.add_argument("--write-manifest", action="store_true",
                        help=f"each task's failing ids into manifest-{language}.json")  # fmt: skip
    parser.add_argument("--sandbox-check", action="store_true",
                        help=f"run CACHE/{language}-tasks.jsonl's tasks in the "
                        f"sandbox, against the {against} baselines")  # fmt: skip
    return parser


def write_manifest(path: Path, manifest: dict, written: dict[str, list[dict]], head: dict) -> None:
    """The tasks built, by project (none for a project not built), into the manifest's `tasks`
    after `head` (the seed and what else made them)."""
    manifest["tasks"] = head | {p["name"]: written.get(p["name"], []) for p in manifest["projects"]}
    path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def write_tasks(out: Path, tasks: list[dict], *, built: str) -> None:
    """The task lines, then the line that says how many (and of how many projects)."""
    out.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    print(f"{len(tasks)} tasks ({built}): {out}")
