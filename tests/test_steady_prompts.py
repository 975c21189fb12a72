"""The same failure reads the same to the model, run after run (issue 48, item 5): no clock, no
object address, no hash-seed order in what it is sent; the person's copy keeps the clock."""

from __future__ import annotations

import pytest

from sandbox.testrun.steady import steady
from tests.test_fix_cli import report, run_fix
from worker.llm.scripted_server import ScriptedServer, tool_call

# What runners print, as they print it: each clock goes, every compared value stays.
RUNNER_TEXT = [
    (
        "E       assert <shop.Cart object at 0x7f3a1c2b9d90> is None\n"
        "==== 1 failed, 3 passed in 0.42s (0:00:00) ====",
        "E       assert <shop.Cart object at 0x…> is None\n==== 1 failed, 3 passed ====",
    ),
    (
        "--- FAIL: TestMean (0.01s)\n    calc_test.go:9: got 0x2a want 42 after 3.5s\n"
        "FAIL\nFAIL\texample.com/calc\t0.012s\nok  \texample.com/other\t0.004s",
        "--- FAIL: TestMean\n    calc_test.go:9: got 0x2a want 42 after 3.5s\n"
        "FAIL\nFAIL\texample.com/calc\nok  \texample.com/other",
    ),
    (
        "panic: boom\ngoroutine 7 [running]:\ncalc.Mean(0xc000012345, 0x3)",
        "panic: boom\ngoroutine 7 [running]:\ncalc.Mean(0xc…, 0x3)",
    ),
    (
        "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; "
        "finished in 0.00s",
        "test result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out",
    ),
    (
        "Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.052 s <<< FAILURE!\n"
        "[INFO] Total time:  4.210 s\n[INFO] Finished at: 2026-12-06T23:40:01Z\n",
        "Tests run: 3, Failures: 1, Errors: 0, Skipped: 0 <<< FAILURE!\n",
    ),
    (
        "Tests:       1 failed, 2 passed, 3 total\nTime:        1.234 s\n"
        "  2 passing (12ms)\n  1 failing\n",
        "Tests:       1 failed, 2 passed, 3 total\n  2 passing\n  1 failing\n",
    ),
    ("expected 'in 0.5s' to equal 'in 1.5s'", "expected 'in 0.5s' to equal 'in 1.5s'"),
]


@pytest.mark.parametrize(("printed", "read"), RUNNER_TEXT)
def test_the_clock_and_addresses_go_and_the_values_stay(printed, read):
    assert steady(printed) == read


# A failing test whose message carries an address and a set of strings (printed in hash order),
# and that takes a different time each run.
NOISY = {
    "shop.py": "class Cart:\n    pass\n\n\ndef total(prices):\n    return sum(prices) - 1\n",
    "tests/test_shop.py": (
        "import random, time\n\nfrom shop import Cart, total\n\n\n"
        "def test_total():\n"
        "    time.sleep(random.random() / 5)\n"
        "    seen = {'apple', 'pear', 'plum', 'fig', 'kiwi', 'lime'}\n"
        "    assert (total([1, 2]), Cart()) == (3, sorted(seen)), str(seen)\n"
    ),
}
FIX = (
    "--- a/shop.py\n+++ b/shop.py\n@@ -4,2 +4,2 @@\n \n def total(prices):\n"
    "-    return sum(prices) - 1\n+    return sum(prices)\n"
)


@pytest.mark.docker
def test_two_runs_of_the_same_failure_send_the_same_first_request(make_repo, tmp_path):
    firsts = []
    for n in range(2):
        repo = make_repo(NOISY)
        with ScriptedServer(script=[tool_call("apply_patch", {"patch": FIX})]) as server:
            proc = run_fix(repo, tmp_path / f"out{n}", base_url=server.base_url)
            assert server.requests, proc.stderr
            firsts.append(server.requests[0]["messages"])
        assert report(tmp_path / f"out{n}")["tests_before"]["failing"] == [
            "tests/test_shop.py::test_total"
        ], proc.stderr
    task = firsts[0][1]["content"]
    assert "object at 0x…" in task and "0 passed, 1 failed, 0 errors, 0 skipped\n" in task
    assert firsts[0] == firsts[1]
