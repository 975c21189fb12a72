"""Faults end cleanly, with the result kept: the sandbox removed from outside, the daemon gone
and back, a worker killed with SIGKILL, a full disk, many runs at once, no temp folder left.

Every subprocess gets its own TMPDIR, so "nothing left behind" is checked on a folder no other
process writes to."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from policies.limits import Limits
from sandbox.container.docker_sandbox import LABEL
from sandbox.container.owner import Owner
from sandbox.errors import SandboxGone
from sandbox.session import BoxSpec, open_session
from sandbox.worktree.scratch import OWNER_FILE, make_scratch_dir, sweep_scratch
from tests.test_fix_cli import BUGGY, GOOD_PATCH, fix_command, fix_env, tree_state
from worker.llm.scripted_server import ScriptedServer, tool_call

pytestmark = pytest.mark.docker

SLOW_TEST = {
    "conftest.py": "",
    "tests/test_slow.py": "import time\n\n\ndef test_slow():\n    time.sleep(30)\n",
}
GONE_WORDS = "sandbox container disappeared from outside"


def worker_env(tmp: Path, **extra: str) -> dict[str, str]:
    """The environment of a worker subprocess, with a private temp folder."""
    tmp.mkdir(exist_ok=True)
    return {**fix_env(**extra), "TMPDIR": str(tmp)}


def worker_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "worker.cli", *args]


def wait_for(what: Callable[[], object], *, timeout_s: float = 60.0, poll_s: float = 0.1) -> object:
    """Poll until `what()` is truthy; fail the test (never hang) after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = what()
        if found:
            return found
        time.sleep(poll_s)
    raise AssertionError(f"timed out waiting for {what}")


def containers_of(client: docker.DockerClient, pid: int) -> list[dict]:
    return client.api.containers(all=True, filters={"label": f"worker.pid={pid}"})


def running(client: docker.DockerClient, pid: int, process: str) -> str | None:
    """The id of worker `pid`'s container once `process` runs in it."""
    for found in containers_of(client, pid):
        try:
            top = client.api.top(found["Id"])
        except docker.errors.APIError:
            continue
        if any(process in " ".join(row) for row in top.get("Processes") or []):
            return str(found["Id"])
    return None


def owned_by(pid: int, tmp: Path) -> list[Path]:
    """The scratch folders in `tmp` that worker `pid` made."""
    return [p for p in tmp.iterdir() if (o := Owner.read(p / OWNER_FILE)) and o.pid == pid]


def remove_from_outside(container_id: str) -> None:
    subprocess.run(["docker", "rm", "-f", container_id], check=True, capture_output=True)


# -- the sandbox removed from outside -------------------------------------------------------


def test_container_removed_mid_command_is_one_clear_error(
    make_repo, docker_client, sandbox_image, tmp_path
):
    repo = make_repo({"a.txt": "a\n"})
    with pytest.raises(SandboxGone, match=GONE_WORDS):
        with open_session(
            repo,
            spec=BoxSpec(client=docker_client, image=sandbox_image, limits=Limits(memory_mb=256)),
            run_dir=tmp_path / "run",
        ) as session:
            cid = session.box._container.id
            threading.Timer(1.0, remove_from_outside, args=(cid,)).start()
            session.box.run("sleep 20")
    assert not docker_client.api.containers(all=True, filters={"id": cid})


