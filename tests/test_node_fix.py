"""`worker fix` on a Node project end to end: the real CLI, a real Node 22 image (built from the
npm registry's Node packages served on loopback, tests/npm_node.py), real containers, and the
scripted model server. The project is the issue's: a package.json whose `test` is `node --test`,
one wrong divisor, and its tests."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import git
from tests.npm_node import LoopbackRegistry, serve_npm_node
from tests.test_ci_cli import ci
from tests.test_fix_cli import report, run_fix, tree_state
from worker.llm.scripted_server import ScriptedServer, text, tool_call

pytestmark = pytest.mark.docker

STATS = (
    "'use strict';\n\n"
    "function mean(values) {\n"
    "  const total = values.reduce((sum, v) => sum + v, 0);\n"
    "  return total / (values.length - 1);\n"
    "}\n\n"
    "module.exports = { mean };\n"
)
TESTS = (
    "const { describe, it } = require('node:test');\n"
    "const assert = require('node:assert/strict');\n"
    "const { mean } = require('../stats');\n\n"
    "describe('mean', () => {\n"
    "  it('averages three numbers', () => assert.equal(mean([1, 2, 3]), 2));\n"
    "  it('averages one number', () => assert.equal(mean([4]), 4));\n"
    "});\n"
)
FAILING = [
    "test/stats.test.js::mean > averages three numbers",
    "test/stats.test.js::mean > averages one number",
]
GOOD_PATCH = """\
--- a/stats.js
+++ b/stats.js
@@ -3,5 +3,5 @@
 function mean(values) {
   const total = values.reduce((sum, v) => sum + v, 0);
-  return total / (values.length - 1);
+  return total / values.length;
 }
