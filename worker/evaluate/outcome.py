"""What one task of an eval came to: the `worker fix` run's own report, and the re-check."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from worker.evaluate.tasks import EvalTask
from worker.record.folder import RunFolder
from worker.record.report import RunReport

RESULT_FILE = "result.json"


@dataclass(kw_only=True)
class TaskOutcome:
    """One finished task; `result.json` in the task's folder, and the mark that it is done."""

    id: str
    status: str  # the fix run's status (report.json), or "crashed" when it wrote no report
    exit_code: int
    reason: str
    resolved: bool = False
    recheck: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    seconds: float = 0.0  # the fix run, wall clock, as the eval saw it
    recheck_seconds: float = 0.0
    patch: str = ""
    # On a cluster: every attempt of the task (node, how it ended); empty for a local eval.
    attempts: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskOutcome:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def write(self, task_dir: Path) -> None:
        """Atomically, so that a task is either done (with its whole result) or not."""
        partial = task_dir / (RESULT_FILE + ".partial")
        partial.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(partial, task_dir / RESULT_FILE)


def read_outcome(task_dir: Path) -> TaskOutcome | None:
    """The outcome of a task done before, or None (never run, or cut off before its end)."""
    path = task_dir / RESULT_FILE
    if not path.is_file():
        return None
    try:
        return TaskOutcome.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, TypeError):
        return None


def outcome_from_report(task: EvalTask, out: Path, exit_code: int, seconds: float) -> TaskOutcome:
    """A task's outcome from its fix run's output folder (before the re-check)."""
    run = RunFolder(out)
    report = run.read_report() or RunReport(
        status="crashed", reason=f"no report.json (exit {exit_code})"
    )
    return TaskOutcome(
        id=task.id,
        status=str(report.status),
        exit_code=exit_code,
        reason=str(report.reason),
        model=report.model,
        steps=int(report.steps or 0),
        tokens_in=int(report.tokens_in or 0),
        tokens_out=int(report.tokens_out or 0),
        cost_usd=report.cost_usd,
        seconds=round(seconds, 3),
        patch=run.patch_path.read_text(encoding="utf-8") if run.patch_path.is_file() else "",
    )


@dataclass(kw_only=True)
class BatchResult:
    """Every task's outcome (None: not run), and why the batch stopped early, if it did."""

    outcomes: dict[str, TaskOutcome | None]
    stopped: str | None = None
    ran: int = 0
    notes: list[str] = field(default_factory=list)  # lines for results.md (a cluster's story)
