"""Build the public task set: fetch the pinned sdists (manifest.json), plant single bugs by AST
mutation (mutate.py), keep those that make some test fail in the sandbox, and verify each task in
fresh sandboxes: it fails before, and passes with the reference fix (the mutation undone).

    python3 bench/tasks/generate.py [--cache bench/tasks/cache] [--per-project 8] [--seed 11]
        [--only NAME ...]

A project marked `"setup": "inferred"` has dependencies: its set-up is what worker infers from
its own files (sandbox/ecosystems/python/setup_infer.py), built once into a cached set-up image
that its mutants
are screened and its tasks verified on; its sandbox baseline is checked against the manifest's
venv `reference`. Its tasks carry no set-up command: `worker eval` infers the same one.

Writes CACHE/tasks.jsonl (with the examples/ tasks), CACHE/repos/<id>/ (one tree per task) and
CACHE/reference/<id>.patch (outside the trees: the model never sees them). Everything under the
cache stays out of git. Then: `worker eval CACHE/tasks.jsonl --out DIR --model local`.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# Run as a script: the project first (its packages), then this folder (mutate.py).
sys.path[:] = [str(ROOT), str(HERE)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from mutate import Mutant, balanced, mutants  # type: ignore[import-not-found]  # noqa: E402

from policies.limits import Limits  # noqa: E402
from sandbox.container.client import connect  # noqa: E402
from sandbox.container.image import DEFAULT_IMAGE, ensure_image  # noqa: E402
from sandbox.ecosystems.python.setup_infer import infer_setup  # noqa: E402
from sandbox.session import BoxSpec, open_session, workspace_owner  # noqa: E402
from sandbox.setup.cache import SetupSpec, prepare_setup_image  # noqa: E402
from sandbox.testrun.run import run_tests  # noqa: E402
from sandbox.testrun.verify import verify_patch  # noqa: E402
from sandbox.worktree.workspace import remove_dir, snapshot  # noqa: E402

LIMITS = Limits(memory_mb=1024, command_timeout_s=120, total_timeout_s=3600)
SCREEN_TIMEOUT_S = 60.0
GOAL = "make the failing tests pass"
COUNTED = ("passed", "skipped", "xfailed", "xpassed", "failed", "errors")
_COUNT = re.compile(r"(\d+) (passed|skipped|xfailed|xpassed|failed|errors?)\b")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def fetch(project: dict, sdists: Path) -> Path:
    """The pinned sdist, downloaded once and checked against its sha256."""
    # Newer sdists carry the normalised name (PEP 625: markdown_it_py-4.3.0.tar.gz).
    normalised = re.sub(r"[-_.]+", "_", project["name"]).lower()
    names = [f"{n}-{project['version']}.tar.gz" for n in (project["name"], normalised)]
    if not any((sdists / n).is_file() for n in names):
        sdists.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:",
             "--no-deps", f"{project['name']}=={project['version']}", "-d", str(sdists)],
            check=True,
        )  # fmt: skip
    path = next((sdists / n for n in names if (sdists / n).is_file()), None)
    if path is None:
        raise SystemExit(f"{project['name']}: pip download left none of {names} in {sdists}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != project["sha256"]:
        raise SystemExit(f"{path.name}: sha256 {digest} is not the pinned {project['sha256']}")
    return path


def extract(sdist: Path, into: Path) -> Path:
    """The sdist's tree (its single top folder), extracted once."""
    if not into.is_dir():
        into.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=into.parent))
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        (top,) = tmp.iterdir()
        top.rename(into)
        tmp.rmdir()
        commit_tree(into, "sdist as published")
    if not any(into.glob("LICENSE*")):
        raise SystemExit(f"{into.name}: the sdist has no LICENSE file")
    return into


def commit_tree(tree: Path, message: str) -> None:
    """A repository of its own (the cache sits inside this project's git tree, which ignores
    it: a tree without one would look empty to the sandbox's copy)."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    env |= {"GIT_AUTHOR_NAME": "tasks", "GIT_AUTHOR_EMAIL": "tasks@worker.invalid"}
    env |= {"GIT_COMMITTER_NAME": "tasks", "GIT_COMMITTER_EMAIL": "tasks@worker.invalid"}
    for args in (["init", "-q"], ["add", "-A", "-f", "."], ["commit", "-qm", message]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, env=env)


def reference_fix(buggy: str, fixed: str, *, path: str) -> str:
    """The diff that takes a file from `buggy` back to `fixed`: a task's reference fix."""
    return "".join(
        difflib.unified_diff(
            buggy.splitlines(keepends=True), fixed.splitlines(keepends=True),
            fromfile=f"a/{path}", tofile=f"b/{path}",
        )
    )  # fmt: skip


