"""What a cluster node's functions send back to the driver (on_node.py, node_model.py): frozen
dataclasses, pickled by Ray as they are. The driver tells them apart by type. A folder travels
either way as tar bytes (`pack_tree`, `unpack_tree`)."""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from worker.evaluate.recheck import Recheck


@dataclass(frozen=True, kw_only=True)
class NodeCheck:
    """May this node run sandboxes? When not, why."""

    ok: bool
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class FixAnswer:
    """One attempt's `worker fix` on a node: its exit, its output folder and log as bytes."""

    exit_code: int
    seconds: float
    node_fault: str | None  # the report's reason when the node, not the task, failed the run
    fix: bytes  # the output folder, tar.gz ("" when the run made none)
    log: bytes
    node: str
    phases: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class RecheckAnswer:
    """The independent re-check of one attempt's patch on a node, its logs as bytes."""

    verdict: Recheck
    seconds: float
    logs: bytes
    node: str
    phases: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class SweepAnswer:
    """What the eval's last sweep removed on one node."""

    node: str
    removed: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ModelStarted:
    """A node's bundled-model server: its URL and pid, or why it did not start."""

    url: str | None = None
    pid: int | None = None
    why: str = ""


@dataclass(frozen=True, kw_only=True)
class ModelStopped:
    """Which server process `NodeModel.stop()` ended (None: there was none)."""

    pid: int | None = None


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
