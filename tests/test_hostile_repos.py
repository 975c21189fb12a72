"""Hostile repositories: config that names programs, odd bytes, huge files, submodules, many files.

Each gets a clear result, never a traceback, nothing run on the host from the repository's config,
and no change to the user's tree (files, index, branches, HEAD, config).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from policies.limits import Limits
from policies.truncation import Truncation
from sandbox.container.local_sandbox import LocalSandbox
from sandbox.ecosystems import language_paths
from sandbox.worktree.workspace import snapshot
from tests.conftest import GIT_ENV, git
from tests.test_fix_cli import BUGGY, GOOD_PATCH, report, run_fix
from tests.test_sandbox_cli import worker
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools
from tools.search import MAX_FILES_SCANNED
from worker.errors import UsageError
from worker.llm.scripted_server import ScriptedServer, tool_call
from worker.run.deliver import apply_to_worktree, commit_on_branch

# What the tests themselves use to look at a hostile repository: nothing in it may run.
LOOK = (
    "-c core.fsmonitor=false -c core.hooksPath=/dev/null -c filter.x.process= "
    "-c filter.x.clean= -c filter.x.smudge= -c filter.x.required=false"
).split()
HOOKS = ("post-checkout", "pre-commit", "post-commit", "reference-transaction", "post-index-change")


def look(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *LOOK, "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **GIT_ENV, "GIT_OPTIONAL_LOCKS": "0"},
    ).stdout


def state(repo: Path) -> dict[str, str]:
    """Every file's bytes (.git internals and config included), HEAD, branches and status."""
    files = {
        os.fsdecode(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }
    return {
        **files,
        "HEAD": look(repo, "rev-parse", "HEAD"),
        "branches": look(repo, "for-each-ref", "refs/heads"),
        "status": look(repo, "status", "--porcelain", "--untracked-files=all"),
    }


def script(path: Path, marker: Path, name: str, tail: str = "exit 1") -> str:
    path.write_text(f"#!/bin/sh\necho {name} >> {marker}\n{tail}\n")
    path.chmod(0o755)
    return str(path)


def make_hostile(repo: Path, tmp_path: Path, *settings: str) -> Path:
    """Set up, after the last commit, config in `repo` that would write to the returned marker."""
    marker = tmp_path / "MARKER"
    progs = tmp_path / "progs"
    progs.mkdir(exist_ok=True)
    if "fsmonitor" in settings:
        git(repo, "config", "core.fsmonitor", script(progs / "fsmonitor", marker, "fsmonitor"))
    if "hooksPath" in settings or "hooks" in settings:
        hooks = progs / "hooks" if "hooksPath" in settings else repo / ".git" / "hooks"
        hooks.mkdir(exist_ok=True)
        for hook in HOOKS:
            script(hooks / hook, marker, hook, tail="exit 0")
        if "hooksPath" in settings:
            git(repo, "config", "core.hooksPath", str(hooks))
    if "filter" in settings:
        for kind in ("clean", "smudge"):
            git(repo, "config", f"filter.x.{kind}", script(progs / kind, marker, kind, "cat"))
        git(repo, "config", "filter.x.process", script(progs / "process", marker, "process"))
        (repo / ".git" / "info").mkdir(exist_ok=True)
        (repo / ".git" / "info" / "attributes").write_text("* filter=x\n")
    if "gpg" in settings:
        git(repo, "config", "commit.gpgSign", "true")
        git(repo, "config", "gpg.program", script(progs / "gpg", marker, "gpg"))
    return marker


def no_marker(marker: Path) -> None:
    assert not marker.exists(), f"ran on the host: {marker.read_text().split()}"


SETTINGS = ["fsmonitor", "hooksPath", "hooks", "filter", "gpg"]


@pytest.mark.parametrize("setting", SETTINGS)
def test_copying_the_tree_runs_nothing_the_repo_config_names(make_repo, tmp_path, setting):
    repo = make_repo(BUGGY)
    (repo / "new.txt").write_text("untracked\n")
    marker = make_hostile(repo, tmp_path, setting)
    before = state(repo)
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    assert (ws.path / "calc.py").read_text() == BUGGY["calc.py"]
    assert (ws.path / "new.txt").exists() and not (ws.path / ".git").exists()
    no_marker(marker)
    assert state(repo) == before


@pytest.mark.parametrize("setting", SETTINGS)
def test_delivering_runs_nothing_the_repo_config_names(make_repo, tmp_path, setting):
    repo = make_repo(BUGGY)
    marker = make_hostile(repo, tmp_path, setting)
    before = state(repo)
    assert commit_on_branch(repo, "fix", GOOD_PATCH, "worker: fix").endswith("branch fix")
    assert "/ len(values)\n" in look(repo, "show", "fix:calc.py")
    after = state(repo)
    assert after.pop("branches") != before.pop("branches")
    assert {k: v for k, v in after.items() if not k.startswith(".git/")} == {
        k: v for k, v in before.items() if not k.startswith(".git/")
    }
    assert after[".git/config"] == before[".git/config"]
    assert after.get(".git/index") == before.get(".git/index")
    assert apply_to_worktree(repo, GOOD_PATCH) == "applied to the working tree"
    assert "/ len(values)\n" in (repo / "calc.py").read_text()
    assert look(repo, "rev-parse", "HEAD") == before["HEAD"]
    no_marker(marker)


def test_a_branch_that_cannot_be_made_is_a_one_line_usage_error(make_repo, tmp_path):
    repo = make_repo(BUGGY)
    make_hostile(repo, tmp_path, "fsmonitor")
    with pytest.raises(UsageError, match="does not apply to HEAD"):
        commit_on_branch(repo, "fix", GOOD_PATCH.replace("(len", "(LEN"), "m")
    with pytest.raises(UsageError, match="already exists"):
        commit_on_branch(repo, "main", GOOD_PATCH, "m")
    with pytest.raises(UsageError, match="not a valid branch name"):
        commit_on_branch(repo, "a..b", GOOD_PATCH, "m")


ODD_NAME = os.fsdecode(b"caf\xe9 \xff.txt")
ODD_BYTES = b"latin-1: caf\xe9, stray \xff\xfe\n"
WIDE = "x = '" + "w" * 999_990 + "needle'\n"


def odd_repo(make_repo, tmp_path: Path) -> Path:
    """Non-UTF-8 name and content, a 1,000,000-character line, a submodule, a 100 MB file."""
    repo = make_repo({**BUGGY, "wide.py": WIDE}, commit=False)
    (repo / ODD_NAME).write_bytes(ODD_BYTES)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    lib = make_repo({"lib.py": "X = 1\n"}, name="lib")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-q", "-m", "submodule")
    with open(repo / "big.bin", "wb") as big:  # untracked, sparse: reads as 100 MB of zeros
        big.truncate(100 * 1024 * 1024)
    return repo


def test_odd_bytes_huge_files_and_a_submodule_are_copied_and_read_within_limits(
    make_repo, tmp_path
):
    repo = odd_repo(make_repo, tmp_path)
    before = state(repo)
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    assert (ws.path / ODD_NAME).read_bytes() == ODD_BYTES
    assert (ws.path / "wide.py").read_text() == WIDE
    assert (ws.path / "big.bin").stat().st_size == 100 * 1024 * 1024
    # The populated submodule's tracked files come from the checkout (tomlkit's test data).
    assert (ws.path / ".gitmodules").is_file() and (ws.path / "vendor/lib/lib.py").is_file()
    cap = Truncation(max_bytes=6000, max_lines=150)
    ctx = ToolContext(
        workspace=ws.path,
        box=LocalSandbox(workspace=ws.path, control_dir=tmp_path / "ctl", limits=Limits()),
        paths=language_paths(),
        truncation=cap,
        test_cmd="true",
    )
    tools = ToolRegistry(tools=default_tools())
    calls = {
        "list": tools.call("list_dir", {}, ctx),
        "big": tools.call("read_file", {"path": "big.bin"}, ctx),
        "wide": tools.call("read_file", {"path": "wide.py"}, ctx),
        "odd": tools.call("read_file", {"path": ODD_NAME}, ctx),
        "search": tools.call("search", {"pattern": "^x = 'w|def mean"}, ctx),
    }
    for obs in calls.values():
        assert len(obs.text.encode("utf-8", "surrogateescape")) <= 6000
        assert "internal error" not in obs.text
    assert "big.bin" in calls["list"].text and "vendor" in calls["list"].text
    assert "too large to read" in calls["big"].text
    assert "chars cut" in calls["wide"].text
    assert calls["odd"].ok or "binary" in calls["odd"].text
    assert "wide.py" in calls["search"].text and "over 1024 KiB" in calls["search"].text
    # An edit to the oddly named file is a diff like any other.
    (ws.path / ODD_NAME).write_bytes(ODD_BYTES + b"more\n")
    assert len(ws.changed_files()) == 1
    assert "more" in ws.diff()
    assert state(repo) == before


def test_fifty_thousand_files_are_copied_and_the_tools_stay_bounded(make_repo, tmp_path):
    # How long it takes is a benchmark's business (bench/scale.py), not a test's.
    repo = make_repo({"README.md": "many\n"}, commit=False)
    many = repo / "many"
    many.mkdir()
    for i in range(50_000):
        (many / f"f{i:05d}.txt").write_text(f"{i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "many")
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    assert len(os.listdir(ws.path / "many")) == 50_000
    ctx = ToolContext(
        workspace=ws.path,
        box=LocalSandbox(workspace=ws.path, control_dir=tmp_path / "ctl", limits=Limits()),
        paths=language_paths(),
        truncation=Truncation(max_bytes=6000, max_lines=150),
        test_cmd="true",
    )
    tools = ToolRegistry(tools=default_tools())
    listed = tools.call("list_dir", {"path": "many"}, ctx)
    found = tools.call("search", {"pattern": "^49999$"}, ctx)
    assert "(50000 entries)" in listed.text and "more entries not shown" in listed.text
    # The search reads the first MAX_FILES_SCANNED files, in name order, and no more: the line
    # is in many/f49999.txt, past them.
    assert found.data["files_scanned"] == MAX_FILES_SCANNED < 50_000
    assert found.data["matches"] == 0 and found.data["capped"]
    # ... and says so: "no matches" alone would tell the model the line does not exist.
    assert f"only the first {MAX_FILES_SCANNED} files in path order were searched" in found.text
    assert all(len(o.text.encode()) <= 6000 for o in (listed, found))


@pytest.mark.docker
def test_sandbox_run_tests_on_a_hostile_repo(make_repo, tmp_path, sandbox_image):
    repo = odd_repo(make_repo, tmp_path)
    marker = make_hostile(repo, tmp_path, "fsmonitor", "hooksPath", "filter")
    before = state(repo)
    proc = worker("sandbox", "run-tests", "--repo", str(repo))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("0 passed, 1 failed, 0 errors, 0 skipped")
    assert "Traceback" not in proc.stderr
    no_marker(marker)
    assert state(repo) == before


@pytest.mark.docker
@pytest.mark.parametrize("deliver", [["--apply"], ["--branch", "worker/fix"]])
def test_fix_delivers_to_a_hostile_repo_running_nothing(make_repo, tmp_path, deliver):
    repo = make_repo(BUGGY, commit=False)
    (repo / ODD_NAME).write_bytes(ODD_BYTES)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    marker = make_hostile(repo, tmp_path, "fsmonitor", "hooksPath", "filter", "gpg")
    before = state(repo)
    script = [tool_call("list_dir", {}), tool_call("apply_patch", {"patch": GOOD_PATCH})]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", *deliver, base_url=server.base_url)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    no_marker(marker)
    after = state(repo)
    assert after["HEAD"] == before["HEAD"]
    assert after[".git/config"] == before[".git/config"]
    if deliver == ["--apply"]:
        assert "/ len(values)\n" in (repo / "calc.py").read_text()
        assert report(tmp_path / "out")["delivered"].startswith("applied")
    else:
        assert after == {**before, "branches": after["branches"]} | {
            k: v for k, v in after.items() if k.startswith(".git/") and k != ".git/config"
        }
        assert "/ len(values)\n" in look(repo, "show", "worker/fix:calc.py")
