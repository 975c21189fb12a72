"""After an edit, the tests that failed before it run first, by id: on a suite of minutes, a step
of seconds. While none of them passes, that run is the step's outcome; once one passes, the
whole suite runs (regressions elsewhere show there, and it is the run a fix is judged on). The
verdict is always the whole suite's, re-run on a clean copy (worker/loop/verify.py).

Running them by id is no gain, or cannot be done, and the whole suite runs at once, for: a test
command whose ecosystem does not run tests first by id (`Ecosystem.failing_first`: pytest's does),
a baseline without a report, a suite too short for a second pytest start to pay, and failing tests
that are much of the suite. For the rest of a run, after a run by id that did not account for every
id it asked for (pytest could not select one back: it answers "not found" with an empty report), or
once runs by id took more than MAX_TIME_SHARE of the suite's time (collecting one large test file
is most of it).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.ecosystems import ecosystem_running
from sandbox.testrun.ids import validate_test_ids
from sandbox.testrun.run import TestRun

# Under this, a suite is about as fast as a run of a few of its tests: pytest's start in the
# sandbox is 0.4-0.5 s (bench/overhead.py), and the fixing edit pays the run by id on top of the
# whole suite's. Of 12 public tasks (bench/step_time.py --tasks), the five suites of 0.7-2.2 s
# ran their failing tests by id in 0.5-2.8 s; those of 4-6 s, in 1.0-2.5 s (one took 4.9 s).
MIN_SUITE_S = 2.0
# Runs by id that took more than this share of the suite's time save too little on the edits
# that do not fix to pay for the edit that does (which runs both). Judged on the fastest of the
# first TIMED_RUNS: on a loaded machine one run of more-itertools' 4 failing tests took 6.4 s
# against an 11.2 s baseline (1.0 s against 5.1 s quiet), and the run by id was turned off.
MAX_TIME_SHARE = 0.5
TIMED_RUNS = 2
# Failing tests that are more than this share of the suite run about as long as the suite, and
# the fixing edit would pay for both.
MAX_SHARE = 0.5
# More failing tests than this are mostly one cause (an import that broke a package), and a
# command line of them grows long.
MAX_IDS = 200


def first_ids(baseline: TestRun | None) -> tuple[str, ...]:
    """The baseline's failing tests, to run first after an edit; () when the whole suite should
    run at once (see the module's text)."""
    summary = baseline.summary if baseline is not None else None
    if baseline is None or summary is None or not _by_id(baseline.test_cmd):
        return ()
    ids = tuple(dict.fromkeys(summary.failing_ids()))
    short = baseline.result.duration_s < MIN_SUITE_S
    if short or not ids or len(ids) > MAX_IDS or len(ids) > MAX_SHARE * summary.total:
        return ()
    try:
        return tuple(validate_test_ids(ids))
    except ValueError:  # an id that would be read as an option
        return ()


def accounted(run: TestRun) -> bool:
    """Every test the run asked for by id has an outcome in its report (or its file's
    collection error does), or the run did not finish: what it says can be trusted."""
    result = run.result
    if not result.finished:
        return True  # the edit made the failing tests hang: the whole suite would too
    summary = run.summary
    return summary is not None and all(summary.outcome_of(t) is not None for t in run.test_ids)


def stands(run: TestRun) -> bool:
    """Whether a trusted run of the failing tests by id is the step's outcome: none of them
    passed. When some pass, the whole suite runs, so that "fewer tests fail" is always said of
    the whole suite and a partial fix is never taken for progress it does not make."""
    return run.summary is None or run.failing() == len(set(run.test_ids))


@dataclass(kw_only=True)
class FailingFirst:
    """For one run: the tests to run first after an edit (`ids`; () for the whole suite at
    once), and whether a run of them is the step's outcome."""

    baseline: TestRun | None = None
    ids: tuple[str, ...] = field(init=False, default=())
    _took: list[float] = field(init=False, default_factory=list)  # finished runs by id, seconds

    def __post_init__(self) -> None:
        self.ids = first_ids(self.baseline)

    def stands(self, run: TestRun) -> bool:
        """`run` of `ids` is the step's outcome: trusted, and none of them passed. A run that
        shows running them first no gain (ids not selectable, or, on the fastest of
        TIMED_RUNS, as slow as much of the suite) turns it off for the rest of the run."""
        trusted = accounted(run)
        result = run.result
        if result.finished:
            self._took.append(result.duration_s)  # a run the edit made hang says nothing of it
        if not trusted or self._slow():
            self.ids = ()
        return trusted and stands(run)

    def _slow(self) -> bool:
        if self.baseline is None or len(self._took) < TIMED_RUNS:
            return False
        return min(self._took) > MAX_TIME_SHARE * self.baseline.result.duration_s


def _by_id(test_cmd: str) -> bool:
    """Whether the command's runner runs the failing tests first (its ecosystem says)."""
    ecosystem = ecosystem_running(test_cmd)
    return ecosystem is not None and ecosystem.failing_first
