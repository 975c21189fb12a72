"""The corpus bench's comparison (bench/corpus_compare.py): a repository's tests in its CI's venv
against the sandbox's summary, equal or the first cause, and the table."""

from __future__ import annotations

import doctest
import importlib.util
import sys
from pathlib import Path

import pytest

COMPARE = Path(__file__).resolve().parent.parent / "bench" / "corpus_compare.py"


@pytest.fixture(scope="module")
def cc():
    spec = importlib.util.spec_from_file_location("corpus_compare", COMPARE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_compare"] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("corpus_compare", None)


def counts(passed=0, failed=0, errors=0, skipped=0):
    return {"passed": passed, "failed": failed, "errors": errors, "skipped": skipped}


def summary(**fields):
    """A `run-tests --json` summary as sandbox/testrun/run.py's TestRun.to_dict writes it."""
    base = {"passed": False, "headline": "", "timed_out": False, "junit": True,
            "counts": counts(), "failing": []}  # fmt: skip
    return base | fields


def test_the_docstring_examples_hold(cc):
    assert doctest.testmod(cc).failed == 0


def test_same_counts_and_failures_are_equal(cc):
    ref = cc.Side(counts=counts(10, 1, 0, 2), failing=("tests/test_a.py::test_x",))
    box = cc.Side.from_sandbox(
        summary(counts=counts(10, 1, 0, 2), failing=["tests/test_a.py::test_x"])
    )
    assert cc.compare(ref, box) == cc.Comparison(equal=True)


def test_ids_that_differ_only_in_their_folder_are_the_same_tests(cc):
    ref = cc.Side(counts=counts(5, 1), failing=("src/pkg/tests/test_a.py::T::test_x[1]",))
    box = cc.Side(counts=counts(5, 1), failing=("tests/test_a.py::T::test_x[1]",))
    assert cc.compare(ref, box).equal


def test_different_failing_tests_name_the_first_few_of_each_side(cc):
    ref = cc.Side(counts=counts(9, 1), failing=("t.py::a",))
    failing = ("t.py::b", "t.py::c", "t.py::d", "t.py::e", "t.py::a")
    box = cc.Side(counts=counts(5, 5), failing=failing)
    result = cc.compare(ref, box)
    assert not result.equal
    assert result.cause == "fail in the sandbox only: t.py::b, t.py::c, t.py::d (+1)"


def test_the_ids_are_the_first_cause_before_the_counts(cc):
    ref = cc.Side(counts=counts(9, 0, 0, 1))
    box = cc.Side(counts=counts(8, 0, 1, 1), failing=("t.py",))
    assert cc.compare(ref, box).cause == "fail in the sandbox only: t.py"


def test_counts_alone_differ_when_the_failures_agree(cc):
    ref = cc.Side(counts=counts(12, 0, 0, 3))
    box = cc.Side(counts=counts(10, 0, 0, 5))
    assert cc.compare(ref, box).cause == "sandbox passed 10 (reference 12), skipped 5 (reference 3)"


def test_a_sandbox_without_counts_gives_its_problem(cc):
    failed = cc.Side.from_sandbox(None, error="set-up command failed, network index: `pip ...`: x")
    assert cc.compare(cc.Side(counts=counts(1)), failed).cause == (
        "sandbox: set-up command failed, network index: `pip ...`: x"
    )
    no_junit = cc.Side.from_sandbox(summary(counts=None, junit=False, headline="no JUnit report"))
    assert cc.compare(cc.Side(counts=counts(1)), no_junit).cause == "sandbox: no JUnit report"
    slow = cc.Side.from_sandbox(summary(timed_out=True, headline="tests did not finish: killed"))
    assert cc.compare(cc.Side(counts=counts(1)), slow).cause == (
        "sandbox: tests did not finish: killed"
    )


def test_a_reference_without_counts_is_said_first(cc):
    ref = cc.Side.from_reference({"counts": None, "problem": "install failed: `make cython`"})
    assert cc.compare(ref, cc.Side(problem="x")).cause == "reference: install failed: `make cython`"


def test_a_long_cause_is_cut(cc):
    ref = cc.Side(counts=counts(1))
    cause = cc.compare(ref, cc.Side(problem="word " * 200)).cause
    assert len(cause) == cc.CAUSE_CHARS and cause.endswith("...")


def test_the_table_escapes_pipes_and_totals_the_rows(cc):
    equal = cc.Row(
        name="a", packaging="flit", reference=cc.Side(counts=counts(3)),
        sandbox=cc.Side(counts=counts(3)), comparison=cc.Comparison(equal=True), sandbox_s=30,
    )  # fmt: skip
    differ = cc.Row(
        name="b", packaging="poetry | lock", reference=cc.Side(counts=counts(2, 0, 0, 1)),
        sandbox=cc.Side(problem="x"), comparison=cc.Comparison(equal=False, cause="a|b"),
        sandbox_s=90,
    )  # fmt: skip
    text = cc.table([equal, differ])
    lines = text.splitlines()
    assert lines[2] == "| a | flit | 3 passed | 3 passed | 30 | yes |  |"
    assert lines[3] == "| b | poetry \\| lock | 2 passed, 1 skipped | none | 90 | **no** | a\\|b |"
    assert lines[-1] == "1 of 2 equal; sandbox side 2.0 min in all."


def test_a_go_reference_that_exits_non_zero_is_not_a_sandbox_pass(cc):
    # `go test` fails a package with no failing test (a vet finding, TestMain's exit): the
    # counts agree, the exit codes do not, and the comparison says so.
    ref = cc.Side.from_reference(
        {"counts": counts(3), "failing": [], "exit_code": 1, "go": "1.24.11"}
    )
    box = cc.Side.from_sandbox(summary(passed=True, counts=counts(3)))
    assert cc.compare(ref, box).cause == (
        "the same counts, but the test command failed in the reference and passed in the "
        "sandbox (its exit code)"
    )
    python = cc.Side.from_reference({"counts": counts(3), "failing": [], "exit_code": 1})
    assert cc.compare(python, box).equal
