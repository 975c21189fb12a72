"""The set-up phase's network, with real parts: a real daemon, a real index in a container of the
test's own, a real "other host", the real tinyproxy sidecar, real pip.

Every container and network here is the test's own; no request leaves them (the refused host is
the test's own container, never a metadata address)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from policies.limits import Limits
from sandbox.container.docker_sandbox import CONTAINER_ENV, LABEL
from sandbox.container.owner import Owner
from sandbox.container.prune import sweep_leftovers
from sandbox.ecosystems.python.installer import PIP
from sandbox.errors import SandboxUsageError
from sandbox.setup.cache import (
    SetupFailed,
    SetupSpec,
    prepare_setup_image,
    setup_key,
)
from sandbox.setup.network import (
    SIDECAR_PIDS,
    ProxyFence,
    filter_text,
    network_error_in,
    plan_network,
    tinyproxy_config,
)
from sandbox.worktree.scratch import OWNER_FILE
from tests.pkg_index import (
    TEST_LABEL,
    bridge_network,
    make_package_index,  # noqa: F401 (a fixture, used by name)
    serve_folder,
)

LIMITS = Limits(memory_mb=1024, command_timeout_s=300)

# A PEP 517/660 build backend in the tree (no requirements, so no build tool from the index):
# the project's own build code, which is what set-up runs with the network on.
BACKEND = """
import base64, hashlib, os, urllib.request, zipfile

NAME, VERSION = "wkdemo_app", "0.1"
PROBE = None  # (name, ip) of a host the build tries to reach, or None

def _metadata():
    lines = ["Metadata-Version: 2.1", "Name: " + NAME, "Version: " + VERSION,
             "Requires-Dist: wkdemo-dep", "Provides-Extra: test",
             'Requires-Dist: wkdemo-testdep; extra == "test"']
    return "\\n".join(lines) + "\\n"

def _wheel(directory, files):
    info = NAME + "-" + VERSION + ".dist-info"
    files = dict(files)
    files[info + "/METADATA"] = _metadata()
    files[info + "/WHEEL"] = (
        "Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    record = ""
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record += "%s,sha256=%s,%d\\n" % (path, digest.decode(), len(text.encode()))
    files[info + "/RECORD"] = record + info + "/RECORD,,\\n"
    name = NAME + "-" + VERSION + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return name

def _try(url, proxies):
    handler = urllib.request.ProxyHandler(proxies)
    try:
        urllib.request.build_opener(handler).open(url, timeout=5).read()
        return "reached"
    except Exception as exc:
        return "failed:" + type(exc).__name__

def get_requires_for_build_wheel(config_settings=None):
    if PROBE:
        name, ip = PROBE
        results = [
            "proxied-name=" + _try("http://%s:8000/" % name, None),
            "proxied-ip=" + _try("http://%s:8000/" % ip, None),
            "direct-ip=" + _try("http://%s:8000/" % ip, {}),
        ]
        with open("/tmp/probe.txt", "w") as f:
            f.write("PROBE " + " ".join(results) + "\\n")
        urllib.request.urlopen("http://%s:8000/" % name, timeout=5).read()  # needs that host
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open("wkdemo_app/__init__.py") as f:
        return _wheel(wheel_directory, {"wkdemo_app/__init__.py": f.read()})

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"wkdemo_app.pth": os.path.abspath(".") + "\\n"})
"""
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["_build"]\n'
DISTS = {
    "wkdemo-dep": {"version": "1.0", "files": {"wkdemo_dep/__init__.py": "VALUE = 41\n"}},
    "wkdemo-testdep": {"version": "2.0", "files": {"wkdemo_testdep/__init__.py": "OK = True\n"}},
}
#: The build's own probe results close the output; nothing but the tree is installed, so pip
#: asks no index (no request leaves the test's networks, in `full` mode either).
PROBE_COMMAND = (
    "pip install --no-cache-dir --no-index --no-deps . ; rc=$?; cat /tmp/probe.txt; exit $rc"
)


def project(make_repo, probe: tuple[str, str] | None = None) -> Path:
    backend = BACKEND.replace("PROBE = None", f"PROBE = {probe!r}")
    return make_repo(
        {
            # A comment of its own: a set-up cached by an earlier run is never this one's.
            "pyproject.toml": f"# {os.urandom(8).hex()}\n{PYPROJECT}",
            "_build/backend.py": backend,
            "wkdemo_app/__init__.py": "from wkdemo_dep import VALUE\n",
        }
    )


@pytest.fixture
def egress(docker_client) -> Iterator[str]:
    """The test's own egress network (a user-defined bridge), standing in for the Internet."""
    with bridge_network(docker_client) as name:
        yield name


