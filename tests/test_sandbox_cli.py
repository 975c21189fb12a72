"""`worker sandbox ...` as a user runs it: build, run-tests, prune, set-up cache, interrupts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sandbox.container.docker_sandbox import LABEL
from sandbox.container.prune import prune
from sandbox.ecosystems.python.installer import PIP
from sandbox.setup.cache import SETUP_REPOSITORY, SetupSpec, prepare_setup_image, setup_key
from tests.conftest import worker_containers

pytestmark = pytest.mark.docker

FAILING = {
    "conftest.py": "",
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    ),
}


def worker(*args: str, env: dict[str, str] | None = None, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "-m", "worker.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def test_build_is_a_no_op_the_second_time(docker_client, sandbox_image):
    # How long it takes is a benchmark's business (bench/sandbox.py), not a test's.
    before = docker_client.images.get(sandbox_image)
    proc = worker("sandbox", "build")
    assert proc.returncode == 0, proc.stderr
    assert f"image {sandbox_image} is up to date ({before.short_id})" in proc.stderr
    assert "building" not in proc.stderr
    assert docker_client.images.get(sandbox_image).id == before.id


def test_run_tests_prints_failures_and_exits_1(make_repo, sandbox_image):
    repo = make_repo(FAILING)
    proc = worker("sandbox", "run-tests", "--repo", str(repo))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("1 passed, 1 failed, 0 errors, 0 skipped")
    assert "FAILURE tests/test_calc.py::test_add" in proc.stdout
    assert "assert -1 == 5" in proc.stdout


def test_run_tests_json_and_exit_0_when_passing(make_repo, sandbox_image, tmp_path):
    repo = make_repo({**FAILING, "calc.py": "def add(a, b):\n    return a + b\n"})
    out = tmp_path / "out"
    proc = worker("sandbox", "run-tests", "--repo", str(repo), "--json", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["passed"] is True and summary["counts"]["passed"] == 2
    assert Path(summary["log"]).is_file() and Path(summary["log"]).is_relative_to(out)


def test_run_tests_with_a_custom_command_without_junit(make_repo, sandbox_image):
    repo = make_repo({"check.sh": "exit 3\n"})
    proc = worker("sandbox", "run-tests", "--repo", str(repo), "--test-cmd", "sh check.sh")
    assert proc.returncode == 1
    assert "exit 3" in proc.stdout and "no JUnit report" in proc.stdout


def test_missing_daemon_is_exit_3_with_one_line(make_repo):
    repo = make_repo(FAILING)
    proc = worker(
        "sandbox",
        "run-tests",
        "--repo",
        str(repo),
        env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    )
    assert proc.returncode == 3
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Docker is not available" in lines[0]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_during_tests_removes_the_container(
    make_repo, sandbox_image, docker_client, signum
):
    repo = make_repo(
        {
            "conftest.py": "",
            "tests/test_slow.py": "import time\n\ndef test_slow():\n    time.sleep(120)\n",
        }
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--repo", str(repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    mine: list = []
    while not mine and time.monotonic() < deadline:
        mine = [
            c
            for c in worker_containers(docker_client)
            if c.labels.get("worker.pid") == str(proc.pid)
        ]
        time.sleep(0.2)
    assert mine, "the sandbox container should exist while the tests run"
    time.sleep(1.0)
    proc.send_signal(signum)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert not docker_client.containers.list(all=True, filters={"id": mine[0].id})


def test_prune_removes_leftovers_of_dead_workers_only(docker_client, sandbox_image):
    dead = docker_client.containers.run(
        sandbox_image,
        ["sleep", "600"],
        detach=True,
        network_mode="none",
        labels={LABEL: "1", "worker.pid": "999999"},
    )
    alive = docker_client.containers.run(
        sandbox_image,
        ["sleep", "600"],
        detach=True,
        network_mode="none",
        labels={LABEL: "1", "worker.pid": str(os.getpid())},
    )
    try:
        removed = prune(docker_client)
        assert dead.name in removed and alive.name not in removed
        assert docker_client.containers.list(all=True, filters={"id": alive.id})
        # Asked for by its process id, a running worker's container goes too; other workers on
        # this daemon keep theirs (`--all` would take every one: not run here, the suite may
        # share the daemon with live workers).
        other = docker_client.containers.run(
            sandbox_image, ["sleep", "600"], detach=True, network_mode="none",
            labels={LABEL: "1", "worker.pid": str(os.getppid())},
        )  # fmt: skip
        try:
            proc = worker("sandbox", "prune", "--pid", str(os.getpid()))
            assert proc.returncode == 0 and alive.name in proc.stdout
            assert not docker_client.containers.list(all=True, filters={"id": alive.id})
            assert docker_client.containers.list(all=True, filters={"id": other.id})
        finally:
            other.remove(force=True)
    finally:
        for c in (dead, alive):
            try:
                c.remove(force=True)
            except Exception:  # noqa: BLE001 - already gone is the expected case
                pass


def test_setup_is_cached_and_its_result_is_in_the_next_sandbox(
    make_repo, docker_client, sandbox_image, open_sandbox, tmp_path
):
    from policies.limits import Limits

    repo = make_repo({"requirements.txt": "# none\n", "conftest.py": ""})
    command = "mkdir -p /opt/venv/lib/marker && echo installed > /opt/venv/lib/marker/ok"
    spec = SetupSpec(installer=PIP, command=command)
    key = setup_key(docker_client, base_image=sandbox_image, spec=spec, repo=repo)
    try:
        docker_client.images.remove(f"{SETUP_REPOSITORY}:{key}", force=True)
    except Exception:  # noqa: BLE001 - not cached yet is fine
        pass
    limits = Limits(memory_mb=512)
    first = prepare_setup_image(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=limits
    )
    image = first.image
    assert not first.cached
    again = prepare_setup_image(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=limits
    )
    assert again.cached and again.image == image
    # A change to a dependency file means a new key.
    (repo / "requirements.txt").write_text("requests\n")
    changed = setup_key(docker_client, base_image=sandbox_image, spec=spec, repo=repo)
    assert changed != key
    # So does one the inferred set-up reads below the root, or tox.ini's deps.
    for rel in ("requirements/test.txt", "tox.ini"):
        (repo / rel).parent.mkdir(exist_ok=True)
        (repo / rel).write_text("[testenv]\ndeps = pytest-mock\n")
        now = setup_key(docker_client, base_image=sandbox_image, spec=spec, repo=repo)
        assert now != changed, rel
        changed = now
    # The agent's sandbox, started from the cached image: the set-up result is there, the
    # network is not.
    from sandbox.session import BoxSpec, open_session

    spec = BoxSpec(client=docker_client, image=image, limits=limits)
    with open_session(repo, spec=spec, run_dir=tmp_path / "run") as session:
        r = session.box.run("cat /opt/venv/lib/marker/ok; ls /sys/class/net")
        assert r.output.split() == ["installed", "lo"]
    # This process's: other workers on the daemon may be setting up meanwhile.
    mine = {"worker.phase": "setup", "worker.pid": str(os.getpid())}
    assert not [c for c in worker_containers(docker_client) if mine.items() <= c.labels.items()]
    docker_client.images.remove(image, force=True)


def test_setup_reaches_pypi_then_the_sandbox_is_offline(make_repo, sandbox_image):
    repo = make_repo(
        {
            "conftest.py": "",
            "requirements.txt": "six==1.16.0\n",
            "tests/test_six.py": "import six\n\ndef test_six():\n    assert six.PY3\n",
        }
    )
    proc = worker(
        "sandbox",
        "run-tests",
        "--repo",
        str(repo),
        "--setup",
        "pip install -q -r requirements.txt",
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("1 passed")


def test_failing_setup_is_exit_6_the_projects_environment(make_repo, sandbox_image):
    repo = make_repo(FAILING)
    proc = worker(
        "sandbox", "run-tests", "--repo", str(repo), "--setup", "echo no-such-dep; exit 7"
    )
    assert proc.returncode == 6
    last = proc.stderr.strip().splitlines()[-1]
    assert "set-up command failed (exit 7" in last and "no-such-dep" in last


def test_local_backend_is_explicit_and_loudly_weaker(make_repo):
    repo = make_repo(FAILING)
    proc = worker("sandbox", "run-tests", "--repo", str(repo), "--backend", "local")
    assert proc.returncode == 1, proc.stderr
    assert "no network or filesystem isolation" in proc.stderr
    assert "FAILURE tests/test_calc.py::test_add" in proc.stdout


def test_hardening_is_overridable_by_policy_and_says_so(make_repo, sandbox_image):
    probe = (
        "import os\n\n"
        "def test_probe():\n"
        "    nets = sorted(os.listdir('/sys/class/net'))\n"
        "    assert False, f'NET {nets} UID {os.getuid()}'\n"
    )
    repo = make_repo(
        {
            "conftest.py": "",
            "tests/test_probe.py": probe,
            "worker.toml": "[sandbox]\nnetwork = true\nrun_as_root = true\n",
        }
    )
    proc = worker("sandbox", "run-tests", "--repo", str(repo))
    assert "sandbox hardening turned off by configuration: network, run_as_root" in proc.stderr
    assert "'eth0'" in proc.stdout and "UID 0" in proc.stdout
    hardened = make_repo({"conftest.py": "", "tests/test_probe.py": probe})
    proc = worker("sandbox", "run-tests", "--repo", str(hardened))
    assert "NET ['lo'] UID 1000" in proc.stdout and "turned off" not in proc.stderr


def test_build_on_a_missing_base_is_exit_3_with_one_line(docker_client):
    proc = worker("sandbox", "build", "--image", "worker-never:x", "--base", "no-such-base:0")
    assert proc.returncode == 3
    assert proc.stderr.strip().splitlines()[-1].startswith("worker: error: base image no-such")
