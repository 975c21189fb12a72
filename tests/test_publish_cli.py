"""`worker publish`: a real bare remote on disk as origin, a GitHub-compatible server on
127.0.0.1 that records the pull request, and no LLM key in the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import GIT_ENV, git
from tests.github_server import GitHubServer

REPOSITORY = "acme/calc"
TOKEN = "ghs-test-token"
PATCH_BASE = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"
PATCH = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def mean(values):
-    return sum(values) / (len(values) - 1)
+    return sum(values) / len(values)
"""


@pytest.fixture
def checkout(make_repo, tmp_path):
    """A bare origin with branch main, and a clone of it (as actions/checkout leaves one)."""
    source = make_repo({"calc.py": PATCH_BASE})
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(source), str(origin))
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return clone, origin


def ci_outputs(out: Path, repo: Path, **changes) -> Path:
    """The outputs of a finished `worker ci` run that ended verified fixed (as it writes them)."""
    out.mkdir(exist_ok=True)
    (out / "fix.patch").write_text(PATCH)
    (out / "summary.md").write_text(f"## worker: Fixed, verified\n\n```diff\n{PATCH}```\n")
    head = git(repo, "rev-parse", "HEAD").strip()
    ci = {"source": "junit", "junit_files": [], "reruns": 2, "head_sha": head, "branch": "main",
          "tests": [], "verified": True, **changes.pop("ci", {})}  # fmt: skip
    report = {"status": "fixed", "exit_code": 0, "reason": "tests pass, verified on a clean copy",
              "patch": str(out / "fix.patch"), "ci": ci, **changes}  # fmt: skip
    (out / "report.json").write_text(json.dumps(report))
    return out


def publish(repo: Path, out: Path, gh: GitHubServer | None, *extra: str, env=None):
    environ = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "GITHUB_OUTPUT")}
    environ |= GIT_ENV | {"GITHUB_TOKEN": TOKEN, "GITHUB_REPOSITORY": REPOSITORY}
    environ["GITHUB_API_URL"] = gh.api_url if gh else "http://127.0.0.1:9"
    environ |= env or {}
    args = [sys.executable, "-m", "worker.cli", "publish", "--out", str(out), "--repo", str(repo)]
    return subprocess.run([*args, *extra], capture_output=True, text=True, env=environ, timeout=60)


def remote_branches(origin: Path) -> list[str]:
    return git(origin, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()


def test_publish_pushes_the_verified_patch_and_opens_a_draft_pull_request(checkout, tmp_path):
    repo, origin = checkout
    out = ci_outputs(tmp_path / "out", repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    with GitHubServer(repository=REPOSITORY) as gh:
        proc = publish(repo, out, gh)
    assert proc.returncode == 0, proc.stderr
    branch = f"worker/fix-{head[:12]}"
    assert sorted(remote_branches(origin)) == sorted(["main", branch])
    # The pushed commit is the run's commit plus exactly the verified patch.
    assert git(origin, "rev-parse", f"{branch}^").strip() == head
    assert "+    return sum(values) / len(values)" in git(origin, "show", branch)
    pull = [r for r in gh.requests if r["method"] == "POST"]
    assert [r["path"] for r in pull] == [f"/repos/{REPOSITORY}/pulls"]
    body = pull[0]["body"]
    assert (body["base"], body["head"], body["draft"]) == ("main", branch, True)
    assert body["body"] == (out / "summary.md").read_text()
    assert pull[0]["authorization"] == f"Bearer {TOKEN}"
    assert "https://github.example/acme/calc/pull/7" in proc.stdout
    assert git(repo, "status", "--porcelain") == ""  # the checkout is left as it was


def test_a_moved_branch_stops_with_nothing_pushed(checkout, tmp_path, make_repo):
    repo, origin = checkout
    out = ci_outputs(tmp_path / "out", repo)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(origin), str(other))
    (other / "new.txt").write_text("x")
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "someone else's commit")
    git(other, "push", "-q", "origin", "main")
    with GitHubServer(repository=REPOSITORY) as gh:
        proc = publish(repo, out, gh)
    assert proc.returncode == 1
    assert "branch 'main' moved" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert remote_branches(origin) == ["main"] and gh.requests == []


