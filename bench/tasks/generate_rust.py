"""The public task set's Rust tasks: fetch each crate of manifest-rust.json at its pinned
commit, plant single bugs (mutate_rust.py), keep those that make some test fail by id, and
verify each task: on a fresh copy of the task's own tree, with a target folder of its own, a
plain `cargo test --no-fail-fast` (the crate's CI command) fails, naming the failing tests by
id, and passes with the reference fix (the mutation undone).

    python3 bench/tasks/generate_rust.py [--cache bench/tasks/cache] [--per-project 4]
        [--seed 11] [--only NAME ...] [--write-manifest]
    python3 bench/tasks/generate_rust.py --sandbox-check [--cache bench/tasks/cache]

Runs on the host with its own Rust, as the Rust corpus's references do (bench/corpus_rust.py):
rustup's default toolchain's `bin` first in PATH (no proxy), the host's cargo and rustup
settings left out, a CARGO_HOME of the cache's own (filled from crates.io by each crate's
`cargo fetch`; every test run offline after it) and CARGO_INCREMENTAL=0 as the sandbox's image.
Screening shares one target folder per crate, so each mutant rebuilds the crate alone. The ids
are the corpus reference's reader's (corpus_rust.parse_cargo_output over cargo's plain output:
`strsim::tests::empty`, `tests/lib.rs::jaro_both_empty`, `src/lib.rs::hamming (line 38)`),
which the Rust corpus found equal to the sandbox's. A crate with no Cargo.lock gets the one its
first `cargo fetch` wrote, in the trees that are run, never in the task's tree (the sandbox
resolves its own, as CI does). --sandbox-check: each task run by `worker sandbox run-tests
--json` (no flag), its failing tests and passing count compared with the host's.

Writes CACHE/rust-tasks.jsonl, CACHE/repos/<id>/ and CACHE/reference/<id>.patch. Then:
`worker eval CACHE/rust-tasks.jsonl --out DIR --model local`.
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

from corpus_rust import (  # noqa: E402
    DROPPED_ENV,
    executables,
    host_toolchain,
    parse_cargo_output,
    rust_version,
    targets,
)
from generate import commit_tree  # type: ignore[import-not-found]  # noqa: E402
from mutate import Mutant, balanced  # type: ignore[import-not-found]  # noqa: E402
from mutate_rust import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402
from node_host import SYSTEM_PATH, run_installs, run_shell  # noqa: E402

MANIFEST = HERE / "manifest-rust.json"
GOAL = "make the failing tests pass"
TEST_TIMEOUT_S = 600.0
SCREEN_TIMEOUT_S = 120.0
MIRROR = Path("/work/.mirror")
MAX_FAILING = 20


@dataclass
class RustRun:
    """One `cargo test` of a tree: its exit code and its tests' outcomes by id."""

    exit_code: int
    outcomes: dict[str, str] = field(default_factory=dict)
    problem: str = ""

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o in ("failed", "error"))

    def errors(self) -> list[str]:
        """Targets that did not compile or binaries that ended early."""
        return sorted(t for t, o in self.outcomes.items() if o == "error")

    def passing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o == "passed")

    def describe(self) -> str:
        counts = {
            k: sum(o == k for o in self.outcomes.values())
            for k in ("passed", "failed", "error", "skipped")
        }
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no tests"
        return f"{shown} (exit {self.exit_code}){' ' + self.problem if self.problem else ''}"