@pytest.fixture
def other_host(docker_client, sandbox_image, egress, tmp_path):
    """A host on the egress network that is not an index: what a build script must not reach."""
    root = tmp_path / "other"
    root.mkdir()
    (root / "index.html").write_text("marker\n")
    with serve_folder(docker_client, image=sandbox_image, network=egress, root=root) as served:
        yield served


@pytest.fixture
def built_images(docker_client) -> Iterator[list[str]]:
    """Set-up images a test made: removed at teardown."""
    made: list[str] = []
    yield made
    for image in made:
        try:
            docker_client.images.remove(image, force=True)
        except docker.errors.ImageNotFound:
            pass


def run_in_image(client: docker.DockerClient, image: str, command: str) -> str:
    out = client.containers.run(
        image, ["sh", "-c", command], network_mode="none", remove=True, stderr=True
    )
    return bytes(out).decode()


def our_leftovers(client: docker.DockerClient) -> list[str]:
    """Containers and networks of this process's set-ups still present."""
    mine = {"label": [LABEL, f"worker.pid={os.getpid()}", "worker.phase"]}
    containers = client.api.containers(all=True, filters=mine)
    phases = [c["Labels"].get("worker.phase") for c in containers]
    nets = client.api.networks(filters={"label": [LABEL, f"worker.pid={os.getpid()}"]})
    return [p for p in phases if p and p.startswith("setup")] + [n["Name"] for n in nets]


# -- (a) index mode installs a real project from a real index ---------------------------------


def test_index_mode_installs_a_project_and_its_dependencies_from_the_index(
    docker_client,
    sandbox_image,
    make_repo,
    make_package_index,  # noqa: F811 (the fixture imported above)
    egress,
    built_images,
):
    index = make_package_index(network=egress, dists=DISTS)
    repo = project(make_repo)
    environ = {"PIP_INDEX_URL": index.url, "PIP_TRUSTED_HOST": index.host}
    spec = SetupSpec(installer=PIP, command="pip install --no-cache-dir -e '.[test]'")
    lines: list[str] = []
    result = prepare_setup_image(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
        progress=lines.append, egress_network=egress, environ=environ,
    )  # fmt: skip
    built_images.append(result.image)
    assert not result.cached and result.network == "index"
    assert result.allowed_hosts == ("pypi.org", "files.pythonhosted.org", index.host)
    # The dependencies came from the index, through the proxy...
    got = " ".join(index.requests())
    assert "/simple/wkdemo-dep/" in got and "/simple/wkdemo-testdep/" in got
    assert "/packages/wkdemo_dep-1.0-py3-none-any.whl" in got
    # ...and are in the committed image (the project itself, editable, points at /workspace).
    out = run_in_image(
        docker_client,
        result.image,
        "python3 -c 'import wkdemo_dep, wkdemo_testdep; print(wkdemo_dep.VALUE)'; "
        "pip show wkdemo_app | head -2",
    )
    assert out.splitlines()[0] == "41" and "Name: wkdemo_app" in out
    assert not our_leftovers(docker_client)
    again = prepare_setup_image(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
        egress_network=egress, environ=environ,
    )  # fmt: skip
    assert again.cached and again.image == result.image
    print(f"\nset-up cold {result.duration_s:.1f}s, warm {again.duration_s:.2f}s")