@pytest.mark.parametrize(
    ("status", "message", "words"),
    [
        (401, "Bad credentials", "HTTP 401 Bad credentials"),
        (403, "Resource not accessible by integration", "HTTP 403"),
        (422, "Validation Failed", "HTTP 422 Validation Failed (A pull request already exists"),
    ],
)
def test_api_errors_name_the_step_exit_3(checkout, tmp_path, status, message, words):
    repo, _ = checkout
    out = ci_outputs(tmp_path / "out", repo)
    body = {"message": message, "errors": [{"message": "A pull request already exists for x"}]}
    fail = {f"POST /repos/{REPOSITORY}/pulls": (status, body)}
    with GitHubServer(repository=REPOSITORY, fail=fail) as gh:
        proc = publish(repo, out, gh)
    assert proc.returncode == 3, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "opening the pull request" in line and words in line
    assert (out / "fix.patch").exists() and (out / "report.json").exists()


def test_api_down_and_push_rejected_are_exit_3(checkout, tmp_path):
    repo, origin = checkout
    out = ci_outputs(tmp_path / "out", repo)
    proc = publish(repo, out, None)  # nothing listens on the API address
    assert proc.returncode == 3 and "reading the repository" in proc.stderr
    assert "unreachable" in proc.stderr
    head = git(repo, "rev-parse", "HEAD").strip()
    git(origin, "branch", f"worker/fix-{head[:12]}", "main")  # taken: a push must not force
    with GitHubServer(repository=REPOSITORY) as gh:
        proc = publish(repo, out, gh)
    assert proc.returncode == 3 and "rejected" in proc.stderr, proc.stderr
    assert git(origin, "rev-parse", f"worker/fix-{head[:12]}") == git(origin, "rev-parse", "main")
    assert not any(r["method"] == "POST" for r in gh.requests)


def test_refusals_before_anything_is_written(checkout, tmp_path):
    repo, origin = checkout
    with GitHubServer(repository=REPOSITORY) as gh:
        keyed = publish(repo, ci_outputs(tmp_path / "a", repo), gh, env={"OPENAI_API_KEY": "sk-x"})
        unverified = publish(repo, ci_outputs(tmp_path / "b", repo, ci={"verified": False}), gh)
        flaky = publish(repo, ci_outputs(tmp_path / "c", repo, status="flaky_only", patch=None), gh)
        ours = publish(repo, ci_outputs(tmp_path / "d", repo), gh, "--base", "worker/fix-abc")
    assert keyed.returncode == 2 and "OPENAI_API_KEY" in keyed.stderr
    assert unverified.returncode == 1 and "not verified fixed" in unverified.stderr
    assert flaky.returncode == 1 and "flaky_only" in flaky.stderr
    assert ours.returncode == 2 and "one of worker's branches" in ours.stderr
    assert gh.requests == [] and remote_branches(origin) == ["main"]


def test_comment_only_posts_the_summary_and_pushes_nothing(checkout, tmp_path):
    repo, origin = checkout
    out = ci_outputs(tmp_path / "out", repo)
    outputs = tmp_path / "github_output"
    with GitHubServer(repository=REPOSITORY) as gh:
        proc = publish(
            repo, out, gh, "--comment-only", "--pr", "12", env={"GITHUB_OUTPUT": str(outputs)}
        )
    assert proc.returncode == 0, proc.stderr
    assert gh.calls() == [f"POST /repos/{REPOSITORY}/issues/12/comments"]
    assert gh.requests[0]["body"] == {"body": (out / "summary.md").read_text()}
    assert remote_branches(origin) == ["main"]
    assert "url=https://github.example/acme/calc/pull/12#issuecomment-1\n" in outputs.read_text()
