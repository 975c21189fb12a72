"""Each hardening promise of the sandbox, proved from inside a real container."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from policies.isolation import HARDENED
from policies.limits import Limits
from sandbox.container.docker_sandbox import DockerSandbox
from sandbox.ecosystems import language_paths
from sandbox.session import BoxSpec, open_session
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge
from sandbox.worktree.workspace import snapshot

pytestmark = pytest.mark.docker


@pytest.fixture
def box(make_repo, open_sandbox):
    repo = make_repo({"test_ok.py": "def test_ok():\n    assert True\n"})
    return open_sandbox(repo, limits=Limits(memory_mb=512, pids=64, command_timeout_s=60)).box


def test_only_loopback_and_no_name_resolution(box):
    r = box.run("ls /sys/class/net")
    assert r.output.split() == ["lo"]
    r = box.run("python3 -c \"import socket; socket.getaddrinfo('pypi.org', 443)\"")
    assert r.exit_code != 0
    assert "gaierror" in r.output or "Temporary failure" in r.output


def test_runs_as_non_root_without_capabilities(box):
    r = box.run("id -u; grep CapEff /proc/self/status; grep NoNewPrivs /proc/self/status")
    uid, capeff, nnp = r.output.splitlines()
    assert uid != "0"
    assert capeff.split()[1] == "0000000000000000"
    assert nnp.split()[1] == "1"


def test_root_filesystem_is_read_only(box):
    for target in ("/etc/worker-probe", "/usr/worker-probe", "/usr/lib/python3/x.py"):
        r = box.run(f"touch {target}")
        assert r.exit_code != 0
        assert "Read-only file system" in r.output or "Permission denied" in r.output
    assert box.run("touch /workspace/ok /tmp/ok").ok


def test_tmp_is_size_capped(make_repo, open_sandbox):
    repo = make_repo({"a.txt": "x"})
    box = open_sandbox(repo, limits=Limits(tmp_mb=16, memory_mb=512)).box
    r = box.run("head -c 40000000 /dev/zero > /tmp/fill")
    assert r.exit_code != 0
    assert "No space left" in r.output


def test_big_allocation_is_killed_and_reported_as_oom(box):
    r = box.run("python3 -c \"x = bytearray(6 * 1024**3); print('survived')\"")
    assert r.oom_killed
    assert not r.ok
    assert "survived" not in r.output
    assert "out of memory" in r.describe()
    # The sandbox is still usable afterwards.
    assert box.run("echo alive").output.strip() == "alive"


def test_fork_loop_is_stopped_by_pids_limit(box):
    script = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('fork refused after', n, e.errno)\n"
    )
    box.stage("forkloop.py", script.encode())
    r = box.run("python3 /run/worker/forkloop.py", timeout_s=30)
    assert "fork refused after" in r.output
    # Said in the command's ending (a test waiting for threads that never started hangs
    # otherwise with no word why: once_cell's 1,000 threads behind a Barrier).
    assert r.pids_exceeded and "process limit ([limits] pids) was reached" in r.describe()
    assert not box.run("echo fine").pids_exceeded
    assert int(r.output.split()[3]) < 64
    # Every child was killed with the command: a new command can fork again.
    assert box.run("sh -c 'echo child'").output.strip() == "child"


def test_sleeping_forever_is_killed_with_its_process_group(box):
    r = box.run("sleep 1000 & setsid sleep 1001 & sleep 1002", timeout_s=2)
    assert r.timed_out
    assert 2.0 <= r.duration_s < 10
    # Every process still alive (not a zombie awaiting its reaper), by name.
    left = box.run("for s in /proc/[0-9]*/stat; do cat $s; echo; done")
    alive = [
        line.split()[1] for line in left.output.splitlines() if line and line.split()[2] != "Z"
    ]
    assert "(python3)" in alive  # the listing works: it sees the reaper
    assert "(sleep)" not in alive


def test_40mb_of_output_comes_back_capped(box, tmp_path: Path):
    r = box.run("head -c 40000000 /dev/zero | tr '\\0' 'y'")
    assert r.ok
    assert r.output_bytes == 40_000_000
    assert r.truncated
    assert len(r.output.encode()) < 20_000
    assert "bytes of output cut" in r.output
    assert r.log_path is not None and r.log_path.stat().st_size == 40_000_000


def test_environment_does_not_leak_host_secrets(box, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    r = box.run("env")
    assert "OPENAI_API_KEY" not in r.output
    assert "HOSTNAME" in r.output  # we do see the container's own environment


def test_user_repository_is_not_mounted(box):
    r = box.run("cat /proc/mounts")
    mounts = [line.split()[1] for line in r.output.splitlines()]
    assert "/workspace" in mounts
    assert not any(m.startswith("/work/") or m.startswith("/root") for m in mounts)


def test_protected_files_are_read_only_to_code_in_the_sandbox(make_repo, open_sandbox):

    policy = language_paths()
    repo = make_repo({"app.py": "x = 1\n", "tests/test_app.py": "def test_x():\n    pass\n"})
    box = open_sandbox(repo, protect=policy.protection).box
    r = box.run("echo hacked > tests/test_app.py")
    assert r.exit_code != 0 and "Permission denied" in r.output
    for attack in (
        "rm -f tests/test_app.py",
        "mv tests/test_app.py tests/old.py",
        "chmod u+w tests/test_app.py",
    ):
        assert box.run(attack).exit_code != 0, attack
    assert box.run("cat tests/test_app.py").output.startswith("def test_x")
    assert box.run("echo y = 2 >> app.py && touch tests/new_output.txt").ok  # the rest is not


def test_writing_more_than_the_workspace_limit_is_stopped(make_repo, open_sandbox):
    repo = make_repo({"a.txt": "x"})
    session = open_sandbox(repo, limits=Limits(memory_mb=512, workspace_mb=64))
    box = session.box
    assert session.workspace.capped  # root here: the copy is a 64 MB filesystem of its own
    r = box.run("dd if=/dev/zero of=big bs=1M count=1000 conv=fsync 2>&1; echo finished")
    assert r.disk_exceeded and not r.ok
    assert "wrote more to the workspace" in r.describe()
    size = box.run("du -sm big | cut -f1").output.strip()
    assert int(size) <= 64 + 16  # the cap, and ext4's own slack: never the 1000 MB asked for
    assert box.run("rm big && echo ok").output.strip() == "ok"
    assert box.run("echo again > small && cat small").output.strip() == "again"


def test_set_up_s_copy_counts_its_own_writes_not_another_process_s_on_the_same_disk(
    make_repo, docker_client, sandbox_image, tmp_path
):
    """Set-up's copy is a plain host folder: the guard once read the disk's free space, so a CI
    run writing beside it got set-up killed (class-transformer's, at 759 s)."""
    workspace = snapshot(make_repo({"a.txt": "x"}), tmp_path / "run")
    assert not workspace.capped
    beside = tmp_path / "ci-output"
    assert os.stat(beside.parent).st_dev == os.stat(workspace.path).st_dev  # the same disk

    def write_beside_once_started() -> None:
        while not (workspace.path / "started").exists():
            time.sleep(0.05)
        with beside.open("wb") as f:
            for _ in range(48):  # three times the limit, while the command runs
                f.write(b"\1" * 2**20)
            os.fsync(f.fileno())

    box = DockerSandbox(
        client=docker_client, image=sandbox_image, workspace=workspace.path,
        control_dir=tmp_path / "run" / "control", limits=Limits(memory_mb=512, workspace_mb=16),
        isolation=replace(HARDENED, read_only_root=False),  # as set-up's
    )  # fmt: skip
    with box:
        writer = threading.Thread(target=write_beside_once_started)
        writer.start()
        try:
            r = box.run("touch started && sleep 3 && echo done")
        finally:
            writer.join(timeout=30)
        assert beside.stat().st_size == 48 * 2**20
        assert r.ok and r.output == "done\n", r.describe()
        # What the command writes itself is still stopped.
        r = box.run("dd if=/dev/zero of=big bs=1M count=2000 conv=fsync 2>&1; echo finished")
        assert r.disk_exceeded and "finished" not in r.output, r.describe()
        assert "wrote more to the workspace" in r.describe()


def test_the_capped_copy_is_unmounted_and_gone_when_the_session_ends(
    make_repo, docker_client, sandbox_image, tmp_path
):
    repo = make_repo({"a.txt": "x"})
    limits = Limits(memory_mb=512, workspace_mb=32)
    spec = BoxSpec(client=docker_client, image=sandbox_image, limits=limits)
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        copy = session.workspace.path
        assert str(copy) in Path("/proc/self/mounts").read_text()
        assert session.box.run("cat a.txt").output == "x"
    assert str(copy) not in Path("/proc/self/mounts").read_text()
    assert not copy.exists() and not copy.with_name(copy.name + ".img").exists()


# A project's own tests that touch their fixtures (jinja2's loader tests `os.utime` a template
# to check its mtime cache): locked test files would fail them, a sandbox-made failure.
FIXTURE_TESTS = {
    "app.py": "def render(path):\n    return open(path).read().upper()\n",
    "tests/res/page.html": "hello\n",
    "tests/test_app.py": (
        "import os, pathlib, time\n"
        "import app\n"
        "RES = pathlib.Path(__file__).parent / 'res'\n"
        "def test_cache_follows_mtime():\n"
        "    page = RES / 'page.html'\n"
        "    before = page.stat().st_mtime\n"
        "    os.utime(page, (time.time() + 60, time.time() + 60))\n"
        "    assert page.stat().st_mtime > before\n"
        "    os.chmod(page, 0o600)\n"
        "    (RES / 'page.html.cache').write_text('x')\n"
        "def test_render():\n"
        "    assert app.render(RES / 'page.html') == 'HELLO\\n'\n"
    ),
}


def test_a_projects_own_tests_may_touch_their_fixtures(make_repo, open_sandbox):

    session = open_sandbox(make_repo(FIXTURE_TESTS), protect=language_paths().protection)
    run = run_tests(session.box, test_cmd="python -m pytest tests")
    assert run.passed, run.render()
    assert run.result.fixtures_put_back == ()  # times and mode changed, bytes did not
    # The test code itself stays locked.
    assert session.box.run("echo x >> tests/test_app.py").exit_code != 0


def test_code_that_rewrites_a_fixture_is_named_put_back_and_not_a_pass(make_repo, open_sandbox):

    files = {
        "app.py": "def shout(s):\n    return s\n",
        "tests/golden/out.txt": "HI\n",
        "tests/test_app.py": (
            "import pathlib, app\n"
            "def test_shout():\n"
            "    golden = pathlib.Path(__file__).parent / 'golden' / 'out.txt'\n"
            "    assert app.shout('hi') + '\\n' == golden.read_text()\n"
        ),
    }
    session = open_sandbox(make_repo(files), protect=language_paths().protection)
    baseline = run_tests(session.box, test_cmd="python -m pytest tests")
    assert not baseline.passed and baseline.result.fixtures_put_back == ()
    # A "fix" that makes the golden file agree with the code instead of the other way round.
    (session.workspace.path / "app.py").write_text(
        "import pathlib\n"
        "def shout(s):\n"
        "    pathlib.Path('tests/golden/out.txt').write_text(s + '\\n')\n"
        "    return s\n"
    )
    run = run_tests(session.box, test_cmd="python -m pytest tests")
    assert run.verdict.passed  # on its own the run looks green...
    assert run.result.fixtures_put_back == ("tests/golden/out.txt",)
    verdict = judge(run, baseline=baseline)
    assert not verdict.passed  # ...but not against the baseline
    assert "tests/golden/out.txt" in verdict.describe()
    assert (session.workspace.path / "tests/golden/out.txt").read_text() == "HI\n"


def test_a_fixture_swapped_for_a_link_is_never_written_through(make_repo, open_sandbox, tmp_path):

    outside = tmp_path / "outside"
    outside.mkdir()
    files = {
        "app.py": "x = 1\n",
        "tests/data/a.txt": "A\n",
        "tests/test_a.py": "def test_a():\n    pass\n",
    }
    session = open_sandbox(make_repo(files), protect=language_paths().protection)
    ws = session.workspace.path
    # The sandbox user owns tests/data (only fixtures in it): it can swap the folder for a link
    # to a host path, hoping the host puts the fixture back through it, as root.
    r = session.box.run(f"mv tests/data tests/old && ln -s {outside} tests/data && echo done")
    assert r.output.strip() == "done"
    assert r.fixtures_put_back == ("tests/data/a.txt",)
    assert list(outside.iterdir()) == []
    # A fixture swapped for a link is replaced by a real file holding the snapshot's bytes.
    r = session.box.run(
        f"rm tests/data && mv tests/old tests/data && ln -sf {outside}/x tests/data/a.txt"
    )
    assert r.fixtures_put_back == ("tests/data/a.txt",)
    assert not (ws / "tests/data/a.txt").is_symlink()
    assert (ws / "tests/data/a.txt").read_text() == "A\n"
    assert list(outside.iterdir()) == []