# -- (b), (c) a build script aiming at another host ---------------------------------------------


def test_index_mode_refuses_any_other_host_and_a_direct_connection(
    docker_client, sandbox_image, make_repo, egress, other_host
):
    repo = project(make_repo, probe=(other_host.host, other_host.ip(egress)))
    spec = SetupSpec(installer=PIP, command=PROBE_COMMAND)
    with pytest.raises(SetupFailed) as caught:
        prepare_setup_image(
            docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
            egress_network=egress, environ={},
        )  # fmt: skip
    failed = caught.value
    # Not one request reached the other host: by its name or its address, proxied or direct.
    assert other_host.requests() == []
    assert (
        "PROBE proxied-name=failed:HTTPError proxied-ip=failed:HTTPError direct-ip=failed:URLError"
        in failed.tail
    )
    assert failed.setup_network == "index" and not failed.timed_out
    assert failed.network_error and other_host.host in failed.network_error
    assert "\n" not in str(failed) and other_host.host in str(failed)
    assert not our_leftovers(docker_client)


def test_full_mode_does_reach_the_other_host(
    docker_client, sandbox_image, make_repo, egress, other_host, built_images
):
    # The same build in `full` mode reaches it: the refusal above is the fence, not the test.
    repo = project(make_repo, probe=(other_host.host, other_host.ip(egress)))
    spec = SetupSpec(installer=PIP, command=PROBE_COMMAND, network="full")
    result = prepare_setup_image(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
        egress_network=egress, environ={},
    )  # fmt: skip
    built_images.append(result.image)
    assert result.network == "full" and result.allowed_hosts == ()
    assert len(other_host.requests()) == 4  # three probes and the build's own request


def test_none_mode_has_no_network_and_says_so(
    docker_client, sandbox_image, make_repo, egress, other_host
):
    repo = project(make_repo)
    spec = SetupSpec(
        installer=PIP,
        command='python3 -c "import urllib.request as u; '
        f"u.urlopen('http://{other_host.ip(egress)}:8000/', timeout=5)\"",
        network="none",
    )
    with pytest.raises(SetupFailed) as caught:
        prepare_setup_image(
            docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
            egress_network=egress, environ={},
        )  # fmt: skip
    assert caught.value.network_error and "unreachable" in caught.value.network_error
    assert other_host.requests() == []


def test_a_set_up_that_runs_out_of_time_is_named_a_timeout(docker_client, sandbox_image, make_repo):
    spec = SetupSpec(installer=PIP, command="echo started; sleep 60", network="none", timeout_s=2)
    with pytest.raises(SetupFailed) as caught:
        prepare_setup_image(
            docker_client, base_image=sandbox_image, spec=spec, repo=project(make_repo),
            limits=LIMITS, environ={},
        )  # fmt: skip
    assert caught.value.timed_out and "timed out after" in str(caught.value)


# -- (d) a secret for set-up only ---------------------------------------------------------------


