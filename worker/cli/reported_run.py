"""The ending of a `worker fix` or `worker ci` run as an exit code and a report, written on every
path (Ctrl-C included)."""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from worker.cli.exit_codes import EXIT_FIXED, EXPECTED, exit_code_for
from worker.cli.out_of_space import known_error
from worker.loop.trace import Trace
from worker.record.folder import RunFolder
from worker.record.header import run_header
from worker.record.report import RunReport
from worker.run.fix import FixRequest


def new_report(request: FixRequest) -> RunReport:
    """The report of a run about to start (filled as it goes)."""
    return RunReport(
        repo=str(request.repo),
        goal=request.goal,
        model=request.endpoint.model,
        endpoint=request.endpoint.base_url,
        out_dir=str(request.out),
        cost_usd=0.0 if request.price is not None else None,
    )


@dataclass
class Ending:
    """What the block of `run_reported` says and gets: the trace to write to, the reason of a
    good ending (set by the block), the exit code (set when the block is over)."""

    trace: Trace
    reason: str = ""
    exit_code: int | None = None


@contextlib.contextmanager
def run_reported(
    request: FixRequest,
    report: RunReport,
    finish: Callable[[], int],
    *,
    ordinary: Container[int],
    argv: Sequence[str] = (),
) -> Iterator[Ending]:
    """Run the block (it sets `ending.reason` on a good ending) and report every ending: the
    exit code and reason, the traceback of a bug of ours kept in the out folder, `finish`
    (write and say). An expected ending whose code is `ordinary` ends the block quietly, its
    code in `ending.exit_code`; any other is raised again, for the command line to say in one
    line. The trace starts with what `worker replay` needs: the command line (`argv`), the
    tree's hash, the endpoint's kind."""
    ending: Ending | None = None
    try:
        with Trace(path=RunFolder(request.out).trace_path, secrets=request.secrets) as trace:
            trace.event("run", **run_header(
                argv=argv, repo=request.repo, out=request.out, model=request.endpoint.model,
                local=request.endpoint.local, backend=request.backend,
            ).to_dict())  # fmt: skip
            ending = Ending(trace=trace)
            yield ending
        report.finish(EXIT_FIXED, ending.reason)
    except BaseException as exc:  # noqa: BLE001 - every ending is reported, then re-raised
        known = known_error(exc, out=request.out)
        report.finish(exit_code_for(known), reason_of(known))
        if not isinstance(known, EXPECTED):
            # A bug of ours: one line for the user, the traceback kept for the bug report.
            keep = RunFolder(request.out).traceback_path
            keep.write_text(traceback.format_exc(), encoding="utf-8")
            report.reason = f"internal error: {report.reason} (traceback in {keep})"
        _finish_or_say(finish, request.out)
        if ending is not None and report.exit_code in ordinary and isinstance(known, EXPECTED):
            ending.exit_code = report.exit_code  # an ordinary ending (budget, stuck...): said
            return
        if known is not exc:
            raise known from exc
        raise
    assert ending is not None
    ending.exit_code = _finish_or_say(finish, request.out)


def reason_of(exc: BaseException) -> str:
    """How a run ended, in one line, from the error that ended it."""
    if isinstance(exc, KeyboardInterrupt) and not str(exc):
        return "interrupted (SIGINT)"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _finish_or_say(finish: Callable[[], int], out: Path) -> int:
    """`finish`; where the disk under --out is full, an error that says so (no report then)."""
    try:
        return finish()
    except OSError as exc:
        known = known_error(exc, out=out)
        if known is exc:
            raise
        raise known from exc
