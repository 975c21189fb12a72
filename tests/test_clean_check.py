"""The clean check started early: the original snapshot plus the patch, never the working copy."""

from __future__ import annotations

import os

import pytest

from policies.limits import Limits
from sandbox.errors import SandboxError
from sandbox.session import BoxSpec
from sandbox.testrun.verify import CleanCheck
from tests.conftest import worker_containers

pytestmark = pytest.mark.docker

FILES = {
    "calc.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
    "tests/test_calc.py": (
        "from calc import mean\n\n\ndef test_mean():\n    assert mean([2, 4]) == 3\n"
    ),
}
FIX = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""


def check_for(session, docker_client, sandbox_image, tmp_path, name: str) -> CleanCheck:
    limits = Limits(memory_mb=512, command_timeout_s=60)
    return CleanCheck(
        spec=BoxSpec(client=docker_client, image=sandbox_image, limits=limits),
        workspace=session.workspace,
        work_dir=tmp_path / name,
    )


def mine(docker_client) -> list:
    return [
        c
        for c in worker_containers(docker_client)
        if c.labels.get("worker.pid") == str(os.getpid())
        and c.labels.get("worker.phase") == "verify"
    ]


def test_started_early_it_sees_the_snapshot_and_the_patch_only(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    session = open_sandbox(make_repo(FILES))
    with check_for(session, docker_client, sandbox_image, tmp_path, "a") as check:
        # The working copy is "fixed" (and its test rewritten) after the check was started...
        (session.workspace.path / "calc.py").write_text("def mean(values):\n    return 3\n")
        # ...but without the patch the clean copy still fails: nothing of the working copy counts.
        assert not check.verify("", test_cmd="python -m pytest").passed
        with pytest.raises(SandboxError, match="used once"):
            check.verify(FIX, test_cmd="python -m pytest")
    with check_for(session, docker_client, sandbox_image, tmp_path, "b") as check:
        assert check.verify(FIX, test_cmd="python -m pytest").passed
    assert not mine(docker_client)


def test_a_used_check_leaves_no_container_and_no_copy(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    # Its container and then its copy go on a thread once its run ended; closing waits for both.
    session = open_sandbox(make_repo(FILES))
    with check_for(session, docker_client, sandbox_image, tmp_path, "e") as check:
        assert check.verify(FIX, test_cmd="python -m pytest").passed
        copy = check._fresh
    assert not mine(docker_client)
    assert copy.name == "workspace" and not copy.parent.exists()


def test_a_check_never_used_leaves_no_container(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    session = open_sandbox(make_repo(FILES))
    check = check_for(session, docker_client, sandbox_image, tmp_path, "c")
    check.start()
    check.close()  # at once, the start may still be under way
    assert not mine(docker_client)
    assert not (tmp_path / "c" / "workspace").exists()


def test_a_cancelled_check_runs_nothing_and_leaves_no_container(
    make_repo, open_sandbox, docker_client, sandbox_image, tmp_path
) -> None:
    session = open_sandbox(make_repo(FILES))
    with check_for(session, docker_client, sandbox_image, tmp_path, "d") as check:
        check.cancel()  # its start may still be under way: it goes once started
        assert not mine(docker_client)
        with pytest.raises(SandboxError, match="cancelled"):
            check.verify(FIX, test_cmd="python -m pytest")
    assert not mine(docker_client)
    assert not (tmp_path / "d" / "logs").exists()  # no command ran in it