def test_a_named_secret_reaches_set_up_and_nothing_else(
    docker_client, sandbox_image, make_repo, egress, built_images
):
    secret = "wkt-" + os.urandom(16).hex()
    environ = {"WORKER_TEST_TOKEN": secret}
    repo = project(make_repo)
    spec = SetupSpec(
        installer=PIP,
        command="python3 -c \"import hashlib, os; open('/opt/venv/token.sha256', 'w').write("
        "hashlib.sha256(os.environ['WORKER_TEST_TOKEN'].encode()).hexdigest())\"",
        env_names=("WORKER_TEST_TOKEN",),
    )
    lines: list[str] = []
    result = prepare_setup_image(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, limits=LIMITS,
        progress=lines.append, egress_network=egress, environ=environ,
    )  # fmt: skip
    built_images.append(result.image)
    # It reached the command...
    # (`echo`: a last line without its newline can be missing from a container's log.)
    digest = run_in_image(docker_client, result.image, "cat /opt/venv/token.sha256; echo")
    assert digest.strip() == hashlib.sha256(secret.encode()).hexdigest()
    # ...and nothing else: the image's configuration, labels, history and files, the progress
    # lines, any scratch folder left behind.
    attrs = docker_client.images.get(result.image).attrs
    base = docker_client.images.get(sandbox_image).attrs
    assert secret not in repr(attrs)
    assert set(attrs["Config"]["Env"]) - set(base["Config"]["Env"]) <= {
        f"{k}={v}" for k, v in CONTAINER_ENV.items()
    }
    assert not [e for e in attrs["Config"]["Env"] if e.startswith("WORKER_TEST_TOKEN")]
    history = docker_client.api.history(result.image)
    assert secret not in repr(history)
    assert not _image_holds(docker_client, result.image, secret.encode())
    assert not any(secret in line for line in lines)
    assert not _my_scratch_folders()
    # Its name is part of the cache key, its value is not.
    key = setup_key(docker_client, base_image=sandbox_image, spec=spec, repo=repo, environ=environ)
    other_value = {"WORKER_TEST_TOKEN": "something else"}
    assert key == setup_key(
        docker_client, base_image=sandbox_image, spec=spec, repo=repo, environ=other_value
    )
    unnamed = SetupSpec(installer=PIP, command=spec.command)
    assert key != setup_key(
        docker_client, base_image=sandbox_image, spec=unnamed, repo=repo, environ=environ
    )
    assert result.image.endswith(key)


def test_a_secret_printed_by_a_failing_set_up_is_not_repeated(
    docker_client, sandbox_image, make_repo
):
    secret = "wkt-" + os.urandom(16).hex()
    spec = SetupSpec(
        installer=PIP,
        command='echo "token is $WORKER_TEST_TOKEN"; exit 3',
        network="none",
        env_names=("WORKER_TEST_TOKEN",),
    )
    with pytest.raises(SetupFailed) as caught:
        prepare_setup_image(
            docker_client, base_image=sandbox_image, spec=spec, repo=project(make_repo),
            limits=LIMITS, environ={"WORKER_TEST_TOKEN": secret},
        )  # fmt: skip
    assert "token is ***" in caught.value.tail
    assert secret not in caught.value.tail and secret not in str(caught.value)


def test_a_named_variable_missing_from_the_environment_is_a_usage_error(
    docker_client, sandbox_image, make_repo
):
    spec = SetupSpec(
        installer=PIP, command="true", network="none", env_names=("WORKER_TEST_ABSENT",)
    )
    with pytest.raises(SandboxUsageError, match="WORKER_TEST_ABSENT"):
        prepare_setup_image(
            docker_client, base_image=sandbox_image, spec=spec, repo=project(make_repo),
            limits=LIMITS, environ={},
        )  # fmt: skip


# -- the sidecar itself -------------------------------------------------------------------------


def test_the_proxy_sidecar_is_hardened_serves_its_network_only_and_goes_with_it(
    docker_client, sandbox_image, egress, other_host, tmp_path
):
    # The other host is an allowed index here: still, a client on the egress network (the
    # other host itself) is refused by the sidecar, which serves the internal network alone.
    environ = {"PIP_INDEX_URL": f"http://{other_host.host}:8000/simple/"}
    plan = plan_network("index", installer=PIP, env_names=(), environ=environ)
    with ProxyFence(
        client=docker_client, image=sandbox_image, plan=plan, egress_network=egress,
        config_dir=tmp_path / "proxy",
    ) as fence:  # fmt: skip
        sidecar = docker_client.containers.get(fence.sidecar)
        host = sidecar.attrs["HostConfig"]
        assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"]
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["Memory"] == 64 * 1024 * 1024 and host["PidsLimit"] == SIDECAR_PIDS
        assert sidecar.attrs["Config"]["User"] not in ("", "0", "0:0", "root")
        assert set(sidecar.attrs["NetworkSettings"]["Networks"]) == {fence.network, egress}
        assert docker_client.networks.get(fence.network).attrs["Internal"]
        assert sidecar.attrs["Config"]["Labels"][LABEL] == "1"
        request = (
            f"import socket; s = socket.create_connection(('{fence.sidecar}', 8888), 5); "
            f"s.sendall(b'GET http://{other_host.host}:8000/ HTTP/1.0\\r\\n\\r\\n'); "
            "print(s.recv(100).split(b'\\r\\n')[0].decode())"
        )
        answer = other_host.container.exec_run(["python3", "-c", request])
        assert answer.output.decode().strip().endswith(" 403 Access denied")
        assert other_host.requests() == []
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(fence.sidecar)
    with pytest.raises(docker.errors.NotFound):
        docker_client.networks.get(fence.network)


