"""Which lines the failing tests run, and how many passing tests run them too: one traced run
of the failing tests' files in the sandbox (the pytest plugin in
sandbox/ecosystems/python/line_trace.py; for `python -m unittest`, our unittest runner traced by
unittest_trace.py, the files asked for by id as in any run of some ids).

The counts are what spectrum-based fault localisation ranks (worker/search/suspects.py): a line
every failing test runs and few passing tests do is where a bug most likely is. The run is a
hint, never a verdict: what comes back is written by the repository's own process, so it is
read with size caps, and a run that fails, times out or writes nonsense gives no counts.
"""

from __future__ import annotations

import json
import secrets
import shlex
from collections.abc import Sequence
from importlib import resources

from sandbox.container.base import Sandbox
from sandbox.ecosystems.python.pytest_command import is_pytest, narrowed
from sandbox.ecosystems.python.unittest_command import (
    IDS_VARIABLE,
    RUNNER_FILE,
    is_unittest,
    with_runner,
)
from sandbox.source.places import LineCounts
from sandbox.testrun.ids import validate_test_ids

TRACE_MODULE = "worker_line_trace"
UNITTEST_TRACER = "worker_unittest_trace.py"
MAX_FILES = 2_000  # source files kept from one traced run
MAX_LINE = 1_000_000


def count_lines(
    box: Sandbox, *, test_cmd: str, test_files: Sequence[str], timeout_s: float
) -> LineCounts:
    """Run the tests of `test_files` traced; the counts, or empty ones saying why not."""
    unittest = is_unittest(test_cmd)
    if not unittest and not is_pytest(test_cmd):
        return LineCounts(why_empty="the test command is neither pytest nor python -m unittest")
    try:
        files = validate_test_ids(list(dict.fromkeys(test_files)))
    except ValueError as exc:
        return LineCounts(why_empty=str(exc))
    if not files:
        return LineCounts(why_empty="no test files")
    out = f"/tmp/worker-lines-{secrets.token_hex(4)}.json"
    env = {"WORKER_TRACE_OUT": out}
    if unittest:
        box.stage(RUNNER_FILE, _source("unittest_report.py"))  # the tracer imports it
        tracer = box.stage(UNITTEST_TRACER, _source("unittest_trace.py"))
        ids = f"worker-unittest-ids-{secrets.token_hex(4)}.txt"
        env[IDS_VARIABLE] = box.stage(ids, "".join(f"{f}\n" for f in files).encode())
        command = f"rm -f {out}; {with_runner(test_cmd, tracer)}"
    else:
        plugin = box.stage(TRACE_MODULE + ".py", _source("line_trace.py"))
        env["PYTHONPATH"] = plugin.rsplit("/", 1)[0]
        args = " ".join(shlex.quote(f) for f in files)
        command = f"rm -f {out}; {narrowed(test_cmd, files)} -q -p no:cacheprovider"
        command += f" -p {TRACE_MODULE} {args}"
    result = box.run(command, timeout_s=timeout_s, capture_file=out, env=env)
    if result.timed_out:
        return LineCounts(why_empty=f"the traced run did not finish in {timeout_s:.0f}s")
    return parse_counts(result.captured or b"")


def parse_counts(data: bytes) -> LineCounts:
    """The plugin's JSON, checked field by field; anything malformed gives empty counts."""
    try:
        raw = json.loads(data.decode("utf-8"))
        failed, passed = int(raw["failed"]), int(raw["passed"])
        lines: dict[str, dict[int, tuple[int, int]]] = {}
        for rel, counts in list(raw["lines"].items())[:MAX_FILES]:
            if not isinstance(rel, str) or not isinstance(counts, dict):
                raise ValueError("not a file's counts")
            kept = {}
            for line, pair in counts.items():
                number, ef, ep = int(line), int(pair[0]), int(pair[1])
                if not (0 < number <= MAX_LINE and 0 <= ef <= failed and 0 <= ep <= passed):
                    raise ValueError("counts out of range")
                kept[number] = (ef, ep)
            lines[rel] = kept
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError):
        return LineCounts(why_empty="the traced run wrote no readable counts")
    return LineCounts(failed=failed, passed=passed, lines=lines)


def _source(name: str) -> bytes:
    """One of our files run in the sandbox (a plugin, a runner), as staged there."""
    return resources.files("sandbox.ecosystems.python").joinpath(name).read_bytes()
