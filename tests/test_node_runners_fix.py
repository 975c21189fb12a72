"""`worker fix` on vitest, jest and mocha projects with a lockfile, end to end: set up with no
flag (npm ci through the fence, from verdaccio on the test's network with no uplink), the
baseline naming exactly the planted bug's tests by id, a scripted fix verified from the
runner's own report, and (for mocha: the same code for every runner) a second run warm (the
cached set-up image, no install)."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator

import pytest

from tests.npm_node import serve_npm_node
from tests.npm_registry import NpmRegistry, npm_registry, stored_version
from tests.test_fix_cli import report, run_fix
from worker.llm.scripted_server import ScriptedServer, tool_call

pytestmark = pytest.mark.docker

STATS = (
    "function mean(values) {\n"
    "  const total = values.reduce((sum, v) => sum + v, 0);\n"
    "  return total / (values.length - 1);\n"
    "}\n\n"
    "module.exports = { mean };\n"
)
GOOD_PATCH = """\
--- a/src/stats.js
+++ b/src/stats.js
@@ -1,4 +1,4 @@
 function mean(values) {
   const total = values.reduce((sum, v) => sum + v, 0);
-  return total / (values.length - 1);
+  return total / values.length;
 }
"""
BODY = (
    "describe('mean', () => {\n"
    "  it('averages three numbers', () => {\n"
    "    if (mean([1, 2, 3]) !== 2) throw new Error(`got ${mean([1, 2, 3])}`);\n"
    "  });\n"
    "  it('averages one number', () => {\n"
    "    if (mean([4]) !== 4) throw new Error(`got ${mean([4])}`);\n"
    "  });\n"
    "});\n"
    "describe('sum', () => {\n"
    "  it('is not tested here', () => {});\n"
    "});\n"
)
TSC_OPTIONS = {"strict": True, "noEmit": True, "skipLibCheck": True, "module": "esnext",
               "moduleResolution": "bundler"}  # fmt: skip
RUNNERS = {
    # runner: (test script, test file, its import line, the failing ids)
    "vitest": (
        "vitest run",
        "test/stats.test.js",
        "import { describe, it } from 'vitest';\nimport { mean } from '../src/stats.js';\n",
        ["test/stats.test.js::mean > averages three numbers",
         "test/stats.test.js::mean > averages one number"],
    ),
    # A TypeScript config: vite bundles it into node_modules/.vite-temp before any test runs,
    # so the run must be able to write there (node_modules itself lives in the set-up image).
    "vitest.config.mts": (
        "vitest run",
        "test/stats.test.js",
        "import { describe, it } from 'vitest';\nimport { mean } from '../src/stats.js';\n",
        ["test/stats.test.js::mean > averages three numbers",
         "test/stats.test.js::mean > averages one number"],
    ),
    # A type check: tsc writes its build info into vitest's own dist folder, in the set-up
    # image; the run must be able to write there, or vitest fails the run after the tests.
    "vitest --typecheck": (
        "vitest run --typecheck",
        "test/stats.test.js",
        "import { describe, it } from 'vitest';\nimport { mean } from '../src/stats.js';\n",
        ["test/stats.test.js::mean > averages three numbers",
         "test/stats.test.js::mean > averages one number"],
    ),
    "jest": (
        "jest",
        "__tests__/stats.test.js",
        "const { mean } = require('../src/stats');\n",
        ["__tests__/stats.test.js::mean > averages three numbers",
         "__tests__/stats.test.js::mean > averages one number"],
    ),
    "mocha": (
        "mocha",
        "test/stats.test.js",
        "const { mean } = require('../src/stats');\n",
        ["test/stats.test.js::mean averages three numbers",
         "test/stats.test.js::mean averages one number"],
    ),
}  # fmt: skip


@pytest.fixture(scope="module")
def registries(docker_client, node_image) -> Iterator[tuple[NpmRegistry, dict]]:
    """verdaccio on Docker's default bridge (the network the set-up's proxy goes out by), and
    the loopback registry of Node's own packages (WORKER_NODE_REGISTRY) the image came from.
    One of each for the module: both serve read-only, and a test counts only its own requests."""
    with npm_registry(docker_client, image=node_image, network="bridge") as served:
        served.container.reload()  # the default bridge has no names: its address
        ip = served.container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
        registry = dataclasses.replace(served, host=ip)
        with serve_npm_node() as node:
            yield registry, {**registry.environ(), "WORKER_NODE_REGISTRY": node.url}


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_runner_s_project_is_set_up_fixed_and_verified_by_test_id(
    make_repo, tmp_path, registries, runner, docker_client
):
    registry, env = registries
    script, test_file, imports, failing = RUNNERS[runner]
    config = {}
    dependencies = {}
    passing = 1  # sum's test; and a type test, where there is one
    if runner.endswith(".mts"):
        config = {
            runner: "import { defineConfig } from 'vitest/config';\n"
            "export default defineConfig({ test: { include: ['test/**'] } });\n"
        }
        runner = "vitest"
    elif runner.endswith("--typecheck"):
        config = {
            "tsconfig.json": json.dumps({"compilerOptions": TSC_OPTIONS, "include": ["test"]}),
            "test/stats.test-d.ts": "import { expectTypeOf, test } from 'vitest';\n"
            "test('a number', () => { expectTypeOf(1).toBeNumber(); });\n",
        }
        runner, passing = "vitest", 2
        dependencies["typescript"] = stored_version("typescript")
    package = {
        "name": f"stats-{runner}-{uuid.uuid4().hex[:8]}",  # a set-up of its own: cold first
        "version": "1.0.0",
        "private": True,
        "scripts": {"test": script},
        "devDependencies": {runner: stored_version(runner), **dependencies},
    }
    if runner == "vitest":
        package["type"] = "module"
        stats = STATS.replace("module.exports = { mean };", "export { mean };")
    else:
        stats = STATS
    repo = make_repo({
        "package.json": json.dumps(package, indent=2),
        "package-lock.json": registry.lock(package),
        "src/stats.js": stats,
        test_file: imports + BODY,
        **config,
    })  # fmt: skip
    patch = (
        GOOD_PATCH
        if runner != "vitest"
        else GOOD_PATCH.replace(" function mean", " function mean", 1)
    )
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": patch})]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = report(tmp_path / "out")
    setup = r["setup"]
    assert setup["ecosystem"] == "node" and setup["source"] == "inferred"
    assert setup["command"].startswith("npm ci"), setup["command"]
    assert setup["cached"] is False
    assert r["tests_before"]["failing"] == failing
    assert r["tests_before"]["counts"]["passed"] == passing
    assert r["status"] == "fixed" and r["verdict"]["rule"] == "junit", r["verdict"]
    if runner != "mocha":
        docker_client.images.remove(setup["image"], force=True)
        return
    # A second run is warm: the set-up image is there, nothing is installed again. That path
    # is the same for every runner (the set-up key, the cached image): one runner checks it.
    asked = len(registry.requests())
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": patch})]) as server:
        again = run_fix(repo, tmp_path / "again", base_url=server.base_url, env=env, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert report(tmp_path / "again")["setup"]["cached"] is True
    assert len(registry.requests()) == asked
    docker_client.images.remove(setup["image"], force=True)


def test_the_ci_install_s_legacy_peer_deps_is_what_lets_set_up_pass(
    make_repo, tmp_path, registries, docker_client
):
    # fdir 6.5 asks for picomatch ^3 || ^4 as a peer; the project pins picomatch 2: a plain
    # install ends in ERESOLVE, and only the workflow says how its maintainers install.
    registry, env = registries
    package = {
        "name": f"peers-{uuid.uuid4().hex[:8]}",
        "version": "1.0.0",
        "private": True,
        "scripts": {"test": "node --test"},
        "dependencies": {"fdir": "6.5.0", "picomatch": "2.3.2"},
    }
    files = {
        "package.json": json.dumps(package, indent=2),
        "src/stats.js": STATS,
        "test/stats.test.js": "const { describe, it } = require('node:test');\n"
        "const { mean } = require('../src/stats');\n" + BODY,
    }
    workflow = (
        "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/checkout@v4\n"
        "      - run: npm install --legacy-peer-deps\n"
        "      - run: npm test\n"
    )
    plain = make_repo(files)
    with ScriptedServer(script=[]) as server:
        refused = run_fix(plain, tmp_path / "plain", base_url=server.base_url, env=env)
    assert refused.returncode == 6 and "ERESOLVE" in refused.stderr, refused.stderr[-2000:]
    assert server.requests == []
    repo = make_repo({**files, ".github/workflows/ci.yml": workflow})
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "--legacy-peer-deps as CI gives it (.github/workflows/ci.yml:7)" in proc.stderr
    r = report(tmp_path / "out")
    assert "--legacy-peer-deps" in r["setup"]["command"]
    assert r["status"] == "fixed" and r["verdict"]["rule"] == "junit", r["verdict"]
    docker_client.images.remove(r["setup"]["image"], force=True)
