"""A Node project's set-up, end to end with real parts: the set-up inferred from its files, run
in a container of the real Node image (sandbox/ecosystems/node/image.py) behind the real fence
(tinyproxy), against a real registry (verdaccio, offline, on the test's own network:
tests/npm_registry.py), committed as an image; the tests then run from that image in a hardened
sandbox with no network.

Every container and network here is the test's own; no request leaves them."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import docker
import docker.errors
import pytest

from policies.limits import Limits
from sandbox.ecosystems.node.setup_infer import infer_node_setup
from sandbox.session import BoxSpec, open_session
from sandbox.setup.cache import SetupFailed, SetupResult, SetupSpec
from sandbox.setup.tool_layer import layer_tag, prepare_setup
from tests.npm_registry import (  # noqa: F401 (fixtures, used by name)
    NpmRegistry,
    make_npm_registry,
    stored_version,
)
from tests.pkg_index import bridge_network, serve_folder
from worker.cli.exit_codes import EXIT_PROJECT_ENVIRONMENT, exit_code_for

pytestmark = pytest.mark.docker

LIMITS = Limits(memory_mb=1024, command_timeout_s=300)
TEST_JS = (
    "const isNumber = require('is-number');\n"
    "if (!isNumber(5) || isNumber('x')) process.exit(1);\n"
    "console.log('is-number works');\n"
)
IS_NUMBER_SHA1 = "7535345b896734d5f80c4d06c50955527a14f12b"
IS_NUMBER_SHA512 = (
    "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZU"
    "BlbGXYxxng=="
)


def package(**fields: object) -> str:
    """A package.json; a description of its own, so a set-up cached by an earlier run is never
    this one's."""
    body = {"name": "wk-node-app", "version": "1.0.0", "description": os.urandom(8).hex()}
    return json.dumps({**body, "scripts": {"test": "node test.js"}, **fields}, indent=2)


@pytest.fixture
def egress(docker_client) -> Iterator[str]:
    """The test's own egress network (a user-defined bridge), standing in for the Internet."""
    with bridge_network(docker_client) as name:
        yield name


@pytest.fixture
def registry(make_npm_registry, egress) -> NpmRegistry:  # noqa: F811 (the fixture imported)
    return make_npm_registry(network=egress)


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


SetUp = Callable[..., SetupResult]


@pytest.fixture
def set_up(docker_client, node_image, sandbox_image, registry, egress, built_images) -> SetUp:  # noqa: F811
    """Infer the repository's set-up and prepare its image, as `worker fix` does: corepack's
    package manager from its layer (sandbox/ecosystems/node/corepack_tool.py), this test's own
    (its key holds the test registry's host), removed at teardown after the set-ups on it."""

    def run(
        repo: Path,
        *,
        progress: Callable[[str], None] = print,
        env_names: tuple[str, ...] = (),
        environ: Mapping[str, str] = {},
    ) -> SetupResult:
        environ = {**registry.environ(), **environ}
        plan = infer_node_setup(repo, {"HOME": "/nonexistent", **environ})
        assert plan.command is not None, plan.describe()
        progress(plan.describe())
        spec = SetupSpec(
            command=plan.command, installer=plan.installer, env_names=env_names, tool=plan.tool
        )
        result = prepare_setup(
            docker_client, base_image=node_image, spec=spec, repo=repo, limits=LIMITS,
            progress=progress, egress_network=egress, environ=environ,
            proxy_image=sandbox_image,
        )  # fmt: skip
        built_images.insert(0, result.image)
        if plan.tool is not None:
            built_images.append(
                layer_tag(docker_client, base_image=node_image, spec=spec, environ=environ)
            )
        return result

    return run