def test_run_tests_with_its_container_removed_exits_3_in_one_line(
    make_repo, docker_client, sandbox_image, tmp_path
):
    repo = make_repo(SLOW_TEST)
    before = tree_state(repo)
    proc = subprocess.Popen(
        worker_cmd("sandbox", "run-tests", "--repo", str(repo)),
        env=worker_env(tmp_path / "tmp"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        cid = wait_for(lambda: running(docker_client, proc.pid, "pytest"))
        remove_from_outside(str(cid))
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 3, err
    lines = [line for line in err.splitlines() if line.startswith("worker:")]
    assert len(lines) == 1 and GONE_WORDS in lines[0], err
    assert "Traceback" not in err and "409" not in err
    assert not containers_of(docker_client, proc.pid)
    assert not list((tmp_path / "tmp").iterdir())  # no scratch folder left
    assert tree_state(repo) == before


def test_fix_with_its_container_removed_exits_3_with_report_and_trace(
    make_repo, docker_client, sandbox_image, tmp_path
):
    repo = make_repo(SLOW_TEST)
    out = tmp_path / "out"
    with ScriptedServer(script=[]) as server:
        proc = subprocess.Popen(
            fix_command(repo, out, base_url=server.base_url),
            env=worker_env(tmp_path / "tmp"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            cid = wait_for(lambda: running(docker_client, proc.pid, "pytest"))
            remove_from_outside(str(cid))
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 3, err
    assert GONE_WORDS in err and "Traceback" not in err
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "environment_error" and GONE_WORDS in report["reason"]
    assert (out / "trace.jsonl").is_file()
    assert not (out / "traceback.txt").exists()
    assert not containers_of(docker_client, proc.pid)
    assert not list((tmp_path / "tmp").iterdir())


# -- temp folders ---------------------------------------------------------------------------


def test_run_tests_leaves_no_temp_folder_and_keeps_logs_only_under_out(
    make_repo, sandbox_image, tmp_path
):
    repo = make_repo({"conftest.py": "", "tests/test_ok.py": "def test_ok():\n    pass\n"})
    tmp = tmp_path / "tmp"
    proc = subprocess.run(
        worker_cmd("sandbox", "run-tests", "--repo", str(repo)),
        env=worker_env(tmp),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "full log: not kept (pass --out DIR to keep it)" in proc.stdout
    assert not list(tmp.iterdir())
    out = tmp_path / "out"
    proc = subprocess.run(
        worker_cmd("sandbox", "run-tests", "--repo", str(repo), "--out", str(out)),
        env=worker_env(tmp),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"full log: {out}/logs/command-001.log" in proc.stdout
    assert not list(tmp.iterdir())
    assert sorted(p.name for p in out.iterdir()) == ["logs"]  # the copy is gone


def test_sweep_removes_folders_of_dead_owners_only(tmp_path):
    mine = make_scratch_dir(parent=tmp_path)
    dead = make_scratch_dir(parent=tmp_path)
    reused_pid = make_scratch_dir(parent=tmp_path)  # our pid, another start time: not us
    unmarked = tmp_path / "worker-run-unmarked"  # made before marks, or mark not yet written
    unmarked.mkdir()
    child = subprocess.Popen(["true"])
    child.wait()
    Owner(pid=child.pid, started=time.time()).write(dead / OWNER_FILE)
    me = Owner.this_process()
    Owner(pid=me.pid, started=me.started - 100).write(reused_pid / OWNER_FILE)
    removed = sweep_scratch(tmp_path)
    assert sorted(removed) == sorted([dead, reused_pid])
    assert mine.is_dir() and unmarked.is_dir()


# -- SIGKILL of the worker --------------------------------------------------------------------


def test_next_start_cleans_up_after_a_sigkilled_worker(
    make_repo, docker_client, sandbox_image, tmp_path
):
    repo = make_repo(SLOW_TEST)
    tmp = tmp_path / "tmp"
    env = worker_env(tmp)
    victim = subprocess.Popen(
        worker_cmd("sandbox", "run-tests", "--repo", str(repo)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # A live worker's leftovers-to-be, which the sweep must not touch.
    live = subprocess.Popen(
        worker_cmd("sandbox", "run-tests", "--repo", str(repo)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        killed_cid = wait_for(lambda: running(docker_client, victim.pid, "pytest"))
        live_cid = wait_for(lambda: running(docker_client, live.pid, "pytest"))
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
        assert docker_client.api.containers(filters={"id": killed_cid})  # left behind
        left = owned_by(victim.pid, tmp)
        assert left  # its scratch folder (the copy) too

        fixed = {**SLOW_TEST, "tests/test_slow.py": "def test_fast():\n    pass\n"}
        proc = subprocess.run(
            worker_cmd("sandbox", "run-tests", "--repo", str(make_repo(fixed))),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert "removed 1 container(s)" in proc.stderr
        assert not docker_client.api.containers(all=True, filters={"id": killed_cid})
        assert not any(p.exists() for p in left)
        mounts = Path("/proc/self/mounts").read_text()
        assert not any(str(p) in mounts for p in left)  # its capped copy unmounted too
        # The live worker's container and copy are untouched.
        assert docker_client.api.containers(filters={"id": live_cid})
        assert owned_by(live.pid, tmp)
    finally:
        for p in (victim, live):
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=60)
    assert not containers_of(docker_client, live.pid)
    assert not list(tmp.iterdir())


def test_an_unrelated_labelled_container_of_a_live_process_is_kept(docker_client, sandbox_image):
    # The sweep runs at every start: it must leave the containers of live workers alone,
    # whatever else a test run here does (the fixture sandboxes carry pytest's own pid).
    from sandbox.container.prune import sweep_leftovers

    alive = docker_client.containers.run(
        sandbox_image,
        ["sleep", "60"],
        detach=True,
        network_mode="none",
        labels={LABEL: "1", "worker.pid": str(os.getpid())},
    )
    try:
        swept = sweep_leftovers(docker_client)
        assert alive.name not in swept.containers
        assert docker_client.api.containers(filters={"id": alive.id})
    finally:
        alive.remove(force=True)


# -- the Docker daemon stops mid-run, and comes back ------------------------------------------

#: What the runner needs of an image (python3 and its libraries, /bin/sh, sleep): 35 MB that a
#: private daemon imports in about a second, where loading the full image takes about 27 s.
TINY_IMAGE_FILES = [
    "usr/bin/python3",
    "bin/sh",
    "bin/sleep",
    "bin/true",
    "lib/x86_64-linux-gnu/libm.so.6",
    "lib/x86_64-linux-gnu/libz.so.1",
    "lib/x86_64-linux-gnu/libexpat.so.1",
    "lib/x86_64-linux-gnu/libc.so.6",
    "lib64/ld-linux-x86-64.so.2",
    "usr/lib/python3.11",
]
TINY_IMAGE_SKIPS = ["test", "idlelib", "ensurepip", "lib2to3", "pydoc_data", "tkinter", "config-*"]
TINY_IMAGE = "worker-faults-tiny:latest"


class PrivateDaemon:
    """A second dockerd of our own (never the shared one), to stop and start at will."""

    BRIDGE = "wfaults0"  # its own bridge: `--bridge=none` would delete the shared docker0

    def __init__(self, *, root: Path) -> None:
        self.root = root
        self.host = f"unix://{root}/docker.sock"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if subprocess.run(["ip", "link", "show", self.BRIDGE], capture_output=True).returncode:
            for args in (
                ["link", "add", self.BRIDGE, "type", "bridge"],
                ["addr", "add", "10.213.17.1/24", "dev", self.BRIDGE],
                ["link", "set", self.BRIDGE, "up"],
            ):
                subprocess.run(["ip", *args], check=True, capture_output=True)
        log = (self.root / "dockerd.log").open("ab")
        self._proc = subprocess.Popen(
            ["dockerd", "--host", self.host, "--data-root", f"{self.root}/data",
             "--exec-root", f"{self.root}/exec", "--pidfile", f"{self.root}/dockerd.pid",
             f"--bridge={self.BRIDGE}", "--iptables=false", "--ip-masq=false"],
            stdout=log, stderr=log,
        )  # fmt: skip
        log.close()
        wait_for(lambda: self.docker("info", check=False).returncode == 0, timeout_s=60)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=30)

    def docker(self, *args: str, check: bool = True, **kw: object):
        return subprocess.run(
            ["docker", *args],
            env={**os.environ, "DOCKER_HOST": self.host},
            capture_output=True,
            check=check,
            **kw,  # type: ignore[arg-type]
        )

    def containers(self) -> list[str]:
        return self.docker("ps", "-aq", "--filter", f"label={LABEL}").stdout.decode().split()


@pytest.fixture(scope="module")
def tiny_rootfs(tmp_path_factory, sandbox_image) -> Path:
    tar = tmp_path_factory.mktemp("tiny") / "rootfs.tar"
    skips = [f"--exclude=usr/lib/python3.11/{name}" for name in TINY_IMAGE_SKIPS]
    with tar.open("wb") as f:
        subprocess.run(
            ["docker", "run", "--rm", "--network", "none", sandbox_image, "tar", "-chf", "-",
             "-C", "/", *skips, *TINY_IMAGE_FILES],
            stdout=f, check=True,
        )  # fmt: skip
    return tar


@pytest.fixture
def private_daemon(tiny_rootfs):
    root = Path(tempfile.mkdtemp(prefix="wd-"))  # short: a socket path holds ~100 characters
    daemon = PrivateDaemon(root=root)
    try:
        daemon.start()
        daemon.docker("import", str(tiny_rootfs), TINY_IMAGE)
        yield daemon
    finally:
        daemon.stop()
        subprocess.run(["ip", "link", "delete", PrivateDaemon.BRIDGE], capture_output=True)
        subprocess.run(["umount", "-l", f"{root}/data"], capture_output=True)  # its own bind
        shutil.rmtree(root, ignore_errors=True)


def test_daemon_stopped_mid_run_is_exit_3_then_the_next_run_works(
    make_repo, private_daemon, tmp_path
):
    shared_bridge = Path("/sys/class/net/docker0").exists()
    repo = make_repo({"a.txt": "a\n"})
    tmp = tmp_path / "tmp"
    env = worker_env(tmp, DOCKER_HOST=private_daemon.host)
    run_tests = ["sandbox", "run-tests", "--repo", str(repo), "--image", TINY_IMAGE]
    proc = subprocess.Popen(
        worker_cmd(*run_tests, "--test-cmd", "sleep 60"),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        cid = wait_for(lambda: private_daemon.containers())
        wait_for(lambda: b"sleep 60" in private_daemon.docker("top", cid[0], check=False).stdout)
        private_daemon.stop()  # as `systemctl stop docker` would, mid-command
        _, err = proc.communicate(timeout=60)  # no hang
    finally:
        proc.kill()
    assert proc.returncode == 3, err
    lines = [line for line in err.splitlines() if line.startswith("worker:")]
    # A stopping daemon kills its containers first: either way, one clear line.
    said = ("Docker daemon stopped answering", "sandbox container disappeared from outside")
    assert len(lines) == 1 and any(words in lines[0] for words in said), err
    assert "Traceback" not in err
    assert not list(tmp.iterdir())

    # While it is down: the same clear exit 3, at once.
    down = subprocess.run(
        worker_cmd(*run_tests, "--test-cmd", "true"),
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert down.returncode == 3 and "Docker is not available" in down.stderr

    # Back again: the next run works, with no manual clean-up, and removes the leftover.
    private_daemon.start()
    assert private_daemon.containers() == cid
    again = subprocess.run(
        worker_cmd(*run_tests, "--test-cmd", "true"),
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "removed 1 container(s)" in again.stderr
    assert private_daemon.containers() == []
    assert not list(tmp.iterdir())
    # The shared daemon's default bridge is still there (a daemon started with --bridge=none
    # deletes docker0, which breaks every set-up phase that needs the network).
    assert Path("/sys/class/net/docker0").exists() == shared_bridge


# -- a full disk where --out lives ------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path):
    """A tiny tmpfs, filled to the last byte."""
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        (mount / "out").mkdir()
        with (mount / "filler").open("wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def test_a_full_disk_under_out_is_exit_3_in_one_line_and_the_repo_untouched(
    make_repo, docker_client, sandbox_image, full_disk, tmp_path
):
    repo = make_repo(BUGGY)
    before = tree_state(repo)
    out = full_disk / "out"
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = subprocess.Popen(
            fix_command(repo, out, base_url=server.base_url),
            env=worker_env(tmp_path / "tmp"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            _, err = proc.communicate(timeout=240)
        finally:
            proc.kill()
    assert proc.returncode == 3, err
    lines = [line for line in err.splitlines() if line.startswith("worker:")]
    assert lines == [
        f"worker: error: no space left on device: {out} (--out) is full; "
        "free some space or choose another"
    ], err
    assert "Traceback" not in err
    assert tree_state(repo) == before
    assert not list((tmp_path / "tmp").iterdir())
    assert not containers_of(docker_client, proc.pid)


# -- many runs at once ------------------------------------------------------------------------

RUNS_AT_ONCE = 8


def test_eight_fixes_at_once_on_one_repository(make_repo, docker_client, sandbox_image, tmp_path):
    repo = make_repo(BUGGY)
    before = tree_state(repo)
    tmp = tmp_path / "tmp"
    outs = [tmp_path / f"out{i}" for i in range(RUNS_AT_ONCE)]
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(
                ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})])
            )
            for _ in range(RUNS_AT_ONCE)
        ]
        procs = [
            subprocess.Popen(
                fix_command(repo, out, base_url=server.base_url),
                env=worker_env(tmp),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for server, out in zip(servers, outs, strict=True)
        ]
        for p in procs:
            stack.callback(p.kill)
        results = [p.communicate(timeout=600) for p in procs]
    for proc, (_, err), out, server in zip(procs, results, outs, servers, strict=True):
        assert proc.returncode == 0, err
        report = json.loads((out / "report.json").read_text())
        assert report["status"] == "fixed" and report["verification"]["passed"] is True
        assert report["out_dir"] == str(out)
        assert "+    return sum(values) / len(values)" in (out / "fix.patch").read_text()
        server.assert_all_used()
        assert not containers_of(docker_client, proc.pid)
    assert not list(tmp.iterdir())  # each run's scratch folders were its own, and are gone
    assert tree_state(repo) == before
