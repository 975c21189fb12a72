"""What a cluster node runs for `worker eval --ray`: plain functions the driver wraps as Ray tasks
(this module imports no Ray, so it is tested and type-checked like the rest).

Everything a task reads arrives as arguments (the task, its tree as tar bytes, the fix flags);
everything it made goes back as bytes. The node's own environment supplies the rest: Docker, the
sandbox image, the model key (read by `worker fix` from the environment the node was started
with; the driver never sends one). A task's `worker fix` process dies with the Ray worker that
started it (PR_SET_PDEATHSIG); the re-check runs in the Ray worker itself. Every container an
attempt starts carries the labels `worker.eval`, `worker.task` and `worker.attempt`, and the
sweeps here find what an attempt left by them.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

import docker.errors

from policies.limits import Limits
from sandbox.container.client import connect
from sandbox.container.docker_sandbox import LABEL, RUN_LABELS, RUN_LABELS_ENV, DockerSandbox
from sandbox.container.image import DEFAULT_IMAGE, ensure_image
from sandbox.worktree.workspace import remove_dir
from worker.evaluate.batch import KILL_GRACE_S, end_group, fix_command
from worker.evaluate.recheck import recheck
from worker.evaluate.tasks import EvalTask

#: Why a fix run ended, in its report, when the node and not the task was at fault: retried.
NODE_FAULTS = (
    "the sandbox container disappeared",
    "the Docker daemon stopped answering",
    "Docker is not available",
)
_PR_SET_PDEATHSIG = 1


def pack_tree(path: Path) -> bytes:
    """A folder as gzipped tar bytes (symlinks kept as links, never followed)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        tar.add(str(path), arcname=".")
    return buffer.getvalue()


def unpack_tree(data: bytes, into: Path) -> Path:
    """Tar bytes into `into` (made); members that would land outside it are refused."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        tar.extractall(into, filter="tar")
    return into


def node_name() -> str:
    """How reports name this node: its host name and the address Ray knows it by."""
    return f"{socket.gethostname()}/{os.environ.get('RAY_NODE_IP_ADDRESS', '')}".rstrip("/")


def self_check(image: str | None) -> dict[str, Any]:
    """May this node run sandboxes? Docker answers, the image is there (built if not), and a
    sandbox made as a run makes one has no network, is not root and cannot write its root."""
    image = image or DEFAULT_IMAGE
    try:
        client = connect(timeout_s=30)
    except Exception as exc:  # noqa: BLE001 - the node's answer, not the driver's crash
        return {"ok": False, "why": _line(exc)}
    scratch = Path(tempfile.mkdtemp(prefix="worker-eval-check-"))
    try:
        if image == DEFAULT_IMAGE:
            ensure_image(client)
        else:
            client.images.get(image)
        probe = (
            "import os, pathlib\n"
            "nets = sorted(os.listdir('/sys/class/net'))\n"
            "try:\n    open('/etc/worker-probe', 'w').close(); ro = False\n"
            "except OSError:\n    ro = True\n"
            "print(nets == ['lo'], os.getuid() != 0, ro)\n"
        )
        (scratch / "ws").mkdir()
        (scratch / "ws" / "probe.py").write_text(probe)
        box = DockerSandbox(
            client=client,
            image=image,
            workspace=scratch / "ws",
            control_dir=scratch / "control",
            limits=Limits(),
            labels={"worker.phase": "self-check"},
        )
        with box:
            result = box.run("python3 probe.py", timeout_s=60)
        answers = result.output.split()
        if answers != ["True", "True", "True"]:
            names = ("no network", "not root", "read-only root")
            failed = [n for n, a in zip(names, answers, strict=False) if a != "True"]
            return {"ok": False, "why": "hardening probe failed: " + ", ".join(failed or names)}
        return {"ok": True, "why": ""}
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "why": _line(exc)}
    finally:
        client.close()
        remove_dir(scratch)


def run_fix(
    task: dict[str, Any],
    tree: bytes,
    *,
    eval_id: str,
    attempt: str,
    fix_flags: list[str],
    fix_timeout_s: float | None,
    model: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One attempt of one task: the tree unpacked here, `worker fix` on it as a local eval runs
    it, and its output folder and log back as bytes. `model`: the node's bundled-model server
    (`NodeModel.start()`'s answer), which the run uses instead of starting its own."""
    clock = Phases()
    sweep_task(eval_id, task["id"])  # an earlier attempt's leftovers on this node go first
    clock.lap("sweep")
    work = Path(tempfile.mkdtemp(prefix="worker-eval-task-"))
    try:
        repo = tree_on_node(eval_id, task["id"], tree)
        clock.lap("unpack")
        eval_task = task_from_wire({**task, "repo": str(repo)})
        command = fix_command(eval_task, repo, work / "fix", fix_flags)
        limit = None if fix_timeout_s is None else fix_timeout_s + KILL_GRACE_S
        labels = attempt_labels(eval_id, task["id"], attempt)
        env = {**os.environ, RUN_LABELS_ENV: json.dumps(labels), **model_env(model)}
        started = time.monotonic()
        with (work / "fix.log").open("wb") as log:
            exit_code = _run_child(command, stdout=log, env=env, limit_s=limit)
        seconds = time.monotonic() - started
        clock.lap("child")
        report = _read_json(work / "fix" / "report.json")
        packed = pack_tree(work / "fix") if (work / "fix").is_dir() else b""
        clock.lap("pack")
        return {
            "exit_code": exit_code,
            "seconds": round(seconds, 3),
            "node_fault": node_fault(report),
            "fix": packed,
            "log": (work / "fix.log").read_bytes(),
            "node": node_name(),
            "phases": clock.done(),
        }
    finally:
        remove_dir(work)


