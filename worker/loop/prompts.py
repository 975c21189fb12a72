"""The words the model sees: short and concrete, so that small local models follow them too."""

from __future__ import annotations

from collections.abc import Sequence

_EDIT_WITH = {
    "replace": "Fix it with replace: copy the exact lines to change from the file as old, and "
    "write the corrected lines as new. Use the paths shown in the file list.",
    "apply_patch": "Fix it with apply_patch: a unified diff with a few unchanged context lines, "
    "paths relative to the repository root as shown in the file list.",
}


def system_prompt(tools: Sequence[str]) -> str:
    """The instructions, naming the edit tool the model has (replace first when it has both)."""
    edit = next(
        (_EDIT_WITH[name] for name in _EDIT_WITH if name in tools), _EDIT_WITH["apply_patch"]
    )
    return f"""\
You fix bugs in a code repository so that its failing tests pass.
You work only through the tools you are given; there is no shell.
How to work:
1. Read the failing test output below and the source code shown with it.
2. Find the bug in the source code. Do not edit tests: they define the correct behaviour.
3. {edit}
4. After each edit the tests run automatically and you see the result. When they all pass you \
are done; the harness checks that itself.
Keep changes small. If a tool answers with an error, read it and correct your call."""


FALSE_CLAIM = """\
The tests do not pass yet, so the task is not done. Current result:
{tests}
Keep going: fix the code with an edit. Saying you are done again while tests fail ends the run \
as not fixed."""

NUDGE = """\
You made the same call with the same result {n} times. Repeating it will not help: \
try something different (read another file, or change your patch)."""

UNDONE = """\
This edit made more tests fail ({after}) than before it ({before}), so the harness undid it: \
the files are as they were before this edit. Try a different change."""

ALREADY_UNDONE = """\
This exact edit was already made and undone, because it did not fix the failing tests. It was \
not applied again: make a different change."""

CUT_OFF = """\
Your answer was cut off at {tokens} tokens and was not run. Send one short tool call: \
read a smaller part of a file, or a patch of a few lines."""

VERIFY_FAILED = """\
The harness re-ran the tests on a clean copy with your patch applied, and that is not a fix yet \
({verdict}):
{tests}
Your fix must work from the patch alone. Keep going."""


def tests_after(*, first: int, whole: bool) -> str:
    """The heading of the tests' result after an edit: the `first` tests that failed at the
    start ran alone, by id, or, when they did not all fail, the whole suite after them
    (worker/loop/failing_first.py)."""
    if not first:
        return "Tests after this patch:\n"
    if whole:
        passing = "the test that failed" if first == 1 else "tests that failed"
        verb = "passes" if first == 1 else "pass"
        return (
            f"Tests after this patch ({passing} at the start {verb} now, so the whole suite ran):\n"
        )
    tests = "test that failed" if first == 1 else f"{first} tests that failed"
    return (
        f"Tests after this patch (only the {tests} at the start ran, by id; the whole suite "
        "runs once they pass):\n"
    )


def undone(*, after: float, before: float) -> str:
    """UNDONE with the failing counts (infinity: a run without a report)."""

    def shown(failing: float) -> str:
        return "the suite no longer runs" if failing == float("inf") else f"{failing:.0f}"

    return UNDONE.format(after=shown(after), before=shown(before))


def task_message(
    *, goal: str, tests: str, listing: str, sources: str = "", suspects: str = ""
) -> str:
    """The first user message: goal, the failing tests as the harness saw them, the tree, the
    source files the failures point at, and the lines they run that passing tests run least."""
    shown = f"\n\nSource code the failing tests use:\n{sources}" if sources else ""
    if suspects:
        shown += (
            "\n\nLines the failing tests run, most suspicious first (the fewer passing tests "
            f"run a line, the likelier the bug is there):\n{suspects}"
        )
    return (
        f"Goal: {goal}\n\n"
        f"Test result before any change (the harness ran them):\n{tests}\n\n"
        f"Files in the repository:\n{listing}{shown}"
    )
