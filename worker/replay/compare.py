"""A recording and its replay compared, event by event: every tool call's observation, every
test outcome (before any change, each verification, each claim), then the verdict."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from worker.record.report import RunReport

# What differs between two runs of the same thing: durations, temporary names, addresses.
_NOISE = (
    (re.compile(r"\b\d+(?:\.\d+)?\s?s\b"), "<s>"),
    (re.compile(r"worker-junit-[0-9a-f]+"), "worker-junit-<id>"),
    (re.compile(r"\b0x[0-9a-f]{6,}\b"), "0x<addr>"),
)
COMPARED = ("tests_before", "tool_call", "verification", "claim", "undone", "sample_kept")


@dataclass(frozen=True, kw_only=True)
class Difference:
    """Where a replay first went another way, in words and (for a text) as a short diff."""

    where: str
    said: str
    diff: str = ""

    def render(self) -> str:
        return f"first difference: {self.where}: {self.said}" + (
            f"\n{self.diff}" if self.diff else ""
        )


def normalized(text: str) -> str:
    for pattern, mask in _NOISE:
        text = pattern.sub(mask, text)
    return text


def first_difference(
    recorded: Sequence[dict[str, Any]],
    replayed: Sequence[dict[str, Any]],
    recorded_report: RunReport | None,
    replayed_report: RunReport | None,
    *,
    cut_off: bool = False,
) -> Difference | None:
    """The first compared event that differs, or else the verdict, or None: a match. A
    recording `cut_off` by a signal may end inside a step the replay finished before the same
    signal stopped it: the replay may go on past the recording's last event."""
    ours = [e for e in recorded if e.get("type") in COMPARED]
    theirs = [e for e in replayed if e.get("type") in COMPARED]
    for n, (a, b) in enumerate(zip(ours, theirs, strict=False), start=1):
        found = _event_difference(n, a, b)
        if found is not None:
            return found
    if len(ours) > len(theirs) or (len(ours) < len(theirs) and not cut_off):
        shorter = "replay" if len(theirs) < len(ours) else "recording"
        extra = (ours if len(ours) > len(theirs) else theirs)[min(len(ours), len(theirs))]
        return Difference(
            where=f"event {min(len(ours), len(theirs)) + 1}",
            said=f"the {shorter} ended here; the other went on with {_name(extra)} "
            f"({len(ours)} events recorded, {len(theirs)} replayed)",
        )
    return _verdict_difference(recorded_report, replayed_report)


def _event_difference(n: int, a: dict[str, Any], b: dict[str, Any]) -> Difference | None:
    where = f"event {n} ({_name(a)}, step {a.get('step', '-')})"
    if a.get("type") != b.get("type") or a.get("name") != b.get("name"):
        return Difference(where=where, said=f"recorded {_name(a)}, replayed {_name(b)}")
    for key in ("arguments", "ok", "changed_files", "passed", "rule", "reasons"):
        if a.get(key) != b.get(key):
            return Difference(
                where=where, said=f"{key}: recorded {a.get(key)!r}, replayed {b.get(key)!r}"
            )
    for key in ("observation", "headline", "tests", "content"):
        left, right = normalized(str(a.get(key, ""))), normalized(str(b.get(key, "")))
        if left != right:
            diff = difflib.unified_diff(
                left.splitlines(), right.splitlines(), "recorded", "replayed", lineterm="", n=1
            )
            return Difference(
                where=where, said=f"the {key} differs", diff="\n".join(list(diff)[:40])
            )
    return None


def _verdict_difference(
    recorded: RunReport | None, replayed: RunReport | None
) -> Difference | None:
    if recorded is None:
        return None  # the recording left no report: its events are all there is to compare
    if replayed is None:
        return Difference(where="the verdict", said="the replay wrote no report.json")
    for key, said, again in (
        ("status", recorded.status, replayed.status),
        ("exit_code", recorded.exit_code, replayed.exit_code),
        ("files_changed", recorded.files_changed, replayed.files_changed),
    ):
        if said != again:
            return Difference(
                where="the verdict", said=f"{key}: recorded {said!r}, replayed {again!r}"
            )
    # An ending other than fixed or not fixed (the environment, a signal...) says why in one
    # line, and the same ending says the same.
    if recorded.exit_code not in (0, 1):
        said, again = (normalized(str(r.reason or "")) for r in (recorded, replayed))
        if said != again:
            return Difference(
                where="the ending", said=f"reason: recorded {said!r}, replayed {again!r}"
            )
    a, b = recorded.verdict or {}, replayed.verdict or {}
    for key in ("passed", "rule", "reasons", "of"):
        if a.get(key) != b.get(key):
            return Difference(
                where="the verdict", said=f"{key}: recorded {a.get(key)!r}, replayed {b.get(key)!r}"
            )
    return None


def _name(event: dict[str, Any]) -> str:
    return f"{event.get('type')} {event.get('name') or ''}".strip()
