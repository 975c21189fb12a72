"""The comparison of bench/corpus.py, pure: one repository's tests in its CI's venv (the
reference) against `worker sandbox run-tests --json` (the sandbox), and the corpus's table.

Equal means the same counts (passed, failed, errors, skipped, as JUnit gives them: an xfail is a
skip) and the same failing test ids. Ids are compared as they are, then with each file path cut
to its name, so that two runs rooted differently still match; where they still differ, the
first few of each side are the cause.

>>> ref = Side(counts={"passed": 3, "failed": 1, "errors": 0, "skipped": 0}, failing=("t.py::a",))
>>> compare(ref, ref).equal
True
>>> compare(ref, Side(problem="set-up failed: no module named x")).cause
'sandbox: set-up failed: no module named x'
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

COUNTED = ("passed", "failed", "errors", "skipped")
SHOWN_IDS = 3
CAUSE_CHARS = 300


@dataclass(frozen=True, kw_only=True)
class Side:
    """One side's outcome: counts and failing ids, or the problem that left it without them."""

    counts: Mapping[str, int] | None = None
    failing: tuple[str, ...] = ()
    problem: str | None = None  # set-up failed, no JUnit report, timed out: why no counts
    passed: bool | None = None  # the command's own verdict, where it counts (node entries)

    def describe(self) -> str:
        """The counts as a table cell ("412 passed, 3 skipped"), or "none"."""
        if self.counts is None:
            return "none"
        shown = [f"{self.counts.get(k, 0)} {k}" for k in COUNTED if self.counts.get(k)]
        return ", ".join(shown) or "no tests"

    @classmethod
    def from_reference(cls, data: Mapping[str, Any]) -> Side:
        """The reference's cached result (bench/corpus.py writes it)."""
        counts = data.get("counts")
        if counts is None:
            return cls(problem=data.get("problem") or "no JUnit report")
        # A Node test script chains checks (a lint, tsc) that count by exit code alone; a Go
        # package may fail with no test failing (vet, a build error outside the tests); a Maven
        # build may fail after its tests passed (a plugin bound before `test`); so may a Rust
        # crate (a build script, a `harness = false` target).
        native = data.get("node") or data.get("go") or data.get("java") or data.get("rust")
        passed = data.get("exit_code") == 0 if native else None
        return cls(counts=counts, failing=tuple(data.get("failing") or ()), passed=passed)

    @classmethod
    def from_sandbox(cls, summary: Mapping[str, Any] | None, *, error: str = "") -> Side:
        """`run-tests --json`'s summary (sandbox/testrun/run.py `TestRun.to_dict`); None when the
        command printed none, with `error` the line it ended on."""
        if summary is None:
            return cls(problem=error or "no JSON summary")
        if summary.get("timed_out"):
            return cls(problem=str(summary.get("headline") or "timed out"))
        counts = summary.get("counts")
        if counts is None:
            return cls(problem=str(summary.get("headline") or "no JUnit report"))
        passed = summary.get("passed")
        return cls(counts=counts, failing=tuple(summary.get("failing") or ()),
                   passed=passed if isinstance(passed, bool) else None)  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Equal or not, and the first cause when not."""

    equal: bool
    cause: str = ""


def short_form(test_id: str) -> str:
    """A test id with its file path cut to the file's name: `a/b/test_x.py::t` -> `test_x.py::t`.

    >>> short_form("src/tests/test_x.py::TestA::test_b[1]")
    'test_x.py::TestA::test_b[1]'
    """
    path, sep, rest = test_id.partition("::")
    return posixpath.basename(path.replace("\\", "/")) + sep + rest


def _listed(ids: Iterable[str]) -> str:
    ids = sorted(ids)
    more = f" (+{len(ids) - SHOWN_IDS})" if len(ids) > SHOWN_IDS else ""
    return ", ".join(ids[:SHOWN_IDS]) + more


def _different_ids(reference: Sequence[str], sandbox: Sequence[str]) -> str | None:
    """None when the failing ids agree (as they are, or in short form); else which differ."""
    ref, box = set(reference), set(sandbox)
    if ref == box or {short_form(t) for t in ref} == {short_form(t) for t in box}:
        return None
    parts = []
    if box - ref:
        parts.append(f"fail in the sandbox only: {_listed(box - ref)}")
    if ref - box:
        parts.append(f"fail in the reference only: {_listed(ref - box)}")
    return "; ".join(parts)


def _different_counts(reference: Mapping[str, int], sandbox: Mapping[str, int]) -> str | None:
    diffs = [
        f"{k} {sandbox.get(k, 0)} (reference {reference.get(k, 0)})"
        for k in COUNTED
        if sandbox.get(k, 0) != reference.get(k, 0)
    ]
    return "sandbox " + ", ".join(diffs) if diffs else None


def compare(reference: Side, sandbox: Side) -> Comparison:
    """The sandbox's outcome against the reference's: equal, or the first cause."""
    if reference.counts is None:
        return Comparison(equal=False, cause=_cut(f"reference: {reference.problem}"))
    if sandbox.counts is None:
        return Comparison(equal=False, cause=_cut(f"sandbox: {sandbox.problem}"))
    ids = _different_ids(reference.failing, sandbox.failing)
    if ids is not None:
        return Comparison(equal=False, cause=_cut(ids))
    counts = _different_counts(reference.counts, sandbox.counts)
    if counts is not None:
        return Comparison(equal=False, cause=_cut(counts))
    if None not in (reference.passed, sandbox.passed) and reference.passed != sandbox.passed:
        ref, box = ("passed", "failed") if reference.passed else ("failed", "passed")
        return Comparison(equal=False, cause=f"the same counts, but the test command {ref} in "
                          f"the reference and {box} in the sandbox (its exit code)")  # fmt: skip
    return Comparison(equal=True)


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= CAUSE_CHARS else text[: CAUSE_CHARS - 3] + "..."


@dataclass(frozen=True, kw_only=True)
class Row:
    """One repository's line of the table."""

    name: str
    packaging: str
    reference: Side
    sandbox: Side
    comparison: Comparison
    sandbox_s: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(rows: Sequence[Row]) -> str:
    """The corpus as a markdown table, and a line of totals under it."""
    lines = [
        "| repository | packaging | reference (CI's venv) | sandbox (no flag) | s | equal "
        "| first cause |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        seconds = "" if row.sandbox_s is None else f"{row.sandbox_s:.0f}"
        cells = [
            row.name,
            row.packaging,
            row.reference.describe(),
            row.sandbox.describe(),
            seconds,
            "yes" if row.comparison.equal else "**no**",
            row.comparison.cause,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    equal = sum(r.comparison.equal for r in rows)
    total_s = sum(r.sandbox_s or 0.0 for r in rows)
    lines.append("")
    lines.append(f"{equal} of {len(rows)} equal; sandbox side {total_s / 60:.1f} min in all.")
    return "\n".join(lines)