# A registry host that holds every connection it is given (never accepting: the kernel's
# backlog completes the handshake), as a registry's TLS endpoint holds a tunnel.
HOLDER = (
    "import socket, time; s = socket.socket(); s.bind(('', 8000)); s.listen(1024); time.sleep(600)"
)
# npm 8's proxy agent (https-proxy-agent 5) ignores maxsockets: `npm ci` of a large lockfile
# opens a CONNECT for every tarball at once, and hangs on one the proxy closes unanswered.
# 100 clients at once, each holding its tunnel for a second: each must be answered.
BURST = """
import socket, sys, threading, time
proxy, target, answers = sys.argv[1], sys.argv[2], []
def one():
    try:
        s = socket.create_connection((proxy, 8888), 30)
        s.sendall(f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
        answers.append(s.recv(100).split(b"\\r\\n")[0].decode() or "closed unanswered")
        time.sleep(1)
        s.close()
    except OSError as exc:
        answers.append(type(exc).__name__)
threads = [threading.Thread(target=one) for _ in range(100)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(sorted(set(answers)), answers.count("HTTP/1.0 200 Connection established"))
"""


def test_a_burst_of_connects_is_queued_by_the_sidecar_not_dropped(
    docker_client, sandbox_image, egress, tmp_path
):
    holder = docker_client.containers.run(
        sandbox_image, ["python3", "-c", HOLDER], detach=True, network=egress,
        name=f"holder-{os.urandom(4).hex()}", labels={TEST_LABEL: "1"}, user="1000:1000",
    )  # fmt: skip
    try:
        environ = {"PIP_INDEX_URL": f"http://{holder.name}:8000/simple/"}
        plan = plan_network("index", installer=PIP, env_names=(), environ=environ)
        with ProxyFence(
            client=docker_client, image=sandbox_image, plan=plan, egress_network=egress,
            config_dir=tmp_path / "proxy",
        ) as fence:  # fmt: skip
            out = docker_client.containers.run(
                sandbox_image, ["python3", "-c", BURST, fence.sidecar, f"{holder.name}:8000"],
                network=fence.network, remove=True, user="1000:1000",
            )  # fmt: skip
    finally:
        holder.remove(force=True)
    assert bytes(out).decode().split() == [
        "['HTTP/1.0",
        "200",
        "Connection",
        "established']",
        "100",
    ]


