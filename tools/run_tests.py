"""`run_tests {tests?}`: run the configured test command in the sandbox; report from JUnit XML."""

from __future__ import annotations

import json
from typing import Any

from sandbox.testrun.run import run_tests
from tools.base import Observation, Tool, ToolContext, failed
from tools.test_ids import resolve_test_ids

MAX_IDS = 50

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tests": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "maxItems": MAX_IDS,
            "description": "Test ids to run, e.g. 'tests/test_app.py::test_add'; omit for all.",
        },
    },
    "additionalProperties": False,
}

DESCRIPTION = (
    "Run the tests and show passed/failed counts and failures: all of them, or the test ids "
    "given in tests (written PATH::TEST_NAME, as the failures show them)."
)


REUSED = (
    "(Not run again: the files and the test command are the same as for the last test run, "
    "so this is its result.)"
)


def execute(args: dict[str, Any], ctx: ToolContext) -> Observation:
    """Run the tests; ok unless the run was cut short (time limit, out of memory)."""
    asked: list[str] = list(args.get("tests") or [])
    resolved = resolve_test_ids(asked, ctx.known_tests)
    tests = list(resolved.ids)
    reused = False
    try:
        if ctx.tests is not None:
            run = ctx.tests.run(test_cmd=ctx.test_cmd, test_ids=tests, timeout_s=ctx.test_timeout_s)
            reused = ctx.tests.reused
        else:
            run = run_tests(
                ctx.box, test_cmd=ctx.test_cmd, test_ids=tests, timeout_s=ctx.test_timeout_s
            )
    except ValueError as exc:  # a test id that would be read as an option
        return failed(str(exc))
    result = run.result
    data = {**run.to_dict(), "tests": tests, "reused": reused}
    text = "\n".join((*resolved.notes, run.render()))
    if resolved.unknown and (run.summary is None or run.summary.total == 0):
        examples = ", ".join(ctx.known_tests[:3])
        text += (
            f"\nNo test ran: no test here has the id {', '.join(resolved.unknown)}. "
            f"Write ids as the failures show them, e.g. {examples}."
        )
    if reused:
        text += f"\n{REUSED}"
    if result.timed_out:
        text += (
            "\nThe tests were killed at the time limit: look for an endless loop or a "
            "wait that never ends, or run fewer tests."
        )
    elif result.oom_killed:
        text += "\nThe tests ran out of memory and were killed."
    return Observation(
        ok=not (result.timed_out or result.oom_killed), text=text, data=data, tests=run
    )


TOOL = Tool(
    name="run_tests",
    description=DESCRIPTION,
    parameters=PARAMETERS,
    execute=execute,
    target=lambda args: json.dumps(args.get("tests", []))[:60] if args.get("tests") else "",
)
