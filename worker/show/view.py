"""A run's outputs read for the page through its RunFolder (worker/record/folder.py):
report.json, trace.jsonl and fix.patch, each optional (a run killed, out of budget or stopped by
its environment leaves some out), and the trace's events grouped into steps. Read only; nothing
here trusts what it reads."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.secrets import NO_SECRETS, Secrets
from worker.record.folder import REPORT, TRACE, RunFolder, TraceRead
from worker.record.header import RunHeader
from worker.record.report import RunReport

TEST_RUNS = ("tests_before", "tests_after")  # the report's test runs whose logs the page shows

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
    report: RunReport | None
    trace: TraceRead  # no events when no trace was written
    patch: str | None
    missing: list[str]
    setup_log: str | None = None  # the set-up's whole output (setup.log), where it was kept
    # The end of each test run's whole output, by the report's key (tests_before, tests_after):
    # its file's name in the folder and its last LOG_TAIL bytes, where the run kept it.
    test_logs: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.trace.events

    @property
    def header(self) -> RunHeader:
        """The trace's header; an empty one (every field unknown) when it has none."""
        return self.trace.header or RunHeader()

    def first(self, kind: str) -> dict[str, Any] | None:
        return self.trace.first(kind)

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
    run = RunFolder(folder)
    report: RunReport | None = None
    try:
        report = run.load_report()
    except json.JSONDecodeError:
        missing.append(f"{REPORT}: not readable JSON")
    except (OSError, ValueError):
        pass
    trace = run.read_trace(secrets=secrets)
    if trace is None:
        missing.append(f"{TRACE}: no trace was written, so no steps can be shown")
    elif trace.unreadable:
        missing.append(
            f"{trace.unreadable} line(s) of {TRACE} could not be read (cut off mid-write?)"
        )
    if report is None and run.report_path.exists() is False:
        missing.append(
            f"{REPORT}: the run did not finish writing its report (killed?), so its "
            "verdict is unknown"
        )
    patch, setup_log = run.read_patch(), run.read_setup_log()
    test_logs = {
        key: log for key in TEST_RUNS if report and (log := run.read_test_log(report, key))
    }
    view = RunView(
        folder=folder,
        report=RunReport.from_dict(report.to_dict(secrets=secrets)) if report else None,
        trace=trace or TraceRead(events=[]),
        patch=secrets.mask_data(patch),
        missing=missing,
        setup_log=secrets.mask_data(setup_log),
        test_logs={k: (name, secrets.mask_data(text)) for k, (name, text) in test_logs.items()},
    )
    if view.events and not any(e.get("type") == "model_call" for e in view.events):
        missing.append("no model call: the run ended before the model was asked")
    if report is not None and report.verdict is None and report.status != "fixed":
        missing.append("no verdict: no edit was tested before the run ended")
    return view
