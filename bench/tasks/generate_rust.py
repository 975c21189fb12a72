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

import json
import os
import shutil
import subprocess
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
from corpus_rust import (  # noqa: E402
    DROPPED_ENV,
    executables,
    host_toolchain,
    parse_cargo_output,
    rust_version,
    targets,
)
from mutate import Mutant  # type: ignore[import-not-found]  # noqa: E402
from mutate_rust import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402
from node_host import SYSTEM_PATH, run_installs, run_shell  # noqa: E402

MANIFEST = HERE / "manifest-rust.json"
TEST_TIMEOUT_S = 600.0
SCREEN_TIMEOUT_S = 120.0
MAX_FAILING = 20


class RustRun(taskgen.TreeRun):
    """One `cargo test` of a tree: its exit code and its tests' outcomes by id."""

    shown = ("passed", "failed", "error", "skipped")

    def errors(self) -> list[str]:
        """Targets that did not compile or binaries that ended early."""
        return sorted(t for t, o in self.outcomes.items() if o == "error")


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


def source(project: dict, cache: Path) -> Path:
    """The crate's tree at its pinned commit (no history of its own), fetched once."""
    tree = cache / "rust-src" / f"{project['name']}-{project['tag']}"
    return taskgen.pinned_tree(project, tree, prefix="rusttasks-clone-")


def caught(box: Crate, copy: Path, target: Path, m: Mutant) -> bool:
    """The screening copy's run, `m` planted, makes some test fail by id (not a compile error,
    not a crash, not a hang), and not too many."""
    run = box.test(copy, target, timeout_s=SCREEN_TIMEOUT_S)
    failing = run.failing()
    print(f"  {m.path}:{m.line} {m.kind}: {run.describe()}", flush=True)
    clean = run.exit_code not in (0, 124) and not run.errors()
    return clean and 0 < len(failing) <= MAX_FAILING


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: Crate) -> dict | None:
    """One task's tree, its reference fix, and the proof on a fresh copy of that tree with a
    fresh target folder: a plain run fails (the failing ids recorded), and passes with the fix."""
    task_id = f"{project['name']}-{m.function.replace('.', '_')}-{m.line}-{m.kind}"
    repo = cache / "repos" / task_id
    fixed, reference = taskgen.task_tree(tree, m, repo, "target")
    check, target = box.work / "check", box.work / "check-target"
    taskgen.fresh_copy(repo, check, "target")
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
    return taskgen.record(
        cache, task_id, m, reference=reference, failing=failing, passing=passing, test_cmd=None,
        tally={"fail_to_pass": failing, "passed": len(passing)}, said=before.describe(),
    )  # fmt: skip


def main() -> int:
    args = taskgen.command_line(__doc__, language="rust", per_project=4, against="host's",
                        unit="crate").parse_args()  # fmt: skip
    cache = args.cache.resolve()
    if args.sandbox_check:
        differ = taskgen.sandbox_check(cache / "rust-tasks.jsonl", against="host", timeout_s=1200.0,
                               baseline="the host's cargo test baseline",
                               show_differences=True)  # fmt: skip
        return 1 if differ else 0
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
        taskgen.fresh_copy(tree, base_tree, "target")
        box.fetch(base_tree)
        base = box.test(base_tree, box.work / "screen-target" / project["name"])
        print(f"{project['name']}: baseline {base.describe()}", flush=True)
        if base.problem or base.exit_code != 0 or base.failing():
            raise SystemExit(f"{project['name']}: tests fail before any bug: {box.log_path}")
        copy = box.work / "screen" / project["name"]
        target = box.work / "screen-target" / project["name"]  # shared: each run rebuilds the crate
        taskgen.fresh_copy(tree, copy, "target")
        kept = taskgen.screen(
            project, tree, copy, mutants=mutants, is_test_path=is_test_path,
            caught=partial(caught, box, copy, target), want=args.per_project, seed=args.seed,
            most_tried=args.per_project * 4,
        )  # fmt: skip
        for m in kept:
            built = build_task(project, tree, m, cache, box)
            if built is not None:
                tasks.append(built["task"])
                written.setdefault(project["name"], []).append(built["manifest"])
    if args.write_manifest:
        head = {"seed": args.seed, "per_project": args.per_project, "rust": rust_version()}
        taskgen.write_manifest(MANIFEST, manifest, written, head)
    taskgen.write_tasks(cache / "rust-tasks.jsonl", tasks, built=f"{len(written)} crates")
    return 0


if __name__ == "__main__":
    sys.exit(main())
