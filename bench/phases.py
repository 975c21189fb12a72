"""`worker` run with its named phases timed, for bench/overhead.py --phases.

Run as `python bench/phases.py OUT.json ARGS...` instead of `python -m worker.cli ARGS...`: it
wraps the functions of PHASES as their modules are imported (an import hook, so nothing is
imported earlier than the run itself would), runs the command line, and writes one row per
call: [phase, thread, start, end], in seconds of `time.time()` (the caller subtracts its own
start). Wall-clock, on whichever thread ran it: phases on other threads overlap the main one.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
# As in overhead.py: this folder first on sys.path would hide the `sandbox` package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]

#: module: the functions (or Class.method) of it to time, in the order a run meets them.
PHASES: dict[str, tuple[str, ...]] = {
    "worker.cli.main": ("main",),
    "worker.cli.fix": ("run_fix", "_finish"),
    "worker.cli.fix_request": ("make_request",),
    "worker.record.header": ("tree_hash",),
    "worker.run.fix": (
        "FixRun.run",
        "FixRun.deliver",
        "FixRun.prepare_sandbox",
        "FixRun.run_baseline",
        "FixRun.run_loop",
        "FixRun.record",
    ),
    "sandbox.setup.choice": ("choose_setup", "before_setup", "image_python"),
    "sandbox.container.client": ("connect",),
    "sandbox.container.prune": ("sweep_leftovers",),
    "sandbox.container.image": ("ensure_image",),
    "sandbox.ecosystems.python.ecosystem": ("Python.toolchain",),
    "sandbox.ecosystems.python.choice": ("PythonChoice.ensure",),
    "sandbox.worktree.workspace": ("snapshot", "protect_files", "Workspace.diff", "remove_dir"),
    "sandbox.worktree.capped_dir": ("mount_capped", "unmount_under"),
    "sandbox.worktree.scratch": ("make_scratch_dir",),
    "sandbox.session": ("guard_fixtures",),
    "sandbox.on_thread": ("OnThread.wait", "OnThread._run"),
    "sandbox.container.docker_sandbox": (
        "DockerSandbox.start",
        "DockerSandbox._execute",
        "DockerSandbox.close",
    ),
    "sandbox.worktree.fixture_guard": ("FixtureGuard.sweep",),
    "sandbox.testrun.run": ("run_tests",),
    "sandbox.testrun.verify": ("CleanCheck._prepare", "CleanCheck.verify", "CleanCheck.close"),
    "worker.llm.process": ("ModelProcess.complete", "ModelProcess.close"),
    "tools.registry": ("ToolRegistry.call",),
    "worker.run.preload": ("_import_all",),
    "sandbox.setup.cache": ("prepare_setup_image",),
    "sandbox.testrun.cache": ("TestRunCache.run",),
}

ROWS: list[tuple[str, str, float, float]] = []


def _timed(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.time()
        try:
            return func(*args, **kwargs)
        finally:
            ROWS.append((name, threading.current_thread().name, started, time.time()))

    return wrapper


def _wrap(module: ModuleType) -> None:
    for dotted in PHASES.get(module.__name__, ()):
        owner: Any = module
        *path, attr = dotted.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        func = getattr(owner, attr, None) if owner is not None else None
        if callable(func):
            setattr(owner, attr, _timed(dotted, func))


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        _wrap(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in PHASES:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def main() -> None:
    out, args = Path(sys.argv[1]), sys.argv[2:]
    sys.meta_path.insert(0, _Finder())
    sys.argv = ["worker", *args]
    from worker.cli.main import main as worker_main

    code = worker_main()
    out.write_text(json.dumps({"rows": ROWS, "exit": time.time()}))
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
