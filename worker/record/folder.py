"""A run's output folder (`worker fix` and `worker ci` --out, an eval task's fix folder): the
file names, the report written and read back typed, the trace's events and header, the patch.

Reading trusts nothing: a run killed, out of budget or stopped by its environment leaves some
files out, and a folder may come from anywhere (an artifact, an eval node): whatever is absent
or unreadable reads as None (`load_report` raises, for a reader that says why)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.secrets import NO_SECRETS, Secrets
from worker.record.header import RunHeader
from worker.record.report import RunReport

REPORT = "report.json"
TRACE = "trace.jsonl"
PATCH = "fix.patch"
SUMMARY = "summary.md"  # `worker ci` only (worker/ci/summary.py)
PAGE = "page.html"  # `worker show`'s page (worker/show/write.py)
SETUP_LOG = "setup.log"  # the set-up's whole output, where it was kept
TRACEBACK = "traceback.txt"  # a bug of ours: its traceback
LLAMA_LOG = "llama-server.log"  # the bundled model server's log
JUNIT = "verification.junit.xml"  # `worker ci`: the verification's JUnit report
RUN_DIR = "run"  # the sandbox's working copy, where kept
TRIAGE_DIR = "triage"  # `worker ci`: the flaky triage's runs

LOG_TAIL = 50_000  # bytes of a test run's log read at most: its end

#: The files a run writes: an --out folder used before loses them first, so none is stale.
OUTPUTS = (PATCH, REPORT, TRACE, TRACEBACK, LLAMA_LOG, SUMMARY, JUNIT)


class NotAReport(ValueError):
    """report.json is JSON but not an object: not a report of ours."""


@dataclass(frozen=True, kw_only=True)
class TraceRead:
    """trace.jsonl as read: its events (JSON objects, in order) and how many lines were not."""

    events: list[dict[str, Any]]
    unreadable: int = 0

    @property
    def header(self) -> RunHeader | None:
        """The `run` event (worker/record/header.py), or None when there is none."""
        event = self.first("run")
        return RunHeader.from_dict(event) if event is not None else None

    def first(self, kind: str) -> dict[str, Any] | None:
        return next((e for e in self.events if e.get("type") == kind), None)


@dataclass(frozen=True)
class RunFolder:
    """One run's output folder: every reader and writer of its files goes through here."""

    path: Path

    @property
    def report_path(self) -> Path:
        return self.path / REPORT

    @property
    def trace_path(self) -> Path:
        return self.path / TRACE

    @property
    def patch_path(self) -> Path:
        return self.path / PATCH

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY

    @property
    def setup_log_path(self) -> Path:
        return self.path / SETUP_LOG

    @property
    def traceback_path(self) -> Path:
        return self.path / TRACEBACK

    @property
    def junit_path(self) -> Path:
        return self.path / JUNIT

    def holds_a_run(self) -> bool:
        """Whether a fix or ci run wrote here (a trace or a report)."""
        return self.trace_path.exists() or self.report_path.exists()

    def write_report(self, report: RunReport, *, secrets: Secrets = NO_SECRETS) -> None:
        """report.json, checked against its schema, `secrets` masked."""
        report.write(self.report_path, secrets=secrets)

    def read_report(self, *, secrets: Secrets = NO_SECRETS) -> RunReport | None:
        """report.json as the typed report, `secrets` masked; None when absent or unreadable."""
        try:
            return self.load_report(secrets=secrets)
        except (OSError, ValueError):
            return None

    def load_report(self, *, secrets: Secrets = NO_SECRETS) -> RunReport:
        """report.json as the typed report, `secrets` masked. Raises OSError (absent,
        unreadable), json.JSONDecodeError (not JSON) or NotAReport (JSON, not an object)."""
        data = json.loads(self.report_path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise NotAReport(f"{self.report_path} holds no JSON object")
        return RunReport.from_dict(secrets.mask_data(data))

    def read_trace(self, *, secrets: Secrets = NO_SECRETS) -> TraceRead | None:
        """trace.jsonl's events, `secrets` masked; None when no trace was written."""
        if not self.trace_path.is_file():
            return None
        events: list[dict[str, Any]] = []
        bad = 0
        text = self.trace_path.read_text(encoding="utf-8", errors="replace")
        for line in text.splitlines():
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                bad += 1
                continue
            if isinstance(event, dict):
                events.append(event)
            else:
                bad += 1
        return TraceRead(events=secrets.mask_data(events), unreadable=bad)

    def read_patch(self) -> str | None:
        """fix.patch as written (the code as it is, unmasked), or None."""
        return _text(self.patch_path)

    def read_setup_log(self) -> str | None:
        return _text(self.setup_log_path)

    def read_test_log(self, report: RunReport, which: str) -> tuple[str, str] | None:
        """The end of a test run's log (`which`: tests_before, tests_after), where the report
        names one inside this folder (as written, under its `out_dir`, wherever the folder is
        now): its name here and its last LOG_TAIL bytes. No link is followed, nothing outside
        the folder read."""
        tests = {"tests_before": report.tests_before, "tests_after": report.tests_after}.get(which)
        out_dir = report.out_dir
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
        path = self.path
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


def _text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