def run_tests(client, result: SetupResult, repo: Path, run_dir: Path, command: str) -> str:
    """`command` in a hardened sandbox (no network, read-only root) of the set-up image, on a
    fresh copy of the tree; its output. Fails when the command does, or the copy's diff is not
    empty (the link to node_modules is the environment's, never the patch's)."""
    spec = BoxSpec(client=client, image=result.image, limits=LIMITS, overlay=result.tree)
    with open_session(repo, spec=spec, run_dir=run_dir) as session:
        ran = session.box.run(command, timeout_s=120)
        assert ran.ok, ran.output
        assert session.workspace.git("status", "--porcelain").decode() == ""
        return ran.output


# -- npm ci through the fence, then warm ------------------------------------------------------


def test_a_package_lock_is_installed_with_npm_ci_through_the_fence_then_warm(
    docker_client, make_repo, registry, set_up, tmp_path
):
    manifest = package(dependencies={"is-number": "7.0.0"})
    lock = registry.lock(json.loads(manifest))
    repo = make_repo({"package.json": manifest, "package-lock.json": lock, "test.js": TEST_JS})
    lines: list[str] = []
    result = set_up(repo, progress=lines.append)
    assert lines[0] == "inferred set-up: npm ci --no-audit --no-fund (from package-lock.json)"
    assert not result.cached and result.network == "index"
    assert result.allowed_hosts == ("registry.npmjs.org", registry.host)
    # The tarball came from the registry, through the proxy, though the lockfile names
    # registry.npmjs.org (npm sends it to the registry it is configured with)...
    assert registry.saw("GET /is-number/-/is-number-7.0.0.tgz"), registry.requests()
    assert "set-up: node_modules kept in the image, linked from the tree" in lines
    # ...and the tests find it in a sandbox of the committed image, with no network.
    out = run_tests(docker_client, result, repo, tmp_path / "run1", "npm test")
    assert "is-number works" in out
    asked = len(registry.requests())
    # Warm, on a machine that has the image but not the host's copy of its tree links (another
    # worker's cache): the link is made again from the image's label.
    assert result.tree is not None and (result.tree / "node_modules").is_symlink()
    shutil.rmtree(result.tree)
    again = set_up(repo, progress=lines.append)
    assert again.cached and again.image == result.image
    assert len(registry.requests()) == asked  # warm: nothing installed, nothing asked
    assert f"set-up cached: {result.image}" in lines
    assert again.tree is not None and os.readlink(again.tree / "node_modules") == (
        "/opt/worker-deps/tree/node_modules"
    )
    out = run_tests(docker_client, again, repo, tmp_path / "run2", "npm test")
    assert "is-number works" in out


def test_an_npm_workspace_keeps_its_link_to_its_package(
    docker_client, make_repo, registry, set_up, tmp_path
):
    # npm links a workspace package into node_modules (`node_modules/wk-lib -> ../packages/lib`):
    # moved into the image, the link still names the package in the tree.
    lib = json.dumps({"name": "wk-lib", "version": "1.0.0", "main": "index.js"})
    manifest = package(workspaces=["packages/*"], dependencies={"is-number": "7.0.0"})
    files = {"package.json": manifest, "packages/lib/package.json": lib}
    files["packages/lib/index.js"] = "module.exports = require('is-number')(7) ? 'lib' : 'no';\n"
    files["test.js"] = "console.log('workspace:', require('wk-lib'));\n"
    repo = make_repo(files)
    result = set_up(repo)
    out = run_tests(docker_client, result, repo, tmp_path / "run", "npm test")
    assert "workspace: lib" in out


# -- what the registry lacks: one line, exit 6 ---------------------------------------------------


