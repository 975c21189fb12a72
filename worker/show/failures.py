"""The failure text the model was shown, test by test, read back out of a run's trace: the
baseline's from the first message (the `prompt` event's task), the last run's from the latest
tool observation that shows its failing tests. Both are `TestRun.render()` text, one block per
failing test that starts `FAILURE <id>: <message>` (or `ERROR`); a block runs to the next.
Display only: a hostile test can print a block header of its own, and then its block is split
where it says, nothing more."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# worker/loop/prompts.task_message: the heading of the baseline's render, and what follows it.
BASELINE_HEADING = "Test result before any change (the harness ran them):\n"
AFTER_BASELINE = "\n\nFiles in the repository:\n"
KINDS = ("FAILURE", "ERROR")  # sandbox/testrun/run.TestRun.render: failure.kind.upper()
MORE = "\n\n[... "  # render's line for the failing tests it left out


@dataclass(frozen=True, kw_only=True)
class Shown:
    """What the model was shown of one test run: the text, where, and each failing test's block
    (`blocks` empty where the run had no per-test report: then `text` is all there is)."""

    text: str
    where: str  # "the first message", "the observation of step 3's apply_patch"
    blocks: dict[str, str]


def baseline_shown(events: Sequence[dict[str, Any]], failing: Sequence[str]) -> Shown | None:
    """The baseline's failures as the first message showed them; None without that message."""
    prompt = next((e for e in events if e.get("type") == "prompt"), None)
    task = prompt.get("task") if prompt else None
    if not isinstance(task, str):
        return None
    start = task.find(BASELINE_HEADING)
    if start < 0:
        return None
    start += len(BASELINE_HEADING)
    end = task.find(AFTER_BASELINE, start)
    text = task[start : end if end >= 0 else len(task)]
    return Shown(text=text, where="the first message", blocks=split_failures(text, failing))


def last_shown(events: Sequence[dict[str, Any]], failing: Sequence[str]) -> Shown | None:
    """The latest tool observation that showed any of `failing` (the last run's failing tests)
    failing; None when no observation did (the run re-ran the tests for a claim of success, or
    ended before)."""
    if not failing:
        return None
    for event in reversed(events):
        if event.get("type") != "tool_call" or not isinstance(event.get("observation"), str):
            continue
        text = event["observation"]
        blocks = split_failures(text, failing)
        if blocks:
            where = f"the observation of step {event.get('step')}'s {event.get('name')}"
            return Shown(text=text, where=where, blocks=blocks)
    return None


def split_failures(text: str, failing: Sequence[str]) -> dict[str, str]:
    """Each failing test's block in a render, by its id, in the order of `failing`; ids the
    text does not show (render shows the first few) are left out."""
    starts: dict[str, int] = {}
    for test_id in failing:
        for kind in KINDS:
            at = text.find(f"\n{kind} {test_id}: ")
            if at >= 0:
                starts[test_id] = at + 1
                break
    ends = sorted({*starts.values(), len(text)})
    more = text.rfind(MORE)
    blocks = {}
    for test_id, at in starts.items():
        end = next(e for e in ends if e > at)
        if at < more < end:
            end = more
        blocks[test_id] = text[at:end].strip("\n")
    return blocks