def project_image(project: dict, tree: Path, client) -> str:
    """The image the project's tests run on: the sandbox image, or for `"setup": "inferred"`
    the set-up worker infers from the project's files, built once (then found cached), with
    worker's defaults (the network fenced to the package index): `worker eval` then finds it."""
    if project.get("setup") != "inferred":
        return DEFAULT_IMAGE
    plan = infer_setup(tree)
    print(f"{project['name']}: {plan.describe()}", flush=True)
    for note in plan.notes:
        print(f"  note: {note}")
    if plan.command is None:
        raise SystemExit(f"{project['name']}: marked for set-up, but nothing was inferred")
    spec = SetupSpec(command=plan.command, installer=plan.installer)
    times = []
    for _ in range(2):  # the second call shows what a later run on the same files pays
        done = prepare_setup_image(
            client, base_image=DEFAULT_IMAGE, spec=spec, repo=tree, limits=LIMITS,
            progress=lambda line: print(f"  {line}", flush=True),
        )  # fmt: skip
        times.append(f"{done.duration_s:.1f}s ({'cached' if done.cached else 'built'})")
    print(f"  set-up {' then '.join(times)}: {done.image}", flush=True)
    return done.image


def counts(output: str) -> dict[str, int]:
    """pytest's closing tally ("1158 passed, 32 skipped in 8.0s") as counts by outcome."""
    tally: dict[str, int] = {}
    for line in reversed(_ANSI.sub("", output).splitlines()):
        if found := _COUNT.findall(line):
            for n, outcome in found:
                tally["errors" if outcome.startswith("error") else outcome] = int(n)
            break
    return tally


def check_reference(project: dict, output: str) -> None:
    """The sandbox baseline against the manifest's venv reference, said either way."""
    if "reference" not in project:
        return
    got = counts(output)
    want = {k: project["reference"].get(k, 0) for k in COUNTED}
    shown = ", ".join(f"{got.get(k, 0)} {k}" for k in COUNTED if got.get(k) or want.get(k))
    if all(got.get(k, 0) == want[k] for k in COUNTED):
        print(f"{project['name']}: sandbox baseline {shown}, as in the venv reference", flush=True)
    else:
        venv = ", ".join(f"{want[k]} {k}" for k in COUNTED if want[k])
        print(f"{project['name']}: sandbox baseline {shown} DIFFERS from the venv's {venv}")


def screen(
    project: dict, tree: Path, *, want: int, seed: int, client, image: str
) -> tuple[list, list]:
    """Mutants that make some test fail (pytest exit 1: not a crash at import, not a hang),
    tried in one sandbox on a copy of the tree, in a shuffled order balanced over kinds."""
    pool: list[Mutant] = []
    for rel in project["sources"]:
        pool += mutants((tree / rel).read_text(encoding="utf-8"), path=rel)
    order = balanced(pool, random.Random(f"{seed}-{project['name']}"))
    kept: list[Mutant] = []
    tried = 0
    run_dir = Path(tempfile.mkdtemp(prefix="worker-tasks-"))
    used_functions: set[tuple[str, str]] = set()
    try:
        spec = BoxSpec(client=client, image=image, limits=LIMITS)
        with open_session(tree, spec=spec, run_dir=run_dir, keep_logs=False) as session:
            base = session.box.run(
                f"{project['test_cmd']} -q -p no:cacheprovider", timeout_s=300,
                env={"PYTHONDONTWRITEBYTECODE": "1"},
            )  # fmt: skip
            check_reference(project, base.output)
            if base.exit_code != 0:
                raise SystemExit(f"{project['name']}: tests fail before any bug\n{base.output}")
            for m in order:
                if len(kept) >= want:
                    break
                if (m.path, m.function) in used_functions:
                    continue  # one bug per function: tasks stay distinct
                tried += 1
                target = session.workspace.path / m.path
                original = target.read_text(encoding="utf-8")
                target.write_text(m.apply(original), encoding="utf-8")
                try:
                    result = session.box.run(
                        f"{project['test_cmd']} -x -q -p no:cacheprovider",
                        timeout_s=SCREEN_TIMEOUT_S, env={"PYTHONDONTWRITEBYTECODE": "1"},
                    )  # fmt: skip
                finally:
                    target.write_text(original, encoding="utf-8")
                if result.exit_code == 1 and not result.timed_out:
                    kept.append(m)
                    used_functions.add((m.path, m.function))
    finally:
        remove_dir(run_dir)
    print(f"{project['name']}: {len(kept)} of {tried} mutants tried make a test fail", flush=True)
    return kept, pool


