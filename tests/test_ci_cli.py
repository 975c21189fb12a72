"""`worker ci` end to end: JUnit from real pytest runs, flaky triage in fresh sandboxes, the fix
of the real failures only, the CI outputs; then `worker publish` to a draft pull request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, git
from tests.github_server import GitHubServer
from tests.test_fix_cli import API_KEY, BUGGY, GOOD_PATCH
from worker.llm.scripted_server import ScriptedServer, tool_call

CALC_ID = "tests/test_calc.py::test_mean"
# Fails when the test is polluted by the one before it: in the whole suite, never alone. A re-run
# of the failing tests alone passes it, every time: flaky by the rule, deterministically.
ORDER = "tests/test_order.py"
ORDER_TEST = (
    "STATE = []\n\n\ndef test_a_pollutes():\n    STATE.append(1)\n\n\n"
    "def test_b_polluted():\n    assert not STATE\n"
)
ORDER_ID = "tests/test_order.py::test_b_polluted"


def coin_test(counter: Path) -> str:
    """A test that really is flaky: runs 1, 3, 5... fail, 2, 4... pass, counted in a host file
    (the local backend runs host processes; each run still gets a fresh copy of the tree)."""
    return (
        f"from pathlib import Path\n\nCOUNTER = Path({str(counter)!r})\n\n\ndef test_coin():\n"
        "    n = int(COUNTER.read_text() or 0) + 1 if COUNTER.exists() else 1\n"
        "    COUNTER.write_text(str(n))\n    assert n % 2 == 0, f'run {n}'\n"
    )


def host_junit(repo: Path, path: Path, *ids: str) -> Path:
    """JUnit XML from a real pytest run on the host, as the CI job wrote it."""
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={path}",
         *ids],
        cwd=repo, capture_output=True, check=False, env={**os.environ, "PYTHONPATH": str(repo)},
    )  # fmt: skip
    assert path.stat().st_size > 0
    return path


def ci(repo: Path, out: Path, *extra: str, base_url: str, env: dict[str, str] | None = None):
    args = [sys.executable, "-m", "worker.cli", "ci", "--repo", str(repo), "--out", str(out)]
    args += ["--model", "scripted", "--base-url", base_url, *extra]
    environ = {**os.environ, "OPENAI_API_KEY": API_KEY, **(env or {})}
    environ.pop("OPENAI_BASE_URL", None)
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=environ)


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def test_flaky_only_build_makes_no_model_call(make_repo, tmp_path):
    counter = tmp_path / "coin-runs"
    repo = make_repo({"tests/test_coin.py": coin_test(counter), "conftest.py": ""})
    junit = host_junit(repo, tmp_path / "ci.xml")  # run 1: fails, as CI saw it
    summary, outputs = tmp_path / "step_summary.md", tmp_path / "github_output"
    summary.write_text("earlier step\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(outputs)}
    with ScriptedServer(script=[]) as server:
        proc = ci(repo, tmp_path / "out", "--junit", str(junit), "--backend", "local",
                  "--reruns", "2", base_url=server.base_url, env=env)  # fmt: skip
        assert server.requests == []  # not one token spent
    assert proc.returncode == 4, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "flaky_only" and r["steps"] == 0 and r["patch"] is None
    coin = {"test_id": "tests/test_coin.py::test_coin", "kind": "flaky", "passes": 1, "fails": 1}
    assert r["ci"]["tests"] == [coin]
    assert counter.read_text() == "3"  # CI's run and two re-runs, each a fresh copy
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "Flaky only" in md and "| `tests/test_coin.py::test_coin` | 1 | 1 |" in md
    # Actions: the summary appended after what earlier steps wrote; outputs as name=value lines.
    assert summary.read_text() == "earlier step\n" + md.rstrip("\n") + "\n"
    lines = outputs.read_text().splitlines()
    assert {"status=flaky_only", "fixed=false", "patch=", "cost="} <= set(lines)
    assert "FLAKY ONLY (no model call)" in proc.stderr


@pytest.mark.docker
def test_real_bug_among_flaky_ends_in_a_draft_pull_request(make_repo, tmp_path):
    repo = make_repo({**BUGGY, ORDER: ORDER_TEST})
    # Two matrix jobs' JUnit files: both saw the bug, one also the polluted test, and one a test
    # from another commit that this repository does not have.
    first = host_junit(repo, tmp_path / "py311.xml")
    elsewhere = make_repo({**BUGGY, "tests/test_gone.py": "def test_gone():\n    assert 0\n"})
    second = host_junit(
        elsewhere, tmp_path / "py312.xml", "tests/test_calc.py", "tests/test_gone.py"
    )
    outputs = tmp_path / "github_output"
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = ci(repo, tmp_path / "out", "--junit", str(first), "--junit", str(second),
                  base_url=server.base_url, env={"GITHUB_OUTPUT": str(outputs)})  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["ci"]["verified"] and r["verdict"]["rule"] == "junit"
    assert {t["test_id"]: (t["kind"], t["passes"], t["fails"]) for t in r["ci"]["tests"]} == {
        CALC_ID: ("failing", 0, 2),
        ORDER_ID: ("flaky", 2, 0),
        "tests/test_gone.py::test_gone": ("unknown", 0, 0),
    }
    # Only the real failure is the target: named in the goal, the flaky one deselected.
    first_request = server.requests[0]["messages"][1]["content"]
    assert CALC_ID in first_request and "test_b_polluted" not in first_request
    assert f"--deselect {ORDER_ID}" in r["test_cmd"]
    verification = (tmp_path / "out" / "verification.junit.xml").read_text()
    assert "test_mean" in verification and "<failure" not in verification
    assert "fixed=true" in outputs.read_text().splitlines()
    # The second job: no LLM key, write access; a draft pull request with the verified diff.
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(origin))
    checkout = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(origin), str(checkout))
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"} | GIT_ENV
    with GitHubServer(repository="acme/calc") as gh:
        env |= {"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "acme/calc", "GITHUB_API_URL": gh.api_url}
        pub = subprocess.run(
            [sys.executable, "-m", "worker.cli", "publish", "--out", str(tmp_path / "out"),
             "--repo", str(checkout)],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
    assert pub.returncode == 0, pub.stderr
    pull = gh.requests[-1]["body"]
    assert pull["draft"] is True and pull["base"] == "main"
    assert "+    return sum(values) / len(values)" in pull["body"]
    assert "test_b_polluted" in pull["body"]  # the flaky test, reported in the body
    assert "+    return sum(values) / len(values)" in git(origin, "show", pull["head"])


@pytest.mark.parametrize(
    ("content", "words"),
    [(None, "cannot read it"), (b"", "the file is empty"), (b"<html></html>", "not JUnit XML")],
)
def test_bad_junit_is_exit_2_naming_the_file(make_repo, tmp_path, content, words):
    repo = make_repo(BUGGY)
    junit = tmp_path / "results.xml"
    if content is not None:
        junit.write_bytes(content)
    with ScriptedServer(script=[]) as server:
        proc = ci(repo, tmp_path / "out", "--junit", str(junit), base_url=server.base_url)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"worker: error: --junit {junit}: ")
    assert words in proc.stderr
    assert report(tmp_path / "out")["status"] == "usage_error"


@pytest.mark.docker
@pytest.mark.parametrize("allow", [False, True])
def test_a_fix_verified_by_exit_code_only_is_not_verified_for_ci(make_repo, tmp_path, allow):
    files = {**BUGGY, "check.py": "from calc import mean\nassert mean([2, 4, 6]) == 4\n"}
    repo = make_repo(files)
    extra = ["--test-cmd", "python3 check.py", "--reruns", "1"]
    extra += ["--allow-exit-code-only"] if allow else []
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = ci(repo, tmp_path / "out", *extra, base_url=server.base_url)
    r = report(tmp_path / "out")
    assert r["verdict"]["rule"] == "exit_code_only"
    if allow:
        assert proc.returncode == 0 and r["status"] == "fixed", proc.stderr
    else:
        assert proc.returncode == 5 and r["status"] == "unverified", proc.stderr
        assert "exit code only" in (tmp_path / "out" / "summary.md").read_text()
