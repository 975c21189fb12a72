"""How straight three journeys through the code are: the files a real run's calls cross.

    python bench/journeys.py fix     # `worker fix` -> the first model call
    python bench/journeys.py patch   # an apply_patch call -> the verdict of its clean re-check
    python bench/journeys.py ray     # `worker eval --ray` -> a result row (results.json)

Each runs the real command in this process (real Docker, the scripted model server of
worker/llm/scripted_server.py; `ray` starts a two-node local Ray cluster) with `sys.setprofile`
recording every call and return of a function in worker/, sandbox/, tools/ or policies/ on the
journey's thread, from the first call of its start function to the first call of its end one.

The path is that walk of calls and returns, kept to the calls at most `--hops` file changes
below the outermost frame the walk reaches (default 2: what a reader follows from the journey's
functions into the functions they call, not the helpers of those); its *entries* are the times
it moves into a file from another file, a return into a file counting as an entry. It prints
the files, the entries, and the files entered more than twice (`--show`: the walk itself).
`--root DIR` measures another checkout of the code (e.g. one `git archive`d to /tmp), with this
script's journeys.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGES = ("worker", "sandbox", "tools", "policies")

BUGGY = {
    "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    "tests/test_calc.py": (
        "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n"
    ),
    "conftest.py": "",
}
FIX = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""


@dataclass(frozen=True)
class Journey:
    """Where a journey starts and ends: (file under the root, function's qualified name;
    `*.name`: a method of any class; optionally the caller's name too); the first of the `end`
    spots called ends it."""

    start: tuple[str, ...]
    end: tuple[tuple[str, ...], ...]


MODEL_CALL = (("worker/llm/client.py", "*.complete"), ("worker/llm/process.py", "*.complete"))
JOURNEYS = {
    "fix": Journey(start=("worker/cli/main.py", "main"), end=MODEL_CALL),
    "patch": Journey(start=("tools/apply_patch.py", "execute"),
                     end=(("sandbox/testrun/verdict.py", "judge", "verify"),)),
    "ray": Journey(start=("worker/cli/eval.py", "run_eval"),
                   end=(("worker/evaluate/results.py", "write_results"),)),
}  # fmt: skip


@dataclass
class Walk:
    """Every call and return of ours on the main thread: (kind, file, function, frame id,
    caller's frame id); a return's file and function are those of the frame returned to."""

    root: Path
    journey: Journey
    thread: int = field(default_factory=threading.get_ident)
    events: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    stack: list[tuple[str, str, int]] = field(default_factory=list)
    ids: Iterator[int] = field(default_factory=lambda: iter(range(1, 1 << 62)))
    start: int | None = None  # the index in `events` of the start's call
    end: int | None = None

    def _ours(self, frame: FrameType) -> str | None:
        try:
            rel = Path(frame.f_code.co_filename).relative_to(self.root)
        except ValueError:
            return None
        return str(rel) if rel.parts[0] in PACKAGES else None

    def profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if self.end is not None or event not in ("call", "return"):
            return
        if threading.get_ident() != self.thread:
            return
        rel = self._ours(frame)
        if rel is None:
            return
        name = frame.f_code.co_qualname
        if event == "call":
            parent, caller = (self.stack[-1][2], self.stack[-1][1]) if self.stack else (0, "")
            me = next(self.ids)
            self.stack.append((rel, name, me))
            self.events.append(("call", rel, name, me, parent))
            if self.start is None and _is(self.journey.start, rel, name, caller):
                self.start = len(self.events) - 1
            elif self.start is not None and any(
                _is(e, rel, name, caller) for e in self.journey.end
            ):
                self.end = len(self.events) - 1
        elif self.stack:
            self.stack.pop()
            if self.stack:
                back, back_name, me = self.stack[-1]
                self.events.append(("return", back, back_name, me, 0))


def _is(spot: tuple[str, ...], rel: str, name: str, caller: str) -> bool:
    want_file, want, *called_by = spot
    if called_by and not caller.endswith(called_by[0]):
        return False
    return rel == want_file and (name == want or (want[:2] == "*." and name.endswith(want[1:])))


def measure(walk: Walk, hops: int) -> dict[str, Any]:
    """Files and entries of the walk between start and end: the spine (the start, the end and
    their callers) and what the spine calls, kept to `hops` file changes away from it (calls
    in a spine frame's own file are free); imports and what the start calls left out."""
    if walk.start is None or walk.end is None:
        raise SystemExit("the journey's start or end was never called")
    parent = {me: up for kind, _f, _n, me, up in walk.events if kind == "call"}
    spine: set[int] = set()
    for at in (walk.start, walk.end):
        me = walk.events[at][3]
        while me:
            spine.add(me)
            me = parent.get(me, 0)
    away: dict[int, float] = {}  # file changes from the spine, per frame
    where: dict[int, tuple[str, str]] = {}
    inside_start = walk.events[walk.start][3]  # what the start calls is not the journey's
    for kind, rel, name, me, up in walk.events:
        if kind != "call":
            continue
        where[me] = (rel, name)
        if me in spine:
            away[me] = 0
        elif name == "<module>" or up not in away or up == inside_start:
            away[me] = float("inf")
        else:
            away[me] = away[up] + (where[up][0] != rel)
    path: list[tuple[str, str, str]] = []
    for kind, rel, name, me, _up in walk.events[walk.start : walk.end + 1]:
        if away.get(me, float("inf")) > hops:
            continue
        if not path or path[-1][1] != rel:
            path.append((kind, rel, name))
    entries = Counter(rel for _kind, rel, _name in path[1:])
    return {
        "files": len({rel for _kind, rel, _name in path}),
        "entries": sum(entries.values()),
        "entered_more_than_twice": {f: n for f, n in entries.most_common() if n > 2},
        "path": [f"{kind} {rel} {name}" for kind, rel, name in path],
    }


@contextmanager
def recording(walk: Walk) -> Iterator[None]:
    threading.setprofile(walk.profile)
    sys.setprofile(walk.profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def make_repo(where: Path, name: str = "repo") -> Path:
    repo = where / name
    for rel, text in BUGGY.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "initial")
    return repo


def run_fix(walk: Walk, tmp: Path) -> None:
    from worker.cli.main import main
    from worker.llm.scripted_server import ScriptedServer, tool_call

    repo = make_repo(tmp)
    script = [tool_call("read_file", {"path": "calc.py"}), tool_call("apply_patch", {"patch": FIX})]
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    with ScriptedServer(script=script) as server:
        argv = ["fix", "--repo", str(repo), "--out", str(tmp / "out"), "--model", "scripted"]
        argv += ["--base-url", server.base_url, "--quiet"]
        with recording(walk):
            code = _main(main, argv)
    if code != 0:
        raise SystemExit(f"worker fix ended {code}: not the journey measured")


def run_ray(walk: Walk, tmp: Path) -> None:
    from ray import cluster_utils

    from worker.cli.main import main
    from worker.llm.scripted_server import ScriptedServer, tool_call

    repo = make_repo(tmp, "t0")
    tasks = tmp / "tasks.jsonl"
    line = {"id": "t0", "repo": repo.name, "fail_to_pass": ["tests/test_calc.py::test_mean"]}
    tasks.write_text(json.dumps(line) + "\n")
    node = {"num_cpus": 1, "node_ip_address": "127.0.0.2"}
    node["env_vars"] = {"PYTHONPATH": str(walk.root), "OPENAI_API_KEY": "sk-node"}
    cluster = cluster_utils.Cluster(
        initialize_head=True, head_node_args={**node, "num_cpus": 0, "include_dashboard": False}
    )
    try:
        cluster.add_node(**node)
        cluster.wait_for_nodes()
        with ScriptedServer(script=[tool_call("apply_patch", {"patch": FIX})]) as server:
            argv = ["eval", str(tasks), "--out", str(tmp / "out"), "--model", "scripted"]
            argv += ["--base-url", server.base_url, "--max-steps", "1", "--ray", cluster.address]
            with recording(walk):
                _main(main, argv)
    finally:
        cluster.shutdown()


def _main(main: Callable[[list[str]], int], argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journey", choices=sorted(JOURNEYS))
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the checkout measured")
    parser.add_argument("--hops", type=int, default=1, help="file changes off the spine kept")
    parser.add_argument("--show", action="store_true", help="print the walk itself")
    args = parser.parse_args()
    root = args.root.resolve()
    # This folder first on sys.path would hide the `sandbox` package; the root measured first.
    sys.path[:] = [str(root)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]
    os.environ["PYTHONPATH"] = str(root)
    walk = Walk(root=root, journey=JOURNEYS[args.journey])
    with tempfile.TemporaryDirectory(prefix="journeys-") as tmp:
        run = run_ray if args.journey == "ray" else run_fix
        run(walk, Path(tmp))
    figures = measure(walk, args.hops)
    if not args.show:
        figures.pop("path")
    print(json.dumps({"journey": args.journey, "root": str(root), **figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
