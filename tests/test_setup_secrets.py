"""A set-up that writes a set-up-only value down is refused before anything of it is kept: real
daemon, real set-up containers (no network: nothing here needs one), the real command line.

The measured case of issue 35: `pip config --site set global.index-url https://u:$TOKEN@...`
wrote the token into /opt/venv/pip.conf, committed into the image every later sandbox starts
from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import docker
import docker.errors
import pytest

from policies.limits import Limits
from sandbox.ecosystems.python.installer import PIP
from sandbox.setup.cache import SetupSpec, SetupWroteSecret, prepare_setup_image, setup_key

pytestmark = pytest.mark.docker

LIMITS = Limits(memory_mb=1024, command_timeout_s=120)
PROJECT = {
    "calc.py": "def one():\n    return 1\n",
    "tests/test_calc.py": "def test_x():\n    pass\n",
}
#: Characters that URL quoting and base64 change: each form differs from the value.
SECRET = "wk/" + os.urandom(8).hex() + "+p@ss!"
PIP_CONFIG = (
    'pip config --site set global.index-url "https://u:$WORKER_TEST_TOKEN@example.invalid/simple"'
)
QUOTED = (
    'python3 -c \'import os, urllib.parse as u; open("/opt/venv/quoted.conf", "w").write('
    '"index-url = https://u:" + u.quote(os.environ["WORKER_TEST_TOKEN"], safe="") + "@h/")\''
)
BASE64 = "printf '%s' \"$WORKER_TEST_TOKEN\" | base64 -w0 > /opt/venv/auth.b64"
IN_TREE = "printf 'token=%s\\n' \"$WORKER_TEST_TOKEN\" > written_by_setup.txt"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.mark.parametrize(
    ("command", "where"),
    [
        (PIP_CONFIG, "/opt/venv/pip.conf"),
        (QUOTED, "/opt/venv/quoted.conf"),
        (BASE64, "/opt/venv/auth.b64"),
        (IN_TREE, "written_by_setup.txt (in the repository's tree)"),
    ],
    ids=["pip-config", "url-quoted", "base64", "tree-file"],
)
def test_a_set_up_that_writes_the_value_down_keeps_nothing(
    docker_client: docker.DockerClient,
    sandbox_image: str,
    make_repo,
    home: Path,
    command: str,
    where: str,
) -> None:
    repo = make_repo(PROJECT)
    spec = SetupSpec(
        installer=PIP, command=command, network="none", env_names=("WORKER_TEST_TOKEN",)
    )
    environ = {"WORKER_TEST_TOKEN": SECRET}
    with pytest.raises(SetupWroteSecret) as caught:
        prepare_setup_image(
            docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
            environ=environ,
        )  # fmt: skip
    said = str(caught.value)
    assert f"set-up wrote the value of WORKER_TEST_TOKEN into {where}" in said
    assert SECRET not in said and "PIP_INDEX_URL" in said  # the way out is named
    key = setup_key(docker_client, base_image=sandbox_image, spec=spec, repo=repo, environ=environ)
    with pytest.raises(docker.errors.ImageNotFound):
        docker_client.images.get(f"worker-setup:{key}")
    assert not (home / "setup" / key / "tree").exists()  # no tree files kept either
    log = home / "setup" / key / "setup.log"
    assert not log.exists() or SECRET not in log.read_text()


def test_the_measured_case_from_the_command_line_exits_6_and_tags_no_image(
    docker_client: docker.DockerClient, sandbox_image: str, make_repo, home: Path
) -> None:
    repo = make_repo(PROJECT)
    command = PIP_CONFIG + " # " + os.urandom(4).hex()  # its own key: no earlier run's image
    before = {i.id for i in docker_client.images.list(name="worker-setup")}
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--repo", str(repo),
         "--setup-network", "none", "--setup-env", "WORKER_TEST_TOKEN", "--setup", command],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "WORKER_TEST_TOKEN": SECRET, "WORKER_HOME": str(home)},
    )  # fmt: skip
    assert proc.returncode == 6, proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("worker: error: set-up wrote the value of WORKER_TEST_TOKEN into ")
    assert "/opt/venv/pip.conf" in last
    assert SECRET not in proc.stdout + proc.stderr
    made = [
        i for i in docker_client.images.list(name="worker-setup")
        if i.id not in before and i.labels.get("worker.setup") == command[:200]
    ]  # fmt: skip
    assert made == []


def test_a_set_up_that_reads_the_value_without_writing_it_is_kept(
    docker_client: docker.DockerClient, sandbox_image: str, make_repo, home: Path
) -> None:
    repo = make_repo(PROJECT)
    command = 'test -n "$WORKER_TEST_TOKEN" && echo "$WORKER_TEST_TOKEN" | wc -c > /opt/venv/n'
    spec = SetupSpec(
        installer=PIP, command=command, network="none", env_names=("WORKER_TEST_TOKEN",)
    )
    done = prepare_setup_image(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
        environ={"WORKER_TEST_TOKEN": SECRET},
    )  # fmt: skip
    try:
        assert not done.cached
        docker_client.images.get(done.image)
    finally:
        docker_client.images.remove(done.image, force=True)