"""


def project(**package: object) -> dict[str, str]:
    manifest = {"name": "stats", "version": "1.0.0", "scripts": {"test": "node --test"}}
    manifest.update(package)
    return {"package.json": json.dumps(manifest, indent=2), "stats.js": STATS,
            "test/stats.test.js": TESTS}  # fmt: skip


@pytest.fixture
def registry(node_image: str) -> Iterator[LoopbackRegistry]:
    """The Node registry the run lists releases from (npm_config_registry): Node 22 only, whose
    image the session built."""
    with serve_npm_node() as served:
        yield served


def fix(repo: Path, out: Path, registry: LoopbackRegistry, script: list, *extra: str):
    with ScriptedServer(script=script) as server:
        proc = run_fix(
            repo, out, *extra, base_url=server.base_url,
            env={"npm_config_registry": registry.url},
        )  # fmt: skip
    return proc, server


def test_a_node_test_project_is_fixed_and_verified_by_test_id(make_repo, tmp_path, registry):
    repo = make_repo(project(engines={"node": ">=20"}))
    before = tree_state(repo)
    script = [tool_call("apply_patch", {"patch": GOOD_PATCH})]
    proc, server = fix(repo, tmp_path / "out", registry, script)
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert r["setup"]["ecosystem"] == "node"
    assert r["setup"]["toolchain"]["version"].startswith("22.")
    assert "engines.node >=20" in r["setup"]["toolchain"]["why"]
    assert r["tests_before"]["failing"] == FAILING
    assert r["tests_before"]["counts"] == {"passed": 0, "failed": 2, "errors": 0, "skipped": 0}
    # Verified test by test, from the runner's own report, not by the exit code.
    assert r["verdict"]["rule"] == "junit", r["verdict"]
    assert "+  return total / values.length;" in (tmp_path / "out" / "fix.patch").read_text()
    assert tree_state(repo) == before
    # The model was shown the failing tests by their ids, with the assertion.
    first = server.requests[0]["messages"][1]["content"]
    assert "mean > averages one number" in first and "Infinity" in first
    # A second run starts warm: the Node image is there, nothing is built.
    again, _ = fix(
        repo, tmp_path / "again", registry, [tool_call("apply_patch", {"patch": GOOD_PATCH})]
    )
    assert again.returncode == 0, again.stderr
    assert report(tmp_path / "again")["setup"]["toolchain"]["built_s"] is None


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (  # the test script made to pass: package.json is not the model's to write
            {"path": "package.json", "old": '"test": "node --test"', "new": '"test": "exit 0"'},
            "package.json",
        ),
        (  # the code under test ends the process before a test can fail
            {"path": "stats.js", "old": "'use strict';", "new": "'use strict'; process.exit(0);"},
            "",
        ),
    ],
)
def test_a_node_run_cannot_be_made_green_without_a_fix(make_repo, tmp_path, registry, edit, why):
    repo = make_repo(project())
    script = [tool_call("replace", edit), text("The tests pass now.")]
    proc, _ = fix(repo, tmp_path / "out", registry, script, "--max-steps", "2")
    r = report(tmp_path / "out")
    assert proc.returncode == 1, proc.stderr
    assert r["status"] != "fixed" and not (r.get("verification") or {}).get("passed")
    if why:  # refused by the policy, so never applied
        calls = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
        refused = [c["data"] for c in calls if c.get("type") == "tool_call" and "data" in c]
        assert {"refused": why, "rule": f"write_deny:**/{why}"} in refused, refused


def test_a_project_with_no_test_script_is_one_line_naming_the_repository(
    make_repo, tmp_path, registry
):
    repo = make_repo(project(scripts={"build": "tsc"}))
    proc, server = fix(repo, tmp_path / "out", registry, [])
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert f"cannot tell how to run the tests of {repo}" in line
    assert 'package.json has no "test" script' in line and "/workspace" not in line
    assert server.requests == []


def test_an_engines_node_no_release_has_is_exit_6_before_any_model_call(
    make_repo, tmp_path, registry
):
    repo = make_repo(project(engines={"node": ">=99"}))
    proc, server = fix(repo, tmp_path / "out", registry, [])
    assert proc.returncode == 6, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "Node >=99" in line and "22.12.0" in line
    assert server.requests == []


def test_worker_ci_on_a_node_build_triages_ci_s_junit_and_fixes_the_real_failure(
    make_repo, tmp_path, registry
):
    repo = make_repo(project())
    # CI's JUnit, as Node's own junit reporter wrote it on the host's Node (20: it names no
    # test file, so worker finds CI's tests in its own runs by their titles).
    junit = tmp_path / "ci.xml"
    subprocess.run(
        ["node", "--test", "--test-reporter=junit", f"--test-reporter-destination={junit}"],
        cwd=repo, capture_output=True, check=False,
    )  # fmt: skip
    assert b"averages one number" in junit.read_bytes()
    script = [tool_call("apply_patch", {"patch": GOOD_PATCH})]
    with ScriptedServer(script=script) as server:
        proc = ci(repo, tmp_path / "out", "--junit", str(junit), base_url=server.base_url,
                  env={"npm_config_registry": registry.url})  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["ci"]["verified"] and r["verdict"]["rule"] == "junit"
    triaged = {t["test_id"]: (t["kind"], t["passes"], t["fails"]) for t in r["ci"]["tests"]}
    assert set(triaged.values()) == {("failing", 0, 2)} and len(triaged) == 2, triaged
    assert all(t.endswith(("mean > averages three numbers", "mean > averages one number"))
               for t in triaged)  # fmt: skip


#: A build in plain node: src/*.js to dist/, stamped, the way a tsc or babel build writes the
#: output the tests import.
BUILD = (
    "const fs = require('node:fs');\n"
    "fs.mkdirSync('dist', { recursive: true });\n"
    "for (const name of fs.readdirSync('src')) {\n"
    "  const code = fs.readFileSync(`src/${name}`, 'utf8');\n"
    "  fs.writeFileSync(`dist/${name}`, `// built from src/${name}\\n${code}`);\n"
    "}\n"
)
CI_BUILD = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: npm run build
      - run: npm test
"""


def built_project(workflow: str) -> dict[str, str]:
    """The stats project with its code in src/ and tests that import dist/, whose built copy
    is committed as it was before the last edit of src/ (stale: a run that does not build
    tests the old code)."""
    files = project(scripts={"build": "node build.js", "test": "node --test"})
    code = files.pop("stats.js")
    return {**files, "build.js": BUILD, "src/stats.js": code,
            "dist/stats.js": f"// built from src/stats.js\n{code}",
            "test/stats.test.js": TESTS.replace("'../stats'", "'../dist/stats'"),
            ".github/workflows/ci.yml": workflow}  # fmt: skip


