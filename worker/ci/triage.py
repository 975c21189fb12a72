"""Flaky triage: re-run the failing tests on the unchanged tree, each time in a fresh sandbox.

The rule (Trunk, Buildkite and Nx use it): a test that both passed and failed on the same commit
is flaky. CI saw each of these fail once; a test that passes in at least one re-run is flaky, one
that fails every time is a real failure, and only those go on to the model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from sandbox.ecosystems import ecosystem_running
from sandbox.session import SandboxSession
from sandbox.testrun.run import TestRun, run_tests

Kind = Literal["failing", "flaky", "unknown"]
#: Stands for the whole test command when it is not pytest: it cannot be re-run test by test.
WHOLE_COMMAND = "(the test command)"

OpenFresh = Callable[[str], contextlib.AbstractContextManager[SandboxSession]]


@dataclass(frozen=True, kw_only=True)
class TestTriage:
    """One failing test after its re-runs: passes and fails counted over the re-runs only."""

    __test__ = False  # not a pytest test class, whatever its name

    test_id: str
    kind: Kind
    passes: int = 0
    fails: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"test_id": self.test_id, "kind": self.kind, "passes": self.passes,
                "fails": self.fails}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Triage:
    """Every failing test, classified; `reruns` is how many fresh sandboxes ran them."""

    tests: tuple[TestTriage, ...]
    reruns: int

    def ids(self, kind: Kind) -> list[str]:
        return [t.test_id for t in self.tests if t.kind == kind]


def triage(
    failing: Sequence[str],
    *,
    unknown: Sequence[str] = (),
    reruns: int,
    test_cmd: str,
    open_fresh: OpenFresh,
    timeout_s: float | None,
    say: Callable[[str], None] = lambda _: None,
) -> Triage:
    """Re-run `failing` `reruns` times, each in a sandbox from `open_fresh`; ids in `unknown`
    (not in the repository) are reported, never run."""
    targets = [t for t in failing if t not in set(unknown)]
    if ecosystem_running(test_cmd) is None:  # no per-test report: the command as a whole
        targets = [WHOLE_COMMAND] if targets else []
    passes = dict.fromkeys(targets, 0)
    for n in range(1, reruns + 1 if targets else 1):
        with open_fresh(f"rerun-{n}") as session:
            ids = () if targets == [WHOLE_COMMAND] else targets
            run = run_tests(session.box, test_cmd=test_cmd, test_ids=ids, timeout_s=timeout_s)
        passed = _passed_ids(run, targets)
        for test_id in passed:
            passes[test_id] += 1
        say(f"re-run {n}/{reruns}: {len(passed)} of {len(targets)} passed ({run.headline()})")
    tests = [
        TestTriage(
            test_id=t,
            kind="flaky" if passes[t] else "failing",
            passes=passes[t],
            fails=reruns - passes[t],
        )
        for t in targets
    ]
    tests += [TestTriage(test_id=t, kind="unknown") for t in unknown]
    return Triage(tests=tuple(tests), reruns=reruns if targets else 0)


def _passed_ids(run: TestRun, targets: Sequence[str]) -> list[str]:
    """The targets that passed in this run (for the whole command: it passed)."""
    if targets == [WHOLE_COMMAND]:
        return [WHOLE_COMMAND] if run.passed else []
    if run.summary is None:
        return []  # no report (a crash, a timeout): nothing passed
    return [t for t in targets if _test_passed(t, run.summary.outcomes)]


def _test_passed(test_id: str, outcomes: Mapping[str, str]) -> bool:
    if test_id.startswith("::"):  # CI's report named no file (Node's before 24): by its titles
        found = [v for k, v in outcomes.items() if k.endswith(test_id)]
        return bool(found) and all(v == "passed" for v in found)
    if "::" in test_id:
        return outcomes.get(test_id) == "passed"
    # A file that failed to collect in CI: it passes when its tests run and none fails.
    under = [v for k, v in outcomes.items() if k.startswith(test_id + "::")]
    return bool(under) and outcomes.get(test_id) is None and all(v == "passed" for v in under)