def test_the_users_own_proxy_becomes_the_sidecars_upstream(
    docker_client,
    sandbox_image,
    make_repo,
    make_package_index,  # noqa: F811 (the fixture imported above)
    egress,
    built_images,
    tmp_path,
):
    # The index is on a network only the user's proxy reaches: set-up succeeds only through it.
    with bridge_network(docker_client) as behind:
        index = make_package_index(network=behind, dists=DISTS)
        conf = tmp_path / "corp"
        conf.mkdir(mode=0o755)
        (conf / "tinyproxy.conf").write_text("Port 3128\nLogLevel Connect\nMaxClients 16\n")
        (conf / "tinyproxy.conf").chmod(0o644)
        corp = docker_client.containers.run(
            sandbox_image, ["tinyproxy", "-d", "-c", "/etc/corp/tinyproxy.conf"], detach=True,
            name=f"corp-proxy-{os.urandom(4).hex()}", network=behind, read_only=True,
            volumes={str(conf): {"bind": "/etc/corp", "mode": "ro"}}, user="1000:1000",
        )  # fmt: skip
        try:
            docker_client.networks.get(egress).connect(corp)
            environ = {
                "PIP_INDEX_URL": index.url,
                "PIP_TRUSTED_HOST": index.host,
                "HTTP_PROXY": f"http://{corp.name}:3128",
            }
            result = prepare_setup_image(
                docker_client, base_image=sandbox_image,
                spec=SetupSpec(installer=PIP, command="pip install --no-cache-dir '.[test]'"),
                repo=project(make_repo), limits=LIMITS, egress_network=egress, environ=environ,
            )  # fmt: skip
            built_images.append(result.image)
            corp_log = bytes(corp.logs()).decode()
            assert f"GET http://{index.host}:8000/simple/wkdemo-dep/" in corp_log
            assert "/simple/wkdemo-testdep/" in " ".join(index.requests())
        finally:
            corp.remove(force=True)


def test_a_killed_workers_proxy_and_network_are_swept(docker_client, sandbox_image, tmp_path):
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from sandbox.container.client import connect\n"
        "from sandbox.setup.network import ProxyFence, plan_network\n"
        "from sandbox.ecosystems.python.installer import PIP\n"
        "plan = plan_network('index', env_names=(), environ={}, installer=PIP)\n"
        f"with ProxyFence(client=connect(), image={sandbox_image!r}, plan=plan,\n"
        f"        egress_network='bridge', config_dir=Path({str(tmp_path / 'proxy')!r})) as f:\n"
        "    print(f.sidecar, f.network, flush=True)\n"
        "    time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        sidecar, network = proc.stdout.readline().split()
    finally:
        proc.kill()  # SIGKILL: no finally of its runs
        proc.wait()
    assert docker_client.containers.get(sidecar) and docker_client.networks.get(network)
    sweep_leftovers(docker_client)
    # Gone, whoever swept them: any worker starting meanwhile sweeps a dead worker's leftovers
    # too (seen: a concurrent eval's run removed the network between our check and our sweep).
    with pytest.raises(docker.errors.NotFound):
        docker_client.containers.get(sidecar)
    with pytest.raises(docker.errors.NotFound):
        docker_client.networks.get(network)


def test_a_live_workers_set_up_network_is_kept(docker_client):
    suffix = os.urandom(4).hex()
    alive = docker_client.networks.create(
        f"worker-setup-net-test-{suffix}",
        internal=True,
        labels={LABEL: "1", "worker.pid": str(os.getpid())},
    )
    try:
        swept = sweep_leftovers(docker_client)
        assert alive.name not in swept.networks
        assert docker_client.networks.get(alive.id)
    finally:
        alive.remove()


# -- what is pure -------------------------------------------------------------------------------


