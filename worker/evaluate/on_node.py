"""What a cluster node runs for `worker eval --ray`: plain functions the driver wraps as Ray tasks
(this module imports no Ray, so it is tested and type-checked like the rest).

Everything a task reads arrives as arguments (the task, its tree as tar bytes, the fix
settings); everything it made goes back as bytes, in the typed answers of wire.py. The node's
own environment supplies the rest: Docker, the sandbox image, the model key (read by `worker
fix` from the environment the node was started with; the driver never sends one). A task's
`worker fix` process dies with the Ray worker that started it (PR_SET_PDEATHSIG); the re-check
runs in the Ray worker itself. Every container an attempt starts carries the labels
`worker.eval`, `worker.task` and `worker.attempt`, and the sweeps here find what an attempt left
by them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import tempfile
import time
from pathlib import Path

import docker.errors

from policies.limits import Limits
from sandbox.container.client import connect
from sandbox.container.docker_sandbox import LABEL, RUN_LABELS, RUN_LABELS_ENV, DockerSandbox
from sandbox.container.image import DEFAULT_IMAGE, ensure_image
from sandbox.worktree.workspace import remove_dir
from worker.evaluate.books import FixSettings
from worker.evaluate.fix_run import FixProcesses
from worker.evaluate.recheck import recheck
from worker.evaluate.tasks import EvalTask
from worker.evaluate.wire import (
    FixAnswer,
    ModelStarted,
    NodeCheck,
    RecheckAnswer,
    SweepAnswer,
    pack_tree,
    unpack_tree,
)
from worker.record.folder import RunFolder
from worker.record.report import RunReport

#: Why a fix run ended, in its report, when the node and not the task was at fault: retried.
NODE_FAULTS = (
    "the sandbox container disappeared",
    "the Docker daemon stopped answering",
    "Docker is not available",
)


def node_name() -> str:
    """How reports name this node: its host name and the address Ray knows it by."""
    return f"{socket.gethostname()}/{os.environ.get('RAY_NODE_IP_ADDRESS', '')}".rstrip("/")


def self_check(image: str | None) -> NodeCheck:
    """May this node run sandboxes? Docker answers, the image is there (built if not), and a
    sandbox made as a run makes one has no network, is not root and cannot write its root."""
    image = image or DEFAULT_IMAGE
    try:
        client = connect(timeout_s=30)
    except Exception as exc:  # noqa: BLE001 - the node's answer, not the driver's crash
        return NodeCheck(ok=False, why=_line(exc))
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
            return NodeCheck(ok=False, why="hardening probe failed: " + ", ".join(failed or names))
        return NodeCheck(ok=True)
    except Exception as exc:  # noqa: BLE001
        return NodeCheck(ok=False, why=_line(exc))
    finally:
        client.close()
        remove_dir(scratch)


def run_fix(
    task: EvalTask,
    tree: bytes,
    *,
    eval_id: str,
    attempt: str,
    fix: FixSettings,
    model: ModelStarted | None = None,
) -> FixAnswer:
    """One attempt of one task: the tree unpacked here, `worker fix` on it as a local eval runs
    it, and its output folder and log back as bytes. `model`: the node's bundled-model server
    (`NodeModel.start()`'s answer), which the run uses instead of starting its own."""
    clock = Phases()
    sweep_task(eval_id, task.id)  # an earlier attempt's leftovers on this node go first
    clock.lap("sweep")
    work = Path(tempfile.mkdtemp(prefix="worker-eval-task-"))
    try:
        repo = tree_on_node(eval_id, task.id, tree)
        clock.lap("unpack")
        labels = attempt_labels(eval_id, task.id, attempt)
        env = {**os.environ, RUN_LABELS_ENV: json.dumps(labels), **model_env(model)}
        ended = FixProcesses(die_with_parent=True).run(
            dataclasses.replace(task, repo=str(repo)), repo,
            out=work / "fix", log=work / "fix.log", settings=fix, env=env,
        )  # fmt: skip
        clock.lap("child")
        report = RunFolder(work / "fix").read_report()
        packed = pack_tree(work / "fix") if (work / "fix").is_dir() else b""
        clock.lap("pack")
        return FixAnswer(
            exit_code=ended.exit_code,
            seconds=ended.seconds,
            node_fault=node_fault(report),
            fix=packed,
            log=(work / "fix.log").read_bytes(),
            node=node_name(),
            phases=clock.done(),
        )
    finally:
        remove_dir(work)


def run_recheck(
    task: EvalTask, tree: bytes, patch: str, *, eval_id: str, attempt: str
) -> RecheckAnswer:
    """The independent re-check of one patch, in a fresh sandbox on this node. It runs in the Ray
    worker itself (no second interpreter to start): it ends with the worker, a cancelled task
    removes its sandbox on the way out, and its containers carry the attempt's labels."""
    clock = Phases()
    work = Path(tempfile.mkdtemp(prefix="worker-eval-recheck-"))
    labels = RUN_LABELS.set({**attempt_labels(eval_id, task.id, attempt), "worker.recheck": "1"})
    try:
        repo = tree_on_node(eval_id, task.id, tree)
        clock.lap("unpack")
        started = time.monotonic()
        here = dataclasses.replace(task, repo=str(repo))
        verdict = recheck(here, repo, patch, work_dir=work / "rc")
        seconds = round(time.monotonic() - started, 3)
        clock.lap("recheck")
        logs = pack_tree(work / "rc") if (work / "rc").is_dir() else b""
        clock.lap("pack")
        return RecheckAnswer(
            verdict=verdict, seconds=seconds, logs=logs, node=node_name(), phases=clock.done()
        )
    finally:
        RUN_LABELS.reset(labels)
        remove_dir(work)


def model_env(model: ModelStarted | None) -> dict[str, str]:
    """What a task's `worker fix` adds to its environment to use the node's bundled-model
    server (nothing when there is none, or it did not start: the run then starts its own)."""
    from worker.llm.bundled import SERVED_AT_ENV

    return {SERVED_AT_ENV: model.url} if model is not None and model.url else {}


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


def node_fault(report: RunReport | None) -> str | None:
    """The report's reason when the node failed the run (container gone, daemon stopped)."""
    if report is None or report.status != "environment_error":
        return None
    reason = str(report.reason)
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


def sweep_eval(eval_id: str) -> SweepAnswer:
    """The eval's last word on this node: every container its attempts left, removed, and the
    task trees it unpacked here."""
    removed = sweep_task(eval_id)
    remove_dir(trees_dir(eval_id))
    return SweepAnswer(node=node_name(), removed=tuple(removed))


def _line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