def test_a_lockfile_naming_a_package_the_registry_lacks_fails_in_one_line(make_repo, set_up):
    manifest = package(dependencies={"wk-nope-pkg": "1.0.0"})
    lock = {
        "name": "wk-node-app",
        "version": "1.0.0",
        "lockfileVersion": 3,
        "requires": True,
        "packages": {
            "": {
                "name": "wk-node-app",
                "version": "1.0.0",
                "dependencies": {"wk-nope-pkg": "1.0.0"},
            },
            "node_modules/wk-nope-pkg": {
                "version": "1.0.0",
                "resolved": "https://registry.npmjs.org/wk-nope-pkg/-/wk-nope-pkg-1.0.0.tgz",
                "integrity": IS_NUMBER_SHA512,
            },
        },
    }
    repo = make_repo({"package.json": manifest, "package-lock.json": json.dumps(lock)})
    with pytest.raises(SetupFailed) as caught:
        set_up(repo)
    said = str(caught.value)
    assert "\n" not in said and said.startswith("set-up command failed (exit 1")
    assert "`npm ci --no-audit --no-fund`: npm error 404 Not Found - GET http://" in said
    assert "/wk-nope-pkg/-/wk-nope-pkg-1.0.0.tgz" in said
    assert exit_code_for(caught.value) == EXIT_PROJECT_ENVIRONMENT == 6


def test_a_version_the_registry_lacks_is_etarget_in_one_line(make_repo, set_up):
    repo = make_repo({"package.json": package(dependencies={"is-number": "^99.0.0"})})
    with pytest.raises(SetupFailed) as caught:
        set_up(repo)
    said = str(caught.value)
    assert "\n" not in said
    assert (
        said.endswith(
            "`npm install --no-audit --no-fund --no-package-lock`: npm error notarget No matching "
            "version found for is-number@^99.0.0."
        )
        or "npm error notarget No matching version found for is-number@^99.0.0." in said
    )
    assert exit_code_for(caught.value) == 6


# -- an install script is the repository's code: fenced --------------------------------------

# A postinstall script that tries another host: by name and by address through the proxy it
# is told (HTTP_PROXY), and by address directly. It prints what happened, then needs the host.
PROBE_JS = """
const http = require('http');
const [name, ip] = process.argv.slice(2);
const proxy = new URL(process.env.HTTP_PROXY);
function get(options) {
  return new Promise((resolve) => {
    const req = http.get({ timeout: 5000, ...options }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? 'reached' : 'status-' + res.statusCode);
    });
    req.on('timeout', () => { req.destroy(); resolve('failed:timeout'); });
    req.on('error', (e) => resolve('failed:' + e.code));
  });
}
const viaProxy = (host) => get({ host: proxy.hostname, port: proxy.port,
                                 path: `http://${host}:8000/`, headers: { Host: `${host}:8000` } });
(async () => {
  const results = [
    'proxied-name=' + await viaProxy(name),
    'proxied-ip=' + await viaProxy(ip),
    'direct-ip=' + await get({ host: ip, port: 8000, path: '/' }),
  ];
  console.log('PROBE ' + results.join(' '));
  process.exit(results[0] === 'proxied-name=reached' ? 0 : 1);
})();
"""


@pytest.fixture
def other_host(docker_client, sandbox_image, egress, tmp_path):
    """A host on the egress network that is not the registry: what a script must not reach."""
    root = tmp_path / "other"
    root.mkdir()
    (root / "index.html").write_text("marker\n")
    with serve_folder(docker_client, image=sandbox_image, network=egress, root=root) as served:
        yield served


def test_an_install_script_reaching_another_host_is_refused(
    make_repo, registry, set_up, other_host, egress
):
    probe = f"node probe.js {other_host.host} {other_host.ip(egress)}"
    manifest = package(dependencies={"is-number": "7.0.0"}, scripts={"postinstall": probe})
    lock = registry.lock(json.loads(manifest))
    files = {"package.json": manifest, "package-lock.json": lock, "probe.js": PROBE_JS}
    with pytest.raises(SetupFailed) as caught:
        set_up(make_repo(files))
    failed = caught.value
    # The registry was reached (is-number came through the proxy); the other host never was,
    # by its name or its address, through the proxy or around it.
    assert registry.saw("GET /is-number/-/is-number-7.0.0.tgz"), registry.requests()
    assert other_host.requests() == []
    assert "PROBE proxied-name=status-403 proxied-ip=status-403 direct-ip=failed:" in failed.tail
    assert failed.network_error and other_host.host in failed.network_error
    assert "\n" not in str(failed) and "the set-up proxy refused" in str(failed)
    assert "npm_config_registry" in str(failed)  # how to widen it, in npm's words


