"""A run's secrets are masked in all it writes or sends: `worker fix` end to end with the real
CLI, real sandboxes and git, and the scripted model server on 127.0.0.1.

The repository's test prints the set-up-only variable's value (as a literal: set-up-only values
never reach the tests, but the code under test can hold the same string, or read it from a
set-up image that kept it), its base64 form and the API key; the model reads that test file.
Every request the model server received, the trace, the command logs, report.json and the page
hold `***` in their place."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest

from tests.test_fix_cli import BUGGY, GOOD_PATCH, run_fix
from worker.llm.scripted_server import ScriptedServer, tool_call

pytestmark = pytest.mark.docker

TOKEN = "tok-" + os.urandom(8).hex()
TOKEN_B64 = base64.b64encode(TOKEN.encode()).decode()
API_KEY = "sk-test-" + os.urandom(8).hex()
VALUES = (TOKEN, TOKEN_B64, API_KEY)
#: A goal quoting what the user saw: a URL with the token in it.
GOAL = f"make the tests pass; they print https://u:{TOKEN}@index.example/simple"
TEST = f"""\
from calc import mean


def test_mean():
    print("token {TOKEN}, encoded {TOKEN_B64}, key {API_KEY}")
    assert mean([2, 4, 6]) == 4, "{TOKEN}"
"""


def test_the_values_are_masked_in_requests_trace_logs_report_and_page(make_repo, tmp_path):
    repo = make_repo({**BUGGY, "tests/test_calc.py": TEST})
    out = tmp_path / "out"
    script = [
        tool_call("read_file", {"path": "tests/test_calc.py"}),
        tool_call("apply_patch", {"patch": GOOD_PATCH}),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(
            repo, out, "--no-setup", "--setup-env", "WORKER_TEST_TOKEN", "--goal", GOAL,
            base_url=server.base_url,
            env={"WORKER_TEST_TOKEN": TOKEN, "OPENAI_API_KEY": API_KEY},
        )  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    # What the model was sent: the failing test's output in the first message, the file it read.
    sent = json.dumps(server.requests)
    assert not [v for v in VALUES if v in sent]
    first = server.requests[0]["messages"][1]["content"]
    assert "token ***, encoded ***, key ***" in first and "https://u:***@index" in first
    read = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert 'print("token ***, encoded ***, key ***")' in read
    # What the run wrote: the trace, report.json, each command's log, all of --out.
    page = subprocess.run(
        [sys.executable, "-m", "worker.cli", "show", str(out)], capture_output=True, text=True
    )
    assert page.returncode == 0, page.stderr
    logs = sorted((out / "run" / "logs").glob("command-*.log"))
    assert logs and any("token ***, encoded ***, key ***" in p.read_text() for p in logs)
    assert "***" in (out / "trace.jsonl").read_text()
    report = json.loads((out / "report.json").read_text())
    assert report["goal"] == "make the tests pass; they print https://u:***@index.example/simple"
    written = [p for p in out.rglob("*") if p.is_file()]
    assert (out / "page.html") in written
    for path in written:
        text = path.read_text(errors="replace")
        assert not [v for v in VALUES if v in text], path
    assert not [v for v in VALUES if v in proc.stdout + proc.stderr]
