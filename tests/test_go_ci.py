"""`worker ci` on a Go build: CI's report (gotestsum's `--junitfile`, go-junit-report's, or the
`go test -json` log itself) read into Go test ids, the ids CI named checked against the
repository's `_test.go` files, the real failures triaged and fixed in real containers
(worker-sandbox:go1.24) with the scripted model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.ecosystems.go.ecosystem import GO
from tests.go_bin import LoopbackIndex, serve_go_bin
from tests.test_ci_cli import ci, report
from tests.test_go_fix import GOOD_PATCH
from tests.test_go_test_run import MODULE
from worker.llm.scripted_server import ScriptedServer, tool_call

# As gotestsum's internal/junitxml writes it: a suite per package named by its import path, a
# case per test with classname the import path; a package that failed outside any test is a
# failing case named TestMain.
GOTESTSUM = b"""<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="6" failures="3" errors="0" time="0.412">
\t<testsuite tests="4" failures="2" time="0.004" name="example.com/tools/calc" timestamp="x">
\t\t<properties><property name="go.version" value="go1.24.11 linux/amd64"></property>
\t\t</properties>
\t\t<testcase classname="example.com/tools/calc" name="TestAdd/one_plus_two" time="0.000">
\t\t\t<failure message="Failed" type="">    add_test.go:17: Add(1, 2) = -1, want 3</failure>
\t\t</testcase>
\t\t<testcase classname="example.com/tools/calc" name="TestAdd" time="0.000">
\t\t\t<failure message="Failed" type="">--- FAIL: TestAdd (0.00s)</failure>
\t\t</testcase>
\t\t<testcase classname="example.com/tools/calc" name="TestAdd/zero_plus_zero" time="0.000">
\t\t</testcase>
\t</testsuite>
\t<testsuite tests="1" failures="1" time="0.001" name="example.com/tools/gone" timestamp="x">
\t\t<testcase classname="example.com/tools/gone" name="TestGone" time="0.000">
\t\t\t<failure message="Failed" type="">gone_test.go:5: no</failure>
\t\t</testcase>
\t</testsuite>
\t<testsuite tests="1" failures="0" time="0.001" name="example.com/tools/strs" timestamp="x">
\t\t<testcase classname="example.com/tools/strs" name="TestReverse" time="0.000"></testcase>
\t</testsuite>
</testsuites>
"""


def test_ci_reports_of_a_go_build_name_the_tests_as_go_runs_do(make_repo):
    repo = make_repo(MODULE)
    summary = GO.read_ci_report(GOTESTSUM, repo)
    assert summary.failing_ids() == [
        "calc::TestAdd/one_plus_two", "calc::TestAdd", "gone::TestGone"
    ]  # fmt: skip
    assert summary.outcome_of("strs::TestReverse") == "passed"
    # go-junit-report's: the suite names the package (v1's classname is its last element
    # only), a package that did not build is a case named [build failed]; gotestsum with
    # --junitfile-testcase-classname=relative: the folder.
    other = (
        b'<testsuites><testsuite name="example.com/tools/strs" tests="1" failures="1">'
        b'<testcase classname="strs" name="[build failed]"><failure message="Failed"/>'
        b'</testcase></testsuite><testsuite name="calc" tests="1" failures="1">'
        b'<testcase classname="./calc" name="TestAdd"><failure message="Failed"/></testcase>'
        b"</testsuite></testsuites>"
    )
    assert GO.read_ci_report(other, repo).failing_ids() == ["strs", "calc::TestAdd"]
    assert GO.has_test(repo, "calc::TestAdd/made_at_run_time")  # its top-level test is there
    assert GO.has_test(repo, "strs") and GO.has_test(repo, "strs::TestLater")
    assert not GO.has_test(repo, "gone::TestGone") and not GO.has_test(repo, "calc::TestNone")
    assert not GO.has_test(repo, "calc::Add")  # a function, not a test
    with pytest.raises(ValueError):
        GO.read_ci_report(b"FAIL example.com/tools/calc", repo)


@pytest.fixture
def index(go_image: str) -> Iterator[LoopbackIndex]:
    with serve_go_bin() as served:
        yield served


@pytest.mark.docker
def test_worker_ci_on_a_go_build_triages_gotestsums_junit_and_fixes_the_real_failure(
    make_repo, tmp_path, index
):
    repo = make_repo(MODULE)
    junit = tmp_path / "junit.xml"
    junit.write_bytes(GOTESTSUM)
    script = [tool_call("apply_patch", {"patch": GOOD_PATCH})]
    with ScriptedServer(script=script) as server:
        proc = ci(repo, tmp_path / "out", "--junit", str(junit), base_url=server.base_url,
                  env={"WORKER_GO_INDEX": index.url})  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    assert "not in the repository (not run): gone::TestGone" in proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["ci"]["verified"] and r["verdict"]["rule"] == "junit"
    triaged = {t["test_id"]: (t["kind"], t["passes"], t["fails"]) for t in r["ci"]["tests"]}
    assert triaged["calc::TestAdd/one_plus_two"] == ("failing", 0, 2), triaged
    assert triaged["calc::TestAdd"] == ("failing", 0, 2), triaged
    assert triaged["gone::TestGone"][0] == "unknown", triaged