def build_task(
    project: dict, tree: Path, m: Mutant, cache: Path, client, image: str
) -> dict | None:
    """One task's tree, its reference fix, and the proof: fails before, passes with the fix."""
    task_id = f"{project['name']}-{m.function.strip('_')}-{m.line}-{m.kind}"
    repo = cache / "repos" / task_id
    remove_dir(repo)
    shutil.copytree(tree, repo, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".git"))
    target = repo / m.path
    buggy = m.apply(target.read_text(encoding="utf-8"))
    fixed = (tree / m.path).read_text(encoding="utf-8")
    target.write_text(buggy, encoding="utf-8")
    commit_tree(repo, "the task")
    reference = reference_fix(buggy, fixed, path=m.path)
    work = Path(tempfile.mkdtemp(prefix="worker-tasks-"))
    spec = BoxSpec(client=client, image=image, limits=LIMITS)
    try:
        with open_session(repo, spec=spec, run_dir=work / "before") as session:
            before = run_tests(session.box, test_cmd=project["test_cmd"], timeout_s=300)
        if before.summary is None:
            tail = before.result.output.strip().splitlines()[-3:]
            print(f"  {task_id}: dropped (no test report before the fix): {' / '.join(tail)}")
            return None
        failing = sorted(before.summary.failing_ids())
        passing = sorted(t for t, o in before.summary.outcomes.items() if o == "passed")
        workspace = snapshot(repo, work / "clean", owner_uid=workspace_owner("docker"))
        after = verify_patch(
            spec=spec, workspace=workspace, patch=reference, test_cmd=project["test_cmd"],
            work_dir=work / "verify",
        )  # fmt: skip
    finally:
        remove_dir(work)
    outcomes = after.summary.outcomes if after.summary else {}
    if not failing or any(outcomes.get(t) != "passed" for t in failing + passing):
        print(f"  {task_id}: dropped (does not fail before, or the fix does not pass)")
        return None
    (cache / "reference").mkdir(exist_ok=True)
    (cache / "reference" / f"{task_id}.patch").write_text(reference, encoding="utf-8")
    print(f"  {task_id}: {len(failing)} failing, {len(passing)} passing", flush=True)
    return {
        "id": task_id,
        "repo": f"repos/{task_id}",
        "goal": GOAL,
        "test_cmd": project["test_cmd"],
        "fail_to_pass": failing,
        "pass_to_pass": passing,
    }


def example_tasks(cache: Path) -> list[dict]:
    """The examples/ folder's buggy projects, judged by the whole suite."""
    return [
        {"id": f"example-{d.name}", "repo": os.path.relpath(d, cache), "goal": GOAL}
        for d in sorted((ROOT / "examples").iterdir())
        if (d / "conftest.py").is_file()
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=HERE / "cache")
    parser.add_argument("--per-project", type=int, default=8)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--only", nargs="*", help="project names to build (default: all)")
    args = parser.parse_args()
    cache = args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((HERE / "manifest.json").read_text())
    client = connect()
    ensure_image(client)
    tasks = example_tasks(cache)
    for project in manifest["projects"]:
        if args.only and project["name"] not in args.only:
            continue
        sdist = fetch(project, cache / "sdists")
        tree = extract(sdist, cache / "src" / f"{project['name']}-{project['version']}")
        image = project_image(project, tree, client)
        kept, _ = screen(
            project, tree, want=args.per_project, seed=args.seed, client=client, image=image
        )
        for m in kept:
            task = build_task(project, tree, m, cache, client, image)
            if task is not None:
                tasks.append(task)
    out = cache / "tasks.jsonl"
    out.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    projects = {t["id"].rsplit("-", 3)[0] for t in tasks if not t["id"].startswith("example-")}
    print(f"{len(tasks)} tasks ({len(projects)} projects and the examples): {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