def test_the_allow_list_holds_pypi_and_the_users_index_hosts_only():
    environ = {
        "PIP_INDEX_URL": "https://user:tok@pkgs.example.com:8443/simple/",
        "PIP_EXTRA_INDEX_URL": "https://extra.example.org/simple http://plain.example.net/",
        "UV_INDEX": "torch=https://download.pytorch.org/whl/cpu",
        "HTTPS_PROXY": "http://corp:pw@proxy.corp:3128",
        "NO_PROXY": ".example.org,localhost",
        "OTHER": "x",
    }
    plan = plan_network(
        "index", installer=PIP, env_names=("TOKEN",), environ={**environ, "TOKEN": "t"}
    )
    assert plan.allowed_hosts == (
        "pypi.org",
        "files.pythonhosted.org",
        "pkgs.example.com",
        "extra.example.org",
        "plain.example.net",
        "download.pytorch.org",
    )
    assert plan.connect_ports == (443, 80, 8443)
    assert plan.upstream == "corp:pw@proxy.corp:3128"
    assert plan.direct_hosts == ("extra.example.org",)
    assert plan.names == tuple(
        sorted(
            ["PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX", "HTTPS_PROXY", "NO_PROXY", "TOKEN"]
        )
    )
    env = plan.command_env("http://worker-proxy-x:8888")
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://worker-proxy-x:8888"
    assert "NO_PROXY" not in env and env["TOKEN"] == "t" and "OTHER" not in env
    config = tinyproxy_config(plan, allow_subnet="172.30.0.0/16")
    for line in (
        "Allow 172.30.0.0/16",
        "FilterDefaultDeny Yes",
        "FilterURLs Off",
        "FilterType ere",
        "ConnectPort 8443",
        "Upstream http corp:pw@proxy.corp:3128",
        'Upstream none "extra.example.org"',
    ):
        assert line in config.splitlines()
    assert filter_text(plan.allowed_hosts).splitlines()[0] == r"^pypi\.org$"
    # A proxy on the host's loopback is out of every container's reach: said, and left out.
    local = plan_network(
        "index", installer=PIP, env_names=(), environ={"HTTP_PROXY": "http://127.0.0.1:3128"}
    )
    assert local.upstream is None and "loopback" in local.notes[0]
    # In full mode the user's proxies pass as they are.
    full = plan_network("full", installer=PIP, env_names=(), environ=environ).command_env(None)
    assert full["HTTPS_PROXY"] == environ["HTTPS_PROXY"] and full["NO_PROXY"] == environ["NO_PROXY"]


@pytest.mark.parametrize(
    "environ",
    [
        {"PIP_INDEX_URL": "http://[::1]:8080/simple"},
        {"PIP_INDEX_URL": "http://bad^host/simple"},
        {"HTTPS_PROXY": "socks5://proxy:1080"},
    ],
)
def test_what_the_proxy_cannot_fence_is_refused_in_words(environ):
    with pytest.raises(SandboxUsageError, match="--setup-network full|index URL"):
        plan_network("index", installer=PIP, env_names=(), environ=environ)


def test_network_failures_are_named():
    pip_out = (
        "Looking in indexes: http://x/simple\n"
        "WARNING: Retrying (Retry(total=4)) after connection broken by 'ProxyError('Cannot "
        "connect to proxy.', OSError('Tunnel connection failed: 403 Filtered'))': /simple/a/\n"
        "ERROR: Could not find a version that satisfies the requirement a\n"
    )
    assert network_error_in(pip_out).startswith("refused by the set-up proxy")
    assert network_error_in("Temporary failure in name resolution").startswith("a host name")
    assert network_error_in("all good\nERROR: tests failed") is None
    failed = SetupFailed(
        command="pip install -e .\n  && more", tail="x\nERROR: boom\n", network_error=None,
        setup_network="index", how="failed (exit 1 in 2.00s)",
    )  # fmt: skip
    assert str(failed) == (
        "set-up command failed (exit 1 in 2.00s), network index: `pip install -e . && more`: "
        "ERROR: boom"
    )


def test_a_spec_checks_its_names_and_mode():
    with pytest.raises(SandboxUsageError):
        SetupSpec(installer=PIP, command="true", env_names=("NOT A NAME",))
    with pytest.raises(SandboxUsageError):
        SetupSpec(installer=PIP, command="true", network="bridge")  # type: ignore[arg-type]


def _my_scratch_folders() -> list[Path]:
    """This process's set-up scratch folders (other workers on the machine have their own)."""
    found = Path(tempfile.gettempdir()).glob("worker-setup-*")
    return [p for p in found if (o := Owner.read(p / OWNER_FILE)) and o.pid == os.getpid()]


def _image_holds(client: docker.DockerClient, image: str, needle: bytes) -> bool:
    """True when any file of `image` contains `needle` (the whole filesystem, exported)."""
    container = client.containers.create(image, network_disabled=True)
    try:
        tail = b""
        for chunk in container.export(chunk_size=1 << 20):
            if needle in tail + chunk:
                return True
            tail = chunk[-len(needle) :]
        return False
    finally:
        container.remove(force=True)
