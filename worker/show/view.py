"""A run's outputs read for the page: report.json, trace.jsonl and fix.patch, each optional
(a run killed, out of budget or stopped by its environment leaves some out), and the trace's
events grouped into steps. Read only; nothing here trusts what it reads."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.secrets import NO_SECRETS, Secrets

TEST_RUNS = ("tests_before", "tests_after")  # the report's test runs whose logs the page shows
LOG_TAIL = 50_000  # bytes of a test run's log read at most: its end

# Events of one step besides its model call and tool calls, drawn as one line each.
NOTES = frozenset(
    {"second_choice", "undone", "claim", "verification", "sample_focus", "sample_undone",
     "sample_kept", "context_too_long"}
)  # fmt: skip


@dataclass(kw_only=True)
class Step:
    """One model call and what came of it; `sample` for a sampled first edit."""

    call: dict[str, Any] | None  # the model_call event; None: events before any model call
    events: list[dict[str, Any]] = field(default_factory=list)  # tool calls and notes, in order

    @property
    def sample(self) -> int | None:
        value = (self.call or {}).get("sample")
        return value if isinstance(value, int) else None


@dataclass(kw_only=True)
class RunView:
    """What the page shows of one run, and what it could not find."""

    folder: Path
    report: dict[str, Any] | None
    events: list[dict[str, Any]]
    patch: str | None
    missing: list[str]
    setup_log: str | None = None  # the set-up's whole output (setup.log), where it was kept
    # The end of each test run's whole output, by the report's key (tests_before, tests_after):
    # its file's name in the folder and its last LOG_TAIL bytes, where the run kept it.
    test_logs: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def header(self) -> dict[str, Any]:
        return next((e for e in self.events if e.get("type") == "run"), {})

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("type") == kind), None)

    def steps(self) -> list[Step]:
        """The trace's model calls, each with the tool calls and notes after it; a second
        choice's tool call stays under the sample it came from."""
        steps = [Step(call=None)]
        for event in self.events:
            kind = event.get("type")
            if kind == "model_call":
                steps.append(Step(call=event))
            elif kind == "tool_call" or kind in NOTES:
                steps[-1].events.append(event)
        return [s for s in steps if s.call is not None or s.events]


def load_run(folder: Path, *, secrets: Secrets = NO_SECRETS) -> RunView:
    """Read a `worker fix` or `worker ci` output folder, `secrets` masked in all of it (the
    run masked its own; fix.patch is the code as it is); whatever is absent is said in
    `missing`, never raised."""
    missing: list[str] = []
    report = _json_file(folder / "report.json", missing)
    events: list[dict[str, Any]] = []
    trace = folder / "trace.jsonl"
    if trace.is_file():
        bad = 0
        for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(event, dict):
                events.append(event)
            else:
                bad += 1
        if bad:
            missing.append(f"{bad} line(s) of trace.jsonl could not be read (cut off mid-write?)")
    else:
        missing.append("trace.jsonl: no trace was written, so no steps can be shown")
    if report is None and (folder / "report.json").exists() is False:
        missing.append(
            "report.json: the run did not finish writing its report (killed?), so its "
            "verdict is unknown"
        )
    patch_file = folder / "fix.patch"
    patch = (
        patch_file.read_text(encoding="utf-8", errors="replace") if patch_file.is_file() else None
    )
    log_file = folder / "setup.log"
    setup_log = (
        log_file.read_text(encoding="utf-8", errors="replace") if log_file.is_file() else None
    )
    test_logs = {key: log for key in TEST_RUNS if (log := _test_log(folder, report, key))}
    view = RunView(
        folder=folder,
        report=secrets.mask_data(report),
        events=secrets.mask_data(events),
        patch=secrets.mask_data(patch),
        missing=missing,
        setup_log=secrets.mask_data(setup_log),
        test_logs={k: (name, secrets.mask_data(text)) for k, (name, text) in test_logs.items()},
    )
    if events and not any(e.get("type") == "model_call" for e in events):
        missing.append("no model call: the run ended before the model was asked")
    if report is not None and report.get("verdict") is None and report.get("status") != "fixed":
        missing.append("no verdict: no edit was tested before the run ended")
    return view


def _json_file(path: Path, missing: list[str]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError:
        missing.append(f"{path.name}: not readable JSON")
        return None
    return data if isinstance(data, dict) else None


def _test_log(folder: Path, report: dict[str, Any] | None, key: str) -> tuple[str, str] | None:
    """The end of a test run's log, where the report names one inside the run's folder (as
    written, under its `out_dir`, wherever the folder is now): its name there and its text.
    No link is followed, nothing outside the folder read."""
    tests = (report or {}).get(key)
    out_dir = (report or {}).get("out_dir")
    if not isinstance(tests, dict) or not isinstance(tests.get("log"), str):
        return None
    if not isinstance(out_dir, str):
        return None
    try:
        rel = Path(tests["log"]).relative_to(out_dir)
    except ValueError:
        return None
    if not rel.parts or any(part in ("", ".", "..") for part in rel.parts):
        return None
    path = folder
    for part in rel.parts[:-1]:
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return None
    try:
        fd = os.open(path / rel.parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        file.seek(max(0, info.st_size - LOG_TAIL))
        text = file.read(LOG_TAIL).decode("utf-8", errors="replace")
    return rel.as_posix(), text