# -- a token for set-up only --------------------------------------------------------------------


def test_an_npm_token_reaches_set_up_and_never_the_image(
    docker_client,
    make_repo,
    registry,
    set_up,
    node_image,  # noqa: F811
):
    token = "npm_" + os.urandom(16).hex()
    manifest = package(
        dependencies={"is-number": "7.0.0"},
        scripts={"postinstall": "node -e \"require('fs').writeFileSync('node_modules/"
                 "token.sha256', require('crypto').createHash('sha256')"
                 ".update(process.env.NPM_TOKEN).digest('hex'))\""},
    )  # fmt: skip
    lock = registry.lock(json.loads(manifest))
    npmrc = f"//{registry.host}:4873/:_authToken=${{NPM_TOKEN}}\n"
    repo = make_repo({"package.json": manifest, "package-lock.json": lock, ".npmrc": npmrc})
    lines: list[str] = []
    result = set_up(
        repo, progress=lines.append, env_names=("NPM_TOKEN",), environ={"NPM_TOKEN": token}
    )
    # Read from the image's files (a container's log can come back empty under load).
    digest = _file_of(
        docker_client, result.image, "/opt/worker-deps/tree/node_modules/token.sha256"
    )
    assert digest.decode().strip() == hashlib.sha256(token.encode()).hexdigest()
    attrs = docker_client.images.get(result.image).attrs
    assert token not in repr(attrs) and token not in repr(docker_client.api.history(result.image))
    assert not [e for e in attrs["Config"]["Env"] if e.startswith("NPM_TOKEN")]
    assert not _image_holds(docker_client, result.image, token.encode())
    assert not any(token in line for line in lines)
    if result.log is not None:
        assert token not in result.log.read_text()


# -- Yarn and pnpm by corepack, from the same registry ------------------------------------------


# With `packageManager` corepack runs the release it names; without, set-up makes the release
# it installs corepack's default (`corepack install -g`), for the tests' `yarn test` offline.
DECLARED = pytest.mark.parametrize("declared", [True, False], ids=["declared", "undeclared"])


@DECLARED
def test_yarn_1_by_corepack_installs_its_lockfile_and_runs_offline_after(
    docker_client, make_repo, registry, set_up, tmp_path, declared
):
    yarn = stored_version("yarn")
    fields: dict[str, object] = {"packageManager": f"yarn@{yarn}"} if declared else {}
    manifest = package(**fields, dependencies={"is-number": "^7.0.0"})
    yarn_lock = (
        "# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.\n# yarn lockfile v1\n\n\n"
        "is-number@^7.0.0:\n"
        '  version "7.0.0"\n'
        f'  resolved "{registry.url}is-number/-/is-number-7.0.0.tgz#{IS_NUMBER_SHA1}"\n'
        f"  integrity {IS_NUMBER_SHA512}\n"
    )
    repo = make_repo({"package.json": manifest, "yarn.lock": yarn_lock, "test.js": TEST_JS})
    lines: list[str] = []
    result = set_up(repo, progress=lines.append)
    version = f" {yarn}" if declared else ""
    assert lines[0] == (
        f"inferred set-up: yarn install --frozen-lockfile (Yarn 1{version} by corepack; from "
        "yarn.lock)"
    )
    # corepack fetched Yarn from the registry (its layer), the install is-number
    assert registry.saw(f"GET /yarn/-/yarn-{yarn}.tgz"), registry.requests()
    assert registry.saw("GET /is-number/-/is-number-7.0.0.tgz"), registry.requests()
    out = run_tests(docker_client, result, repo, tmp_path / "run", "yarn test")
    assert "is-number works" in out