def test_ci_s_build_runs_before_each_test_run_so_an_edit_of_src_is_verified(
    make_repo, tmp_path, registry
):
    patch = GOOD_PATCH.replace("a/stats.js", "a/src/stats.js").replace(
        "b/stats.js", "b/src/stats.js"
    )
    repo = make_repo(built_project(CI_BUILD))
    proc, server = fix(
        repo, tmp_path / "out", registry, [tool_call("apply_patch", {"patch": patch})]
    )
    assert proc.returncode == 0, proc.stderr
    r = report(tmp_path / "out")
    assert r["status"] == "fixed" and r["verification"]["passed"] is True
    assert r["tests_before"]["failing"] == FAILING
    # The set-up says what runs first, and where CI says so.
    build = "CI's build npm run build (.github/workflows/ci.yml:8)"
    assert f"{build}, run before each test run" in r["setup"]["from"], r["setup"]
    said = next(ln for ln in proc.stderr.splitlines() if ln.startswith("inferred set-up:"))
    assert said.endswith(f"; each test run starts with {build}"), said
    # The model edited src/ only; what the build wrote into dist/ is no part of the patch.
    fixed = (tmp_path / "out" / "fix.patch").read_text()
    assert "+++ b/src/stats.js" in fixed and "dist/" not in fixed, fixed
    # Without CI's build line, the same edit leaves dist/ as it was: not fixed.
    plain = make_repo(built_project(CI_BUILD.replace("      - run: npm run build\n", "")))
    proc, _ = fix(plain, tmp_path / "plain", registry,
                  [tool_call("apply_patch", {"patch": patch})], "--max-steps", "1")  # fmt: skip
    r = report(tmp_path / "plain")
    assert proc.returncode == 1 and r["status"] != "fixed", proc.stderr
    assert not any("CI's build" in s for s in r["setup"]["from"]), r["setup"]


# As lefthook's and husky's installs do: it asks git for the top folder and the tracked files,
# fails outside a repository, and writes a hook of its own into .git/hooks.
CHECK_GIT = """\
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const git = (...args) => execFileSync('git', args, { encoding: 'utf8' }).trim();
const problems = [];
if (git('rev-parse', '--show-toplevel') !== process.cwd()) problems.push('not the top folder');
const listed = git('ls-files').split('\\n');
for (const file of ['package.json', 'stats.js', 'test/stats.test.js']) {
  if (!listed.includes(file)) problems.push(`${file} is not listed`);
}
if (git('rev-list', '--count', 'HEAD') !== '1') problems.push("the user's history is here");
if (git('log', '-1', '--format=%an %ad', '--date=short') !== 'worker 2000-01-01') {
  problems.push('not the fixed commit');
}
if (git('remote') !== '' || fs.readFileSync('.git/config', 'utf8').includes('secret')) {
  problems.push("the user's config is here");
}
fs.writeFileSync('.git/hooks/pre-commit', '#!/bin/sh\\ntouch hooked\\n', { mode: 0o755 });
try { execFileSync('git', ['hook', 'run', 'pre-commit'], { stdio: 'ignore' }); } catch {}
if (fs.existsSync('hooked')) problems.push('a hook ran');
if (problems.length) {
  console.error(problems.join('; '));
  process.exit(1);
}
"""


def test_the_working_copy_is_a_fresh_repository_of_the_sandbox_s_own(
    make_repo, tmp_path, registry, docker_client
):
    files = project(
        description=os.urandom(8).hex(),  # a set-up of its own, never one cached earlier
        scripts={"prepare": "node check-git.js", "pretest": "node check-git.js",
                 "test": "node --test"},
    )  # fmt: skip
    lock = {"name": "stats", "version": "1.0.0", "lockfileVersion": 3, "requires": True,
            "packages": {"": {"name": "stats", "version": "1.0.0"}}}  # fmt: skip
    repo = make_repo({**files, "check-git.js": CHECK_GIT, "package-lock.json": json.dumps(lock)})
    # The user's own repository: a second commit, a remote with a token, a hook.
    (repo / "notes.txt").write_text("history\n")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-q", "-m", "second")
    git(repo, "remote", "add", "origin", "https://user:secret@example.com/stats.git")
    (repo / ".git" / "hooks" / "post-checkout").write_text("#!/bin/sh\ntouch /tmp/hooked\n")
    before = tree_state(repo)
    script = [
        tool_call("read_file", {"path": ".git/config"}),
        tool_call("apply_patch", {"patch": GOOD_PATCH}),
    ]
    proc, server = fix(repo, tmp_path / "out", registry, script)
    r = report(tmp_path / "out")
    try:
        assert proc.returncode == 0, proc.stderr
        # Set-up ran `npm ci`, whose `prepare` asked git; the tests' `pretest` asked it again,
        # in the agent's sandbox and in the clean re-check.
        assert r["setup"]["command"].startswith("npm ci"), r["setup"]
        assert r["tests_before"]["counts"]["failed"] == 2, r["tests_before"]
        assert r["status"] == "fixed" and r["verification"]["passed"] is True
        patch = (tmp_path / "out" / "fix.patch").read_text()
        assert "+  return total / values.length;" in patch
        assert ".git" not in patch and "hooked" not in patch
        calls = [json.loads(line) for line in (tmp_path / "out" / "trace.jsonl").open()]
        read = next(c for c in calls if c["type"] == "tool_call")
        assert read["ok"] is False and "git-internals" in json.dumps(read), read
        assert tree_state(repo) == before
    finally:
        if image := (r.get("setup") or {}).get("image"):
            docker_client.images.remove(image, force=True)
