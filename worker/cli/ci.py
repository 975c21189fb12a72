"""`worker ci`: from a red build to a verified fix, flaky failures triaged before any model call.

Its flags are `worker fix`'s (without --apply and --branch) plus --junit, --reruns,
--allow-exit-code-only and --base-branch. Every ending writes report.json and summary.md, appends
the summary to $GITHUB_STEP_SUMMARY and the step outputs to $GITHUB_OUTPUT when those are set.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from worker.ci.actions import append_step_summary, ci_outputs, write_outputs
from worker.ci.run import CiRun, VerifiedFixRun
from worker.ci.summary import write_summary
from worker.cli.exit_codes import EXIT_FLAKY_ONLY, EXIT_NOT_FIXED, EXIT_UNVERIFIED
from worker.cli.fix_flags import add_fix_arguments
from worker.cli.fix_request import make_request
from worker.cli.progress import ProgressPrinter
from worker.cli.reported_run import new_report, run_reported
from worker.errors import UsageError
from worker.record.folder import RunFolder
from worker.record.report import RunReport
from worker.run.fix import FixRequest
from worker.show.write import write_pages

if TYPE_CHECKING:
    from worker.llm.process import ModelProcess

DEFAULT_RERUNS = 2
VERDICT_WORDS = {
    0: "FIXED (verified)",
    1: "NOT FIXED",
    4: "FLAKY ONLY (no model call)",
    5: "NOT VERIFIED (exit code only)",
}


def add_ci_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `worker ci`."""
    add_fix_arguments(p, deliver=False)
    p.add_argument(
        "--junit",
        type=Path,
        action="extend",
        nargs="+",
        default=[],
        help="JUnit XML files from the failed CI run (several for matrix jobs)",
    )
    p.add_argument(
        "--reruns",
        type=int,
        default=DEFAULT_RERUNS,
        help=f"re-runs of each failing test, each in a fresh sandbox (default {DEFAULT_RERUNS})",
    )
    p.add_argument(
        "--allow-exit-code-only",
        action="store_true",
        help="accept a fix verified by the test command's exit code alone (no JUnit report)",
    )
    p.add_argument(
        "--base-branch",
        default=None,
        help="the failing branch, recorded for worker publish (default: the checked-out one)",
    )


def run_ci(
    args: argparse.Namespace, *, argv: Sequence[str] = (), client: ModelProcess | None = None
) -> int:
    """Run `worker ci`; returns the exit code. Every ending is reported, then re-raised.
    `argv` is recorded in the trace; `client`: the model client's process, when started early."""
    started = time.monotonic()
    if args.reruns < 0:
        raise UsageError(f"--reruns must be 0 or more, not {args.reruns}")
    request = make_request(args)
    # CI logs: plain lines, one per event, never redrawn
    show = ProgressPrinter(quiet=True, secrets=request.secrets)
    report = new_report(request)

    finish = functools.partial(_finish, report, request, show, started, args)
    ordinary = (EXIT_NOT_FIXED, EXIT_FLAKY_ONLY, EXIT_UNVERIFIED)
    with run_reported(request, report, finish, ordinary=ordinary, argv=argv) as ending:
        fix = VerifiedFixRun(
            request=request,
            report=report,
            trace=ending.trace,
            progress=show,
            client=client,
        )
        ending.reason = CiRun(
            fix=fix,
            junit=[p.expanduser().resolve() for p in args.junit],
            reruns=args.reruns,
            allow_exit_code_only=args.allow_exit_code_only,
            base_branch=args.base_branch,
        ).run()
    assert ending.exit_code is not None
    return ending.exit_code


def _finish(
    report: RunReport,
    request: FixRequest,
    show: ProgressPrinter,
    started: float,
    args: argparse.Namespace,
) -> int:
    out, secrets = request.out, request.secrets
    report.durations["total"] = round(time.monotonic() - started, 3)
    RunFolder(out).write_report(report, secrets=secrets)
    data = report.to_dict(secrets=secrets)
    # page.html, named in the summary (the workflow uploads it)
    write_pages(out, secrets=secrets)
    summary = write_summary(out, data, os.environ, secrets=secrets)
    append_step_summary(summary.read_text(encoding="utf-8"))
    write_outputs(ci_outputs(data, out))
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        words = VERDICT_WORDS.get(report.exit_code, report.status.upper())
        if report.exit_code == 0 and not report.patch:
            words = "NOTHING TO FIX"
        show.say(f"{words}: {report.reason}")
        if report.patch:
            show.say(f"patch: {report.patch}")
        show.say(f"report: {RunFolder(out).report_path}")
        show.say(f"summary: {summary}")
    sys.stdout.flush()
    return report.exit_code
