"""Write the page of a run folder (`worker fix`, `worker ci`) or of an eval's output folder."""

from __future__ import annotations

from pathlib import Path

from policies.secrets import NO_SECRETS, Secrets
from worker.errors import UsageError
from worker.record.folder import PAGE, REPORT, TRACE, RunFolder
from worker.show.eval_index import link, read_results, render_index, task_folders
from worker.show.page import render_run
from worker.show.view import load_run

INDEX = "index.html"  # an eval's index, in its output folder


def is_eval(folder: Path) -> bool:
    return (folder / "results.json").is_file() and (folder / "tasks").is_dir()


def write_pages(folder: Path, out: Path | None = None, *, secrets: Secrets = NO_SECRETS) -> Path:
    """The page of `folder` (for an eval, its index, with each task's page beside its run),
    `secrets` masked; returns the page to open."""
    if not folder.is_dir():
        raise UsageError(f"not a folder: {folder}")
    if is_eval(folder):
        index = out or folder / INDEX
        links = {}
        for task_id, run in task_folders(folder).items():
            page = run / PAGE
            _write(page, render_run(load_run(run, secrets=secrets)))
            links[task_id] = link(index, page)
        _write(index, render_index(read_results(folder), links))
        return index
    if not RunFolder(folder).holds_a_run():
        raise UsageError(
            f"{folder} holds neither {TRACE} nor {REPORT} (a worker fix or ci --out "
            "folder) nor results.json (a worker eval --out folder)"
        )
    page = out or folder / PAGE
    _write(page, render_run(load_run(folder, secrets=secrets)))
    return page


def _write(path: Path, html: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(html, encoding="utf-8")
    partial.replace(path)
