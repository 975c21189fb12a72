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

import json
import os
import shutil
import subprocess
import sys
import uuid
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BENCH = HERE.parent
sys.path[:] = [str(ROOT), str(HERE), str(BENCH)] + [
    p for p in sys.path if Path(p or ".").resolve() not in (HERE, BENCH)
]

import taskgen  # type: ignore[import-not-found]  # noqa: E402
from generate import commit_tree  # type: ignore[import-not-found]  # noqa: E402
from mutate import Mutant  # type: ignore[import-not-found]  # noqa: E402
from mutate_go import is_test_path, mutants  # type: ignore[import-not-found]  # noqa: E402

from sandbox.ecosystems.go.testjson import parse_go_test_json  # noqa: E402

MANIFEST = HERE / "manifest-go.json"
IMAGE = "worker-sandbox:go1.24"
TEST_TIMEOUT_S = 300.0
SCREEN_TIMEOUT_S = 90.0


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

    def test(self, folder: str, *, timeout_s: float = TEST_TIMEOUT_S) -> taskgen.TreeRun:
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
            return taskgen.TreeRun(exit_code=124, problem="timed out")
        try:
            summary = parse_go_test_json(done.stdout, module=_module(self.work / folder))
        except ValueError as exc:
            return taskgen.TreeRun(exit_code=done.returncode, problem=str(exc))
        return taskgen.TreeRun(exit_code=done.returncode, outcomes=dict(summary.outcomes))


def _module(tree: Path) -> str | None:
    for line in (tree / "go.mod").read_text(encoding="utf-8").splitlines():
        if line.startswith("module "):
            return line.split()[1]
    return None


def source(project: dict, cache: Path) -> Path:
    """The project's tree (go-projects/<name>), a repository of its own."""
    tree = cache / "go-src" / project["name"]
    taskgen.fresh_copy(HERE / project["path"], tree)
    commit_tree(tree, f"{project['name']}: the public task set's Go module")
    return tree


def caught(box: GoBox, m: Mutant) -> bool:
    """The screening copy's run makes some test fail by id (not a package failing to build,
    not a hang)."""
    run = box.test("screen", timeout_s=SCREEN_TIMEOUT_S)
    failing = run.failing()
    return run.exit_code not in (0, 124) and bool(failing) and all("::" in t for t in failing)


def build_task(project: dict, tree: Path, m: Mutant, cache: Path, box: GoBox) -> dict | None:
    """One task's tree, its reference fix, and the proof on a fresh copy of that tree: a plain
    run fails (the failing ids recorded), and passes with the fix."""
    task_id = f"{project['name']}-{m.function.replace('.', '_')}-{m.line}-{m.kind}"
    repo = cache / "repos" / task_id
    fixed, reference = taskgen.task_tree(tree, m, repo)
    check = box.work / "check"
    taskgen.fresh_copy(repo, check)
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
    return taskgen.record(
        cache, task_id, m, reference=reference, failing=failing, passing=passing,
        test_cmd=project["test"], tally={"fail_to_pass": failing, "passed": len(passing)},
        said=before.describe(),
    )  # fmt: skip


def main() -> int:
    def image_flag(parser):
        parser.add_argument("--image", default=IMAGE, help=f"the Go image (default {IMAGE})")

    args = taskgen.command_line(__doc__, language="go", per_project=8, against="plain runs'",
                        more=image_flag).parse_args()  # fmt: skip
    cache = args.cache.resolve()
    if args.sandbox_check:
        differ = taskgen.sandbox_check(
            cache / "go-tasks.jsonl", against="plain", timeout_s=600.0,
            baseline="the plain go test ./... baseline", flags=["--image", args.image],
        )  # fmt: skip
        return 1 if differ else 0
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
            taskgen.fresh_copy(tree, box.work / "base")
            base = box.test("base")
            print(f"{project['name']}: baseline {base.describe()}", flush=True)
            if base.problem or base.exit_code != 0 or base.failing():
                raise SystemExit(f"{project['name']}: tests fail before any bug")
            taskgen.fresh_copy(tree, box.work / "screen")
            kept = taskgen.screen(
                project, tree, box.work / "screen", mutants=mutants, is_test_path=is_test_path,
                caught=partial(caught, box), want=args.per_project, seed=args.seed,
            )  # fmt: skip
            for m in kept:
                built = build_task(project, tree, m, cache, box)
                if built is not None:
                    tasks.append(built["task"])
                    written.setdefault(project["name"], []).append(built["manifest"])
        finally:
            box.close()
    if args.write_manifest:
        taskgen.write_manifest(MANIFEST, manifest, written, {"seed": args.seed,
                                                     "per_project": args.per_project})  # fmt: skip
    taskgen.write_tasks(cache / "go-tasks.jsonl", tasks, built=f"{len(written)} projects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