class Crate:
    """One crate's runs on the host: its environment, its log, the Cargo.lock its first fetch
    wrote, a CARGO_HOME shared by the crates of one cache."""

    def __init__(self, project: dict, cache: Path) -> None:
        self.project = project
        self.work = cache / "rust-work"
        home, cargo_home = self.work / "home", self.work / "cargo-home"
        for folder in (home, cargo_home):
            folder.mkdir(parents=True, exist_ok=True)
        base = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
        self.env = {
            **base,
            "HOME": str(home),
            "PATH": f"{host_toolchain()}:{SYSTEM_PATH}",
            "CARGO_HOME": str(cargo_home),
            "CARGO_TERM_COLOR": "never",
            "CARGO_INCREMENTAL": "0",  # as the sandbox's image (docs/rust-tests.md)
        }
        self.log_path = self.work / f"{project['name']}.log"
        self.lock: str | None = None  # the Cargo.lock `cargo fetch` wrote, where none is committed

    def fetch(self, tree: Path) -> None:
        """The crate's install steps (`cargo fetch`, from crates.io), once, in `tree`."""
        committed = (tree / "Cargo.lock").is_file()
        with self.log_path.open("a", encoding="utf-8") as log:
            failed = run_installs(self.project["install"], cwd=tree, env=self.env, log=log,
                                  timeout_s=TEST_TIMEOUT_S)  # fmt: skip
        if failed:
            raise SystemExit(f"{self.project['name']}: `{failed[0]}` exit {failed[1]}: "
                             f"{self.log_path}")  # fmt: skip
        if not committed:
            self.lock = (tree / "Cargo.lock").read_text(encoding="utf-8")

    def test(self, tree: Path, target: Path, *, timeout_s: float = TEST_TIMEOUT_S) -> RustRun:
        """The crate's test command in `tree`, offline, building in `target`, read by id."""
        if self.lock is not None and not (tree / "Cargo.lock").is_file():
            (tree / "Cargo.lock").write_text(self.lock, encoding="utf-8")
        env = self.env | {"CARGO_NET_OFFLINE": "true", "CARGO_TARGET_DIR": str(target)}
        output = self.work / f"{self.project['name']}.out"
        with output.open("w", encoding="utf-8") as log:
            code = run_shell(self.project["test"], cwd=tree, env=env, log=log,
                             timeout_s=timeout_s)  # fmt: skip
        text = output.read_text(encoding="utf-8", errors="replace")
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(text)
        if code == 124:
            return RustRun(exit_code=code, problem="timed out")
        metadata = subprocess.run(
            ["cargo", "metadata", "--no-deps", "--format-version", "1"],
            cwd=tree, env=env, capture_output=True, text=True,
        )  # fmt: skip
        known = targets(json.loads(metadata.stdout), tree) if metadata.returncode == 0 else []
        built = subprocess.run(
            ["bash", "-c", f"{self.project['test']} --no-run --message-format=json"],
            cwd=tree, env=env, capture_output=True, text=True,
        )  # fmt: skip
        outcomes = parse_cargo_output(text, known, executables(built.stdout, tree))
        if not outcomes:
            return RustRun(exit_code=code, problem="no test in the output")
        return RustRun(exit_code=code, outcomes=outcomes)


def fresh_copy(tree: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree, dest, symlinks=True, ignore=shutil.ignore_patterns("target"))


def source(project: dict, cache: Path) -> Path:
    """The crate's tree at its pinned commit (no history of its own), fetched once."""
    tree = cache / "rust-src" / f"{project['name']}-{project['tag']}"
    if tree.is_dir():
        return tree
    mirrored = MIRROR / project["github"].replace("/", "+") / "repo"
    url = str(mirrored) if mirrored.is_dir() else f"https://github.com/{project['github']}.git"
    tmp = Path(tempfile.mkdtemp(prefix="rusttasks-clone-"))
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


