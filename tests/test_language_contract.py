"""Every registered language through the same cases (docs/languages.md, the kit in
tests/language_kit.py), with the real CLI, real containers, the language's real toolchain image
and the scripted model server: recognised and set up with no flag, a baseline that names exactly
the planted bug's tests, a scripted fix verified test by test on a clean copy, a forged pass
refused, and an environment that lacks what the tests import stopped before any model call."""

from __future__ import annotations

import pytest

from sandbox.ecosystems import ECOSYSTEMS
from tests.language_kit import KITS, Kit
from tests.test_fix_cli import report, run_fix, tree_state
from worker.llm.scripted_server import ScriptedServer, text, tool_call

pytestmark = pytest.mark.docker


def test_every_registered_language_has_a_kit():
    assert sorted(k.load().name for k in ECOSYSTEMS) == sorted(kit.name for kit in KITS)


@pytest.fixture(params=KITS, ids=[kit.name for kit in KITS])
def kit(request: pytest.FixtureRequest):
    kit: Kit = request.param
    with kit.environment(request) as env:
        yield kit, env


def test_a_planted_bug_is_recognised_set_up_and_fixed_by_test_id(kit, make_repo, tmp_path):
    kit, env = kit
    repo = make_repo(kit.project)
    before = tree_state(repo)
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": kit.fix})]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=env)
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["setup"]["ecosystem"] == kit.name
    assert sorted(r["tests_before"]["failing"]) == sorted(kit.failing)
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert r["verdict"]["rule"] == "junit", r["verdict"]  # by test id, not the exit code
    assert tree_state(repo) == before


def test_a_pass_the_code_under_test_forges_is_no_fix(kit, make_repo, tmp_path):
    kit, env = kit
    repo = make_repo(kit.project)
    script = [tool_call("replace", kit.forge), text("The tests pass now.")]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", "--max-steps", "2", base_url=server.base_url,
                       env=env)  # fmt: skip
    r = report(tmp_path / "out")
    assert proc.returncode == 1, proc.stderr
    assert r["status"] != "fixed" and not (r.get("verification") or {}).get("passed")


def test_what_the_environment_lacks_stops_the_run_before_any_model_call(kit, make_repo, tmp_path):
    kit, env = kit
    repo = make_repo(kit.broken)
    with ScriptedServer(script=[]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=env)
    assert server.requests == []
    assert proc.returncode == 6, proc.stderr
    assert report(tmp_path / "out")["status"] == "project_environment"
