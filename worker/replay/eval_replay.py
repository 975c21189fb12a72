"""`worker replay EVAL_OUT`: each task of a `worker eval` output replayed from its own `worker fix`
run (EVAL_OUT/tasks/ID/fix, on the eval's clone EVAL_OUT/repos/ID), one row each."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from worker.errors import UsageError
from worker.record.folder import NotAReport, RunFolder
from worker.replay.replay import replay
from worker.show.eval_index import task_folders


@dataclass(frozen=True, kw_only=True)
class TaskReplay:
    """One task's replay: its recorded and replayed status, and how they compare."""

    task: str
    recorded: str
    replayed: str
    said: str  # "match", or the first difference, or why it could not be replayed

    @property
    def matched(self) -> bool:
        return self.said.startswith("match")


def replay_eval(folder: Path) -> Iterator[TaskReplay]:
    """Replay each task's fix run into its own `replay` folder, in the eval's task order."""
    for task, run in task_folders(folder).items():
        try:
            result = replay(run, repo=None, out=run / "replay")
        except UsageError as exc:
            yield TaskReplay(task=task, recorded=_status(run), replayed="-", said=f"refused: {exc}")
            continue
        if result.difference is not None:
            said = result.difference.render().splitlines()[0].removeprefix("first difference: ")
        else:
            said = "match up to where a signal stopped it" if result.cut_off else "match"
        yield TaskReplay(task=task, recorded=_status(run), replayed=_status(result.out), said=said)


def table(rows: list[TaskReplay]) -> str:
    """The rows as aligned plain-text columns, with a header."""
    lines = [("task", "recorded", "replayed", "replay")]
    lines += [(r.task, r.recorded, r.replayed, r.said) for r in rows]
    widths = [max(len(line[i]) for line in lines) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line[:3], widths, strict=True))
        + "  "
        + line[3]
        for line in lines
    )


def _status(run: Path) -> str:
    try:
        report = RunFolder(run).load_report()
    except NotAReport:
        return "?"
    except (OSError, ValueError):
        return "(no report)"
    return str(report.status or "?")
