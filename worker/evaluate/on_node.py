"""What a cluster node runs for `worker eval --ray`: plain functions the driver wraps as Ray tasks
(this module imports no Ray, so it is tested and type-checked like the rest).

Everything a task reads arrives as arguments (the task, its tree as tar bytes, the fix flags);
everything it made goes back as bytes. The node's own environment supplies the rest: Docker, the
sandbox image, the model key (read by `worker fix` from the environment the node was started
with; the driver never sends one). Each task's processes die with the Ray worker that started
them (PR_SET_PDEATHSIG), and what a process left on the daemon is found again through the claim
files this node keeps in its own temp folder: one per attempt, naming the process ids whose
containers carry the label `worker.pid`.
"""

from __future__ import annotations

import ctypes
import io
import json
import os
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from policies.limits import Limits
from sandbox.client import connect
from sandbox.docker_sandbox import DockerSandbox
from sandbox.image import DEFAULT_IMAGE, ensure_image
from sandbox.prune import prune
from sandbox.workspace import remove_dir
from worker.evaluate.batch import KILL_GRACE_S, fix_command
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
) -> dict[str, Any]:
    """One attempt of one task: the tree unpacked here, `worker fix` on it as a local eval runs
    it, and its output folder and log back as bytes."""
    sweep_task(eval_id, task["id"])  # an earlier attempt's leftovers on this node go first
    work = Path(tempfile.mkdtemp(prefix="worker-eval-task-"))
    try:
        repo = unpack_tree(tree, work / "repo")
        eval_task = task_from_wire({**task, "repo": str(repo)})
        command = fix_command(eval_task, repo, work / "fix", fix_flags)
        limit = None if fix_timeout_s is None else fix_timeout_s + KILL_GRACE_S
        started = time.monotonic()
        with (work / "fix.log").open("wb") as log:
            exit_code = _run_child(
                command, stdout=log, claim=(eval_id, task["id"], attempt), limit_s=limit
            )
        seconds = time.monotonic() - started
        report = _read_json(work / "fix" / "report.json")
        return {
            "exit_code": exit_code,
            "seconds": round(seconds, 3),
            "node_fault": node_fault(report),
            "fix": pack_tree(work / "fix") if (work / "fix").is_dir() else b"",
            "log": (work / "fix.log").read_bytes(),
            "node": node_name(),
        }
    finally:
        remove_dir(work)


def run_recheck(
    task: dict[str, Any], tree: bytes, patch: str, *, eval_id: str, attempt: str
) -> dict[str, Any]:
    """The independent re-check of one patch, in a fresh sandbox on this node (its own process,
    so that it too dies with the Ray worker)."""
    work = Path(tempfile.mkdtemp(prefix="worker-eval-recheck-"))
    try:
        repo = unpack_tree(tree, work / "repo")
        request = {"task": {**task, "repo": str(repo)}, "patch": patch, "work": str(work / "rc")}
        (work / "request.json").write_text(json.dumps(request), encoding="utf-8")
        command = [sys.executable, "-m", "worker.evaluate.recheck_process", str(work)]
        started = time.monotonic()
        with (work / "recheck.log").open("wb") as log:
            exit_code = _run_child(
                command, stdout=log, claim=(eval_id, task["id"], attempt + "-recheck"), limit_s=None
            )
        answer = _read_json(work / "answer.json")
        if exit_code != 0 or answer is None:
            tail = (work / "recheck.log").read_text(encoding="utf-8", errors="replace")[-400:]
            raise RuntimeError(f"the re-check process exited {exit_code}: {tail.strip()}")
        return {
            "recheck": answer,
            "seconds": round(time.monotonic() - started, 3),
            "logs": pack_tree(work / "rc") if (work / "rc").is_dir() else b"",
            "node": node_name(),
        }
    finally:
        remove_dir(work)


def node_fault(report: dict[str, Any] | None) -> str | None:
    """The report's reason when the node failed the run (container gone, daemon stopped)."""
    if report is None or report.get("status") != "environment_error":
        return None
    reason = str(report.get("reason", ""))
    return reason if any(fault in reason for fault in NODE_FAULTS) else None


def sweep_task(eval_id: str, task_id: str | None = None) -> list[str]:
    """Remove the containers this node's claims name for this eval (one task's, or all), once
    their process is gone; returns what was removed. Claims of live processes stay."""
    folder = claims_dir(eval_id)
    if not folder.is_dir():
        return []
    removed: list[str] = []
    client = None
    try:
        for claim in sorted(folder.iterdir()):
            if task_id is not None and not claim.name.startswith(task_id + "__"):
                continue
            pid = int(claim.read_text(encoding="utf-8").strip() or 0)
            if pid and _alive(pid):
                continue
            if client is None:
                client = connect(timeout_s=30)
            removed += prune(client, pid=pid) if pid else []
            claim.unlink(missing_ok=True)
    finally:
        if client is not None:
            client.close()
    return removed


def sweep_eval(eval_id: str) -> dict[str, Any]:
    """The eval's last word on this node: every container its attempts left, removed."""
    removed = sweep_task(eval_id)
    folder = claims_dir(eval_id)
    if folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
    return {"node": node_name(), "removed": removed}


def claims_dir(eval_id: str) -> Path:
    return Path(tempfile.gettempdir()) / "worker-eval-claims" / eval_id


def _run_child(
    command: list[str], *, stdout: Any, claim: tuple[str, str, str], limit_s: float | None
) -> int:
    """A child in its own process group that dies with this process; ended (group and all) if
    this task is cancelled or its time is up. Its pid is claimed before it can make a sandbox."""
    eval_id, task_id, attempt = claim
    folder = claims_dir(eval_id)
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT,
        start_new_session=True, preexec_fn=_die_with_parent,
    )  # fmt: skip
    (folder / f"{task_id}__{attempt}").write_text(str(proc.pid), encoding="utf-8")
    try:
        return proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        _end_group(proc)
        return proc.wait()
    except BaseException:  # a cancelled Ray task (KeyboardInterrupt): the run ends with it
        _end_group(proc)
        raise


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the Ray worker that started it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(1)


def _end_group(proc: subprocess.Popen[bytes], grace_s: float = 60.0) -> None:
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
