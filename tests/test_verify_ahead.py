"""The clean re-run started ahead, beside the working copy's run: used only for the very patch it
ran, on a clean copy; never a container left behind (real sandbox, real clean checks)."""

from __future__ import annotations

import time

import pytest

from policies.isolation import HARDENED
from policies.limits import Limits
from policies.truncation import Truncation
from sandbox.ecosystems import language_paths
from sandbox.prepare import Prepared
from tests.test_clean_check import FILES, FIX, mine
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools
from worker.run.environment import SandboxEnvironment

pytestmark = pytest.mark.docker

WRONG = FIX.replace("/ len(values)", "/ (len(values) + 1)")
TEST_CMD = "python -m pytest -q"


def environment(session, docker_client, sandbox_image, tmp_path) -> SandboxEnvironment:
    limits = Limits(memory_mb=512, command_timeout_s=60)
    context = ToolContext(
        workspace=session.workspace.path,
        box=session.box,
        paths=language_paths(),
        truncation=Truncation(),
        test_cmd=TEST_CMD,
        test_timeout_s=60,
    )
    prepared = Prepared(
        backend="docker", isolation=HARDENED, client=docker_client, image=sandbox_image
    )
    return SandboxEnvironment(
        session=session,
        registry=ToolRegistry(tools=default_tools("both")),
        context=context,
        prepared=prepared,
        limits=limits,
        run_dir=tmp_path / "run",
    )


def clean_runs(tmp_path) -> list[str]:
    """The clean checks that ran a command, by their folders (each has a command log)."""
    return sorted(p.parent.parent.name for p in (tmp_path / "run").glob("verify-*/logs/*"))


def test_the_run_started_ahead_answers_the_verification_of_that_patch(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    session = open_sandbox(make_repo(FILES))
    with environment(session, docker_client, sandbox_image, tmp_path) as env:
        env.verify_ahead(FIX)
        # The working copy is left unfixed: what passes is the clean copy plus the patch.
        verified = env.verify(FIX)
        assert verified.passed
        assert clean_runs(tmp_path) == ["verify-1"]  # no second clean run
    assert not mine(docker_client)


def test_a_run_started_ahead_for_another_patch_is_never_used(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    session = open_sandbox(make_repo(FILES))
    with environment(session, docker_client, sandbox_image, tmp_path) as env:
        env.verify_ahead(FIX)  # passes on a clean copy...
        verified = env.verify(WRONG)  # ...but the patch to judge is another one
        assert not verified.passed
        assert "test_mean" in verified.render()
        env.verify_ahead(WRONG)
        env.verify_ahead(FIX)  # the edit after: the run for WRONG is dropped, not used
        assert env.verify(FIX).passed
        # Checks 1 and 3 (FIX, then WRONG, ahead) were dropped; 2 judged WRONG; FIX's answer is
        # the run started ahead for it (4), not a fifth.
        runs = clean_runs(tmp_path)
        assert "verify-2" in runs and "verify-4" in runs and "verify-5" not in runs
    assert not mine(docker_client)


def test_a_run_started_ahead_and_never_used_leaves_no_container(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    session = open_sandbox(make_repo(FILES))
    with environment(session, docker_client, sandbox_image, tmp_path) as env:
        env.verify_ahead(WRONG)
    assert not mine(docker_client)
    assert not list((tmp_path / "run").glob("verify-*/workspace"))


SLOW = {
    **FILES,
    "tests/test_calc.py": (
        "import time\n\nfrom calc import mean\n\n\ndef test_mean():\n"
        "    time.sleep(120)\n    assert mean([2, 4]) == 3\n"
    ),
}


def test_closing_stops_a_run_started_ahead_instead_of_waiting_for_it(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    """As when Ctrl-C ends the run while the working copy's tests and the clean ones run."""
    session = open_sandbox(make_repo(SLOW))
    started = time.monotonic()
    with environment(session, docker_client, sandbox_image, tmp_path) as env:
        env.verify_ahead(FIX)
        deadline = time.monotonic() + 60
        while not clean_runs(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)  # until the clean copy's test run has begun
        assert clean_runs(tmp_path) == ["verify-1"]
    assert time.monotonic() - started < 60  # not the 120 s its test takes
    assert not mine(docker_client)
