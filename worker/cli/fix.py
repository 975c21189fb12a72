"""`worker fix`: the run, and what it says at the end. Its flags are in `worker/cli/fix_flags.py`,
the request they make in `fix_request.py`, the report of every ending in `reported_run.py`
(`worker ci` shares all three)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from worker.cli.exit_codes import EXIT_NOT_FIXED
from worker.cli.fix_request import make_request
from worker.cli.progress import ProgressPrinter
from worker.cli.reported_run import new_report, run_reported
from worker.record.folder import RunFolder
from worker.record.report import RunReport
from worker.run.fix import FixRequest, FixRun

if TYPE_CHECKING:
    from worker.llm.process import ModelProcess


def run_fix(
    args: argparse.Namespace, *, argv: Sequence[str] = (), client: ModelProcess | None = None
) -> int:
    """Run `worker fix`; returns the exit code. Every ending is reported, then re-raised.
    `argv` is recorded in the trace; `client`: the model client's process, when started early."""
    started = time.monotonic()
    request = make_request(args)
    show = ProgressPrinter(quiet=args.quiet or args.json, secrets=request.secrets)
    report = new_report(request)
    report.durations["startup"] = _since_process_start()
    finish = functools.partial(_finish, report, request, show, started, args)
    with run_reported(request, report, finish, ordinary=(EXIT_NOT_FIXED,), argv=argv) as ending:
        ending.reason = FixRun(
            request=request, report=report, trace=ending.trace, progress=show, client=client
        ).run()
    assert ending.exit_code is not None
    return ending.exit_code


def _since_process_start() -> float:
    """Seconds from this process's start to now (the interpreter, our imports, the flags), from
    the kernel's clock-tick counts since boot (10 ms steps); 0.0 where /proc cannot tell."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/uptime", encoding="ascii") as uptime:
            now = float(uptime.read().split()[0])
        return round(max(0.0, now - ticks / os.sysconf("SC_CLK_TCK")), 3)
    except (OSError, ValueError, IndexError):
        return 0.0


def _finish(
    report: RunReport,
    request: FixRequest,
    show: ProgressPrinter,
    started: float,
    args: argparse.Namespace,
) -> int:
    run = RunFolder(request.out)
    report.durations["total"] = round(time.monotonic() - started, 3)
    run.write_report(report, secrets=request.secrets)
    if args.json:
        print(json.dumps(report.to_dict(secrets=request.secrets), indent=2))
    else:
        fixed = "FIXED (verified)" if report.patch else "NOTHING TO FIX"
        verdict = {0: fixed, 1: "NOT FIXED"}.get(report.exit_code, report.status.upper())
        show.say(f"{verdict}: {report.reason}")
        if report.patch:
            show.say(f"patch: {report.patch}")
        show.say(f"report: {run.report_path}")
    sys.stdout.flush()
    return report.exit_code
