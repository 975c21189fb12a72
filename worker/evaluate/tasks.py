"""The task file of `worker eval`: JSONL, one task a line, checked before anything runs.

    {"id": "calc-mean", "repo": "calc", "goal": "make the tests pass"}
    {"id": "x", "repo": "https://host/x.git", "commit": "0a1b...", "test_cmd": "python -m pytest",
     "setup": "pip install -e .", "fail_to_pass": ["tests/t.py::test_a"], "pass_to_pass": []}

A relative `repo` is read from the task file's folder. With `commit`, the repository (a path or
a git URL) is cloned at that commit into the eval's own folder; the original is only read.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.errors import UsageError

DEFAULT_GOAL = "make the failing tests pass"
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_URL = re.compile(r"^(https?|git|ssh|file)://|^[\w.-]+@[\w.-]+:")
_KEYS = {"id", "repo", "goal", "commit", "test_cmd", "setup", "fail_to_pass", "pass_to_pass"}


@dataclass(frozen=True, kw_only=True)
class EvalTask:
    """One task: where the repository is, what to ask, and how to judge the patch (it travels
    to a cluster node as it is: Ray pickles it)."""

    id: str
    repo: str  # a local path (absolute once loaded) or a git URL
    goal: str = DEFAULT_GOAL
    commit: str | None = None
    test_cmd: str | None = None
    setup: str | None = None
    fail_to_pass: tuple[str, ...] = ()
    pass_to_pass: tuple[str, ...] = ()

    @property
    def is_url(self) -> bool:
        return bool(_URL.match(self.repo))


def load_tasks(path: Path) -> list[EvalTask]:
    """Read and check every line; the first bad one is a UsageError naming its line."""
    if not path.is_file():
        raise UsageError(f"task file not found: {path}")
    tasks: list[EvalTask] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            task = _task(json.loads(line), base=path.parent)
        except (json.JSONDecodeError, ValueError, TypeError) as exc:
            raise UsageError(f"{path}:{number}: {exc}") from None
        if task.id in seen:
            raise UsageError(f"{path}:{number}: task id {task.id!r} appears twice")
        seen.add(task.id)
        tasks.append(task)
    if not tasks:
        raise UsageError(f"no tasks in {path}")
    return tasks


def _task(raw: object, *, base: Path) -> EvalTask:
    if not isinstance(raw, dict):
        raise ValueError("a task is a JSON object")
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ValueError(f"unknown keys {unknown}; a task has {sorted(_KEYS)}")
    task_id, repo = raw.get("id"), raw.get("repo")
    if not isinstance(task_id, str) or not _ID.fullmatch(task_id):
        raise ValueError(f"id must be letters, digits, '.', '_' or '-' (got {task_id!r})")
    if not isinstance(repo, str) or not repo:
        raise ValueError(f"task {task_id}: repo must be a path or a git URL")
    texts = {k: raw.get(k) for k in ("goal", "commit", "test_cmd", "setup")}
    for key, value in texts.items():
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValueError(f"task {task_id}: {key} must be a non-empty string")
    ids = {k: raw.get(k) or [] for k in ("fail_to_pass", "pass_to_pass")}
    for key, value in ids.items():
        if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
            raise ValueError(f"task {task_id}: {key} must be a list of test ids")
    task = EvalTask(
        id=task_id,
        repo=repo,
        goal=texts["goal"] or DEFAULT_GOAL,
        commit=texts["commit"],
        test_cmd=texts["test_cmd"],
        setup=texts["setup"],
        fail_to_pass=tuple(ids["fail_to_pass"]),
        pass_to_pass=tuple(ids["pass_to_pass"]),
    )
    if task.is_url:
        if task.commit is None:
            raise ValueError(f"task {task_id}: a git URL needs a commit")
        return task
    local = (base / Path(repo).expanduser()).resolve()
    if not local.is_dir():
        raise ValueError(f"task {task_id}: repository not found: {local}")
    return EvalTask(**{**_fields(task), "repo": str(local)})


def _fields(task: EvalTask) -> dict[str, Any]:
    return {name: getattr(task, name) for name in task.__dataclass_fields__}


def materialize(task: EvalTask, *, into: Path) -> Path:
    """The folder to run the task on: the local path itself, or a clone at `commit` (made once,
    kept in `into` so that a resumed eval does not fetch again)."""
    if task.commit is None:
        return Path(task.repo)
    if (into / ".git").is_dir():
        head = _git(into, "rev-parse", "HEAD").strip()
        if head.startswith(task.commit) or task.commit.startswith(head):
            return into
        raise UsageError(f"task {task.id}: {into} holds {head[:12]}, not {task.commit}")
    into.parent.mkdir(parents=True, exist_ok=True)
    partial = into.with_name(into.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        _git(None, "clone", "--quiet", "--no-checkout", task.repo, str(partial))
        _git(partial, "checkout", "--quiet", "--detach", task.commit)
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or "").strip().splitlines()
        raise UsageError(
            f"task {task.id}: cannot check out {task.commit} of {task.repo}: "
            + (detail[-1] if detail else f"git exited {exc.returncode}")
        ) from None
    partial.rename(into)
    return into


def _git(repo: Path | None, *args: str) -> str:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
    }
    where = ["-C", str(repo)] if repo is not None else []
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *where, *args],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
