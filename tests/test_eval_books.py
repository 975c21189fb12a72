"""The eval's books (worker/evaluate/books.py), in-process: what a resume counts as done, the
batch budget, and a task committed once. The schedulers that use them are run end to end in
test_eval_cli.py (local) and test_eval_ray.py (a cluster)."""

from __future__ import annotations

import json
from pathlib import Path

from worker.evaluate.books import Books, EvalBudget, EvalSettings
from worker.evaluate.outcome import TaskOutcome
from worker.evaluate.tasks import EvalTask

TASKS = [EvalTask(id=name, repo=f"/nowhere/{name}") for name in ("a", "b")]


def _books(
    out: Path, lines: list[str], *, redo: bool = False, budget: EvalBudget | None = None
) -> Books:
    settings = EvalSettings(out=out, redo=redo, budget=budget or EvalBudget())
    return Books(tasks=TASKS, settings=settings, say=lines.append)


def _outcome(task_id: str, *, tokens: int = 0) -> TaskOutcome:
    return TaskOutcome(id=task_id, status="fixed", exit_code=0, reason="", tokens_in=tokens)


def test_an_out_filled_before_the_ledger_keeps_its_finished_tasks_done(tmp_path):
    (tmp_path / "tasks" / "a").mkdir(parents=True)
    _outcome("a").write(tmp_path / "tasks" / "a")  # what a local run used to leave, alone
    for _ in range(2):  # taken into the ledger once; the second opening reads it from there
        lines: list[str] = []
        with _books(tmp_path, lines) as books:
            assert [t.id for t in books.todo()] == ["b"]
        assert [line.split(":")[0] for line in lines if "done before" in line] == ["a"]
    entries = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [(e["event"], e.get("task")) for e in entries] == [("eval", None), ("result", "a")]


def test_redo_runs_everything_again_and_a_second_result_is_kept_apart(tmp_path):
    lines: list[str] = []
    with _books(tmp_path, lines) as books:
        attempt, number = books.start_attempt("a", node="local")
        assert books.commit(TASKS[0], attempt, _outcome("a"), place=lambda: None)
        assert number == 1 and books.todo() == [TASKS[1]]
        later, _ = books.start_attempt("a", node="n2")
        assert not books.commit(TASKS[0], later, _outcome("a"), place=lambda: None)
        assert books.duplicates == [("a", later)] and books.result.ran == 1
    with _books(tmp_path, lines, redo=True) as books:
        assert books.todo() == TASKS
        assert books.start_attempt("a", node="local")[1] == 3  # attempt numbers carry on


def test_the_budget_stops_new_tasks_once_and_says_so_once(tmp_path):
    lines: list[str] = []
    with _books(tmp_path, lines, budget=EvalBudget(max_tokens=10)) as books:
        books.spend(_outcome("a", tokens=9))
        assert books.over_budget() is None
        books.spend(_outcome("b", tokens=1))
        assert books.over_budget() == books.over_budget() == books.result.stopped
    assert [line for line in lines if line.startswith("stopping")] == [
        "stopping: the eval's token budget is spent (10 >= 10); no new task starts"
    ]