def screen(project: dict, tree: Path, box: Crate, *, want: int, seed: int) -> list[Mutant]:
    """Mutants that make some test fail by id (not a compile error, not a crash, not a hang),
    one per function, balanced over kinds."""
    pool: list[Mutant] = []
    for rel in sources(project, tree):
        pool += mutants((tree / rel).read_text(encoding="utf-8"), path=rel)
    order = balanced(pool, random.Random(f"{seed}-{project['name']}"))
    copy = box.work / "screen" / project["name"]
    target = box.work / "screen-target" / project["name"]  # shared: each run rebuilds the crate
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
        file = copy / m.path
        original = file.read_text(encoding="utf-8")
        file.write_text(m.apply(original), encoding="utf-8")
        try:
            run = box.test(copy, target, timeout_s=SCREEN_TIMEOUT_S)
        finally:
            file.write_text(original, encoding="utf-8")
        failing = run.failing()
        print(f"  {m.path}:{m.line} {m.kind}: {run.describe()}", flush=True)
        caught = run.exit_code not in (0, 124) and not run.errors()
        if caught and 0 < len(failing) <= MAX_FAILING:
            kept.append(m)
            used.add((m.path, m.function))
    print(f"{project['name']}: {len(kept)} of {tried} mutants tried make a test fail", flush=True)
    return kept


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: Crate) -> dict | None:
    """One task's tree, its reference fix, and the proof on a fresh copy of that tree with a
    fresh target folder: a plain run fails (the failing ids recorded), and passes with the fix."""
    task_id = f"{project['name']}-{m.function.replace('.', '_')}-{m.line}-{m.kind}"
    repo = cache / "repos" / task_id
    fresh_copy(tree, repo)
    shutil.rmtree(repo / ".git")
    file = repo / m.path
    fixed = file.read_text(encoding="utf-8")
    buggy = m.apply(fixed)
    file.write_text(buggy, encoding="utf-8")
    commit_tree(repo, "the task")
    reference = "".join(
        difflib.unified_diff(
            buggy.splitlines(keepends=True), fixed.splitlines(keepends=True),
            fromfile=f"a/{m.path}", tofile=f"b/{m.path}",
        )
    )  # fmt: skip
    check, target = box.work / "check", box.work / "check-target"
    fresh_copy(repo, check)
    shutil.rmtree(target, ignore_errors=True)
    before = box.test(check, target)
    (check / m.path).write_text(fixed, encoding="utf-8")
    after = box.test(check, target)
    shutil.rmtree(check, ignore_errors=True)
    failing, passing = before.failing(), before.passing()
    if before.problem or not failing or before.exit_code == 0 or before.errors():
        print(f"  {task_id}: dropped (no failing test by id before the fix: "
              f"{before.describe()})")  # fmt: skip
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
    """Each task of CACHE/rust-tasks.jsonl in the sandbox (`worker sandbox run-tests --json`, no
    flag): its failing tests must be the task's `fail_to_pass` and its passing count the host's.
    The number of tasks that differ."""
    differ = 0
    for line in (cache / "rust-tasks.jsonl").read_text(encoding="utf-8").splitlines():
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
        if not same:
            print(f"  sandbox failing {failing}\n  host failing {task['fail_to_pass']}")
    print(f"{differ} task(s) differ from the host's cargo test baseline")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--per-project", type=int, default=4)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help="crate names to build (default: all)")
    parser.add_argument("--write-manifest", action="store_true",
                        help="each task's failing ids into manifest-rust.json")  # fmt: skip
    parser.add_argument("--sandbox-check", action="store_true",
                        help="run CACHE/rust-tasks.jsonl's tasks in the sandbox, against the "
                        "host's baselines")  # fmt: skip
    args = parser.parse_args()
    cache = args.cache.resolve()
    if args.sandbox_check:
        return 1 if sandbox_check(cache) else 0
    cache.mkdir(parents=True, exist_ok=True)
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    print(f"host Rust {rust_version()}", flush=True)
    tasks: list[dict] = []
    written: dict[str, list[dict]] = {}
    for project in manifest["projects"]:
        if args.only and project["name"] not in args.only:
            continue
        tree = source(project, cache)
        box = Crate(project, cache)
        base_tree = box.work / "base" / project["name"]
        fresh_copy(tree, base_tree)
        box.fetch(base_tree)
        base = box.test(base_tree, box.work / "screen-target" / project["name"])
        print(f"{project['name']}: baseline {base.describe()}", flush=True)
        if base.problem or base.exit_code != 0 or base.failing():
            raise SystemExit(f"{project['name']}: tests fail before any bug: {box.log_path}")
        kept = screen(project, tree, box, want=args.per_project, seed=args.seed)
        for m in kept:
            built = build_task(project, tree, m, cache, box)
            if built is not None:
                tasks.append(built["task"])
                written.setdefault(project["name"], []).append(built["manifest"])
    if args.write_manifest:
        manifest["tasks"] = {
            "seed": args.seed, "per_project": args.per_project, "rust": rust_version(),
        } | {p["name"]: written.get(p["name"], []) for p in manifest["projects"]}  # fmt: skip
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    out = cache / "rust-tasks.jsonl"
    out.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    print(f"{len(tasks)} tasks ({len(written)} crates): {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