def run_recheck(
    task: dict[str, Any], tree: bytes, patch: str, *, eval_id: str, attempt: str
) -> dict[str, Any]:
    """The independent re-check of one patch, in a fresh sandbox on this node. It runs in the Ray
    worker itself (no second interpreter to start): it ends with the worker, a cancelled task
    removes its sandbox on the way out, and its containers carry the attempt's labels."""
    clock = Phases()
    work = Path(tempfile.mkdtemp(prefix="worker-eval-recheck-"))
    labels = RUN_LABELS.set({**attempt_labels(eval_id, task["id"], attempt), "worker.recheck": "1"})
    try:
        repo = tree_on_node(eval_id, task["id"], tree)
        clock.lap("unpack")
        eval_task = task_from_wire({**task, "repo": str(repo)})
        started = time.monotonic()
        verdict = recheck(eval_task, repo, patch, work_dir=work / "rc")
        seconds = round(time.monotonic() - started, 3)
        clock.lap("recheck")
        logs = pack_tree(work / "rc") if (work / "rc").is_dir() else b""
        clock.lap("pack")
        return {
            "recheck": verdict.to_dict(),
            "seconds": seconds,
            "logs": logs,
            "node": node_name(),
            "phases": clock.done(),
        }
    finally:
        RUN_LABELS.reset(labels)
        remove_dir(work)


def model_env(model: dict[str, Any] | None) -> dict[str, str]:
    """What a task's `worker fix` adds to its environment to use the node's bundled-model
    server (nothing when there is none, or it did not start: the run then starts its own)."""
    from worker.llm.bundled import SERVED_AT_ENV

    url = (model or {}).get("url")
    return {SERVED_AT_ENV: str(url)} if url else {}


def attempt_labels(eval_id: str, task_id: str, attempt: str) -> dict[str, str]:
    """What every container of one attempt carries, for the sweeps."""
    return {"worker.eval": eval_id, "worker.task": task_id, "worker.attempt": attempt}


def tree_on_node(eval_id: str, task_id: str, tree: bytes) -> Path:
    """The task's tree unpacked on this node, once per eval: its fix run, its re-check and a
    retry here read the same copy (a run copies it into its own workspace; none writes it)."""
    folder = trees_dir(eval_id) / task_id
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{task_id}-", dir=folder.parent))
    unpack_tree(tree, partial)
    try:
        partial.rename(folder)  # whole or not at all; a concurrent unpack may win
    except OSError:
        remove_dir(partial)
    return folder


def trees_dir(eval_id: str) -> Path:
    return Path(tempfile.gettempdir()) / "worker-eval-trees" / eval_id


class Phases:
    """Where a node's task spent its time (docs/performance.md's breakdown): seconds per phase,
    and the wall-clock moments it began and ended, which the driver sets against its own."""

    def __init__(self) -> None:
        self._began = time.time()
        self._last = time.monotonic()
        self._laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self._laps[name] = round(now - self._last, 3)
        self._last = now

    def note(self, name: str, seconds: float) -> None:
        self._laps[name] = round(seconds, 3)

    def done(self) -> dict[str, float]:
        return {**self._laps, "began": self._began, "ended": time.time()}


def node_fault(report: dict[str, Any] | None) -> str | None:
    """The report's reason when the node failed the run (container gone, daemon stopped)."""
    if report is None or report.get("status") != "environment_error":
        return None
    reason = str(report.get("reason", ""))
    return reason if any(fault in reason for fault in NODE_FAULTS) else None


def sweep_task(eval_id: str, task_id: str | None = None) -> list[str]:
    """Remove the containers (and set-up networks) this node's daemon holds for this eval: one
    task's (before a retry of it starts here), or all (the eval's end); returns their names."""
    filters = [f"{LABEL}=1", f"worker.eval={eval_id}"]
    if task_id is not None:
        filters.append(f"worker.task={task_id}")
    client = connect(timeout_s=30)
    removed: list[str] = []
    try:
        for found in client.api.containers(all=True, filters={"label": filters}):
            try:
                client.api.remove_container(found["Id"], force=True, v=True)
            except docker.errors.NotFound:
                continue
            except docker.errors.APIError as exc:
                if exc.status_code == 409:  # being removed already (its run's own clean-up)
                    continue
                raise
            removed.append(str((found.get("Names") or [found["Id"][:12]])[0]).lstrip("/"))
        for net in client.api.networks(filters={"label": filters}):
            try:
                client.api.remove_network(net["Id"])
            except docker.errors.APIError:
                continue
            removed.append(str(net.get("Name", net["Id"][:12])))
    finally:
        client.close()
    return removed


def sweep_eval(eval_id: str) -> dict[str, Any]:
    """The eval's last word on this node: every container its attempts left, removed, and the
    task trees it unpacked here."""
    removed = sweep_task(eval_id)
    remove_dir(trees_dir(eval_id))
    return {"node": node_name(), "removed": removed}


def _run_child(
    command: list[str], *, stdout: Any, env: dict[str, str], limit_s: float | None
) -> int:
    """A child in its own process group that dies with this process; ended (group and all) if
    this task is cancelled or its time is up."""
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT, env=env,
        start_new_session=True, preexec_fn=_die_with_parent,
    )  # fmt: skip
    try:
        return proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        return end_group(proc)
    except BaseException:  # a cancelled Ray task (KeyboardInterrupt): the run ends with it
        end_group(proc)
        raise


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the Ray worker that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def task_from_wire(data: dict[str, Any]) -> EvalTask:
    """A task back from `EvalTask.to_dict()` (as it travels to a node)."""
    fields = {k: v for k, v in data.items() if k in EvalTask.__dataclass_fields__}
    for key in ("fail_to_pass", "pass_to_pass"):
        fields[key] = tuple(fields.get(key) or ())
    return EvalTask(**fields)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
