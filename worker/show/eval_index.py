"""The index page of a `worker eval` output: the table of tasks, each linking its own page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from worker.show.page import document, esc

COLUMNS = ("status", "resolved", "steps", "tokens_in", "tokens_out", "seconds")


def render_index(results: dict[str, Any], links: dict[str, str]) -> str:
    """`results` as results.json holds it; `links`: task id to its page, relative to the index."""
    summary = results.get("summary") or {}
    rows = []
    for task in results.get("tasks") or []:
        if not isinstance(task, dict):
            continue
        task_id = str(task.get("id"))
        name = esc(task_id, 300)
        if task_id in links:
            name = f'<a href="{esc(links[task_id])}">{name}</a>'
        cells = "".join(f"<td>{esc(task.get(c, ''))}</td>" for c in COLUMNS)
        rows.append(f"<tr><td>{name}</td>{cells}</tr>")
    head = "".join(f"<th>{esc(c)}</th>" for c in ("task", *COLUMNS))
    said = (
        f"Resolved {esc(summary.get('resolved', '?'))} of {esc(summary.get('ran', '?'))} tasks "
        f"run; {esc(summary.get('not_run', '?'))} not run of {esc(summary.get('tasks', '?'))}."
    )
    body = [
        "<h1>worker eval</h1>",
        f'<p id="summary">{said}</p>',
        f'<table id="tasks"><tr>{head}</tr>',
        *rows,
        "</table>",
    ]
    return document("worker eval", body)


def task_folders(folder: Path) -> dict[str, Path]:
    """Each task id of results.json with its fix run's folder, where it has one."""
    results = read_results(folder)
    found = {}
    for task in results.get("tasks") or []:
        if isinstance(task, dict) and isinstance(task.get("id"), str):
            run = folder / "tasks" / task["id"] / "fix"
            if run.resolve().is_relative_to(folder.resolve()) and run.is_dir():
                found[task["id"]] = run
    return found


def read_results(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / "results.json").read_text(encoding="utf-8", errors="replace"))
    return data if isinstance(data, dict) else {}


def link(index: Path, page: Path) -> str:
    """`page` relative to the folder of `index`, as a URL path."""
    rel = page.resolve().relative_to(index.resolve().parent)
    return "/".join(quote(part) for part in rel.parts)