@DECLARED
def test_pnpm_by_corepack_installs_its_lockfile_and_runs_offline_after(
    docker_client, make_repo, registry, set_up, tmp_path, declared
):
    pnpm = stored_version("pnpm")
    fields: dict[str, object] = {"packageManager": f"pnpm@{pnpm}"} if declared else {}
    manifest = package(**fields, dependencies={"is-number": "^7.0.0"})
    pnpm_lock = (
        "lockfileVersion: '9.0'\n\n"
        "settings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\n"
        "importers:\n\n  .:\n    dependencies:\n      is-number:\n"
        "        specifier: ^7.0.0\n        version: 7.0.0\n\n"
        "packages:\n\n  is-number@7.0.0:\n"
        f"    resolution: {{integrity: {IS_NUMBER_SHA512}}}\n"
        "    engines: {node: '>=0.12.0'}\n\n"
        "snapshots:\n\n  is-number@7.0.0: {}\n"
    )
    repo = make_repo({"package.json": manifest, "pnpm-lock.yaml": pnpm_lock, "test.js": TEST_JS})
    lines: list[str] = []
    result = set_up(repo, progress=lines.append)
    version = f" {pnpm}" if declared else ""  # else pnpm@10, for lockfile 9.0
    assert lines[0].startswith(f"inferred set-up: pnpm install --frozen-lockfile (pnpm{version} by")
    assert registry.saw(f"GET /pnpm/-/pnpm-{pnpm}.tgz"), registry.requests()
    assert registry.saw("GET /is-number/-/is-number-7.0.0.tgz"), registry.requests()
    out = run_tests(docker_client, result, repo, tmp_path / "run", "pnpm test")
    assert "is-number works" in out
    if not declared:
        return
    # A second project naming the same pnpm starts from its layer: pnpm is not fetched again,
    # and its set-up (corepack offline) and tests find it.
    other = make_repo({"package.json": package(**fields, dependencies={"is-number": "^7.0.0"}),
                       "pnpm-lock.yaml": pnpm_lock, "test.js": TEST_JS})  # fmt: skip
    fetched = [r for r in registry.requests() if r.startswith("GET /pnpm")]
    lines = []
    again = set_up(other, progress=lines.append)
    assert any(line.startswith(f"set-up tool: pnpm {pnpm} (package.json packageManager), "
                               "cached: worker-tool:pnpm-") for line in lines), lines  # fmt: skip
    assert not again.cached  # the project's own set-up ran, on the layer
    assert [r for r in registry.requests() if r.startswith("GET /pnpm")] == fetched
    out = run_tests(docker_client, again, other, tmp_path / "run2", "pnpm test")
    assert "is-number works" in out


def test_yarn_berry_by_corepack_installs_plug_n_play_and_runs_offline_after(
    docker_client, make_repo, registry, set_up, tmp_path
):
    # No lockfile: Berry resolves one (told to, under CI=1); its packages stay in the image's
    # global cache, which the .pnp.cjs it writes into the tree points into.
    berry = stored_version("@yarnpkg/cli-dist")
    manifest = package(packageManager=f"yarn@{berry}", dependencies={"is-number": "^7.0.0"})
    repo = make_repo({"package.json": manifest, "test.js": TEST_JS})
    lines: list[str] = []
    result = set_up(repo, progress=lines.append)
    assert lines[0] == (
        f"inferred set-up: yarn install --no-immutable (Yarn Berry {berry} by corepack; from "
        "package.json; no lockfile of its own: versions are resolved afresh)"
    )
    assert registry.saw(f"GET /@yarnpkg/cli-dist/-/cli-dist-{berry}.tgz"), registry.requests()
    assert registry.saw("GET /is-number/-/is-number-7.0.0.tgz"), registry.requests()
    assert any(".pnp.cjs" in line for line in lines)  # written into the tree, kept with the image
    out = run_tests(docker_client, result, repo, tmp_path / "run", "yarn test")
    assert "is-number works" in out


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


def _file_of(client, image: str, path: str) -> bytes:
    """The bytes of the file at `path` in `image`, read through the archive API."""
    container = client.containers.create(image, ["true"], network_disabled=True)
    try:
        stream, _ = container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            assert member is not None
            data = tar.extractfile(member)
            assert data is not None
            return data.read()
    finally:
        container.remove(force=True)
