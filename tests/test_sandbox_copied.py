"""The working copy copied into the container (a Docker daemon that cannot see our disk): the
same promises as a mounted copy, proved from inside a real container."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policies.limits import Limits
from sandbox.container import placement as where
from sandbox.container.placement import PLACEMENT_ENV
from sandbox.ecosystems import language_paths
from sandbox.errors import SandboxError
from sandbox.testrun.run import run_tests
from sandbox.testrun.verdict import judge

pytestmark = pytest.mark.docker


@pytest.fixture(autouse=True)
def copied(monkeypatch):
    monkeypatch.setenv(PLACEMENT_ENV, "copied")


def test_the_copy_is_the_containers_own_and_follows_the_tools_edits(make_repo, open_sandbox):
    repo = make_repo({"app.py": "x = 1\n", "old.py": "gone = 1\n", "pkg/mod.py": "y = 2\n"})
    session = open_sandbox(repo)
    box, ws = session.box, session.workspace.path
    assert box.placement == "copied"
    mounts = box.run("cat /proc/self/mountinfo").output
    assert str(ws) not in mounts  # nothing of this machine's folders is mounted
    assert box.run("cat app.py pkg/mod.py").output == "x = 1\ny = 2\n"
    # What the tools do to the host copy is what the next command sees: edits, new files,
    # removed files and folders.
    (ws / "app.py").write_text("x = 42\n")
    (ws / "new").mkdir()
    (ws / "new" / "b.py").write_text("b = 1\n")
    (ws / "old.py").unlink()
    (ws / "pkg" / "mod.py").unlink()
    (ws / "pkg").rmdir()
    r = box.run("cat app.py new/b.py; ls")
    assert r.output.splitlines()[:2] == ["x = 42", "b = 1"]
    assert "old.py" not in r.output and "pkg" not in r.output
    # ...and what a command writes stays in the container: the host copy is the tools' alone.
    assert box.run("echo junk > made.txt && echo y >> app.py").ok
    assert not (ws / "made.txt").exists() and (ws / "app.py").read_text() == "x = 42\n"


def test_the_copy_is_a_repository_whose_git_directory_never_comes_back(make_repo, open_sandbox):
    repo = make_repo({"app.py": "x = 1\n", "pkg/mod.py": "y = 2\n"})
    session = open_sandbox(repo)
    box, ws = session.box, session.workspace.path
    # Made at the first git call, not before: a command that runs no git pays nothing, and
    # one with a repository of its own named (GIT_DIR: the edit tools' `git apply`) makes none.
    assert box.run("ls -A .git").output == ""
    assert not box.run("GIT_DIR=/nonexistent/repository git status").ok
    assert box.run("ls -A .git").output == ""
    r = box.run("git rev-parse --show-toplevel && git ls-files && git status --porcelain")
    assert r.output == "/workspace\napp.py\npkg/mod.py\n", r.output
    box.sync_back()  # as set-up brings back what its command wrote into the tree
    assert not (ws / ".git").exists()
    assert session.workspace.diff() == ""


def test_protected_files_and_the_runner_are_read_only_in_the_container(make_repo, open_sandbox):
    repo = make_repo({"app.py": "x = 1\n", "tests/test_app.py": "def test_x():\n    pass\n"})
    box = open_sandbox(repo, protect=language_paths().protection).box
    r = box.run("echo hacked > tests/test_app.py")
    assert r.exit_code != 0 and "Permission denied" in r.output
    for attack in (
        "rm -f tests/test_app.py",
        "mv tests/test_app.py tests/old.py",
        "chmod u+w tests/test_app.py",
        "echo 'print(1)' > /run/worker/runner.py",
        "chmod u+w /run/worker/runner.py",
        "rm -f /run/worker/runner.py",
    ):
        assert box.run(attack).exit_code != 0, attack
    assert box.run("cat tests/test_app.py").output.startswith("def test_x")
    assert box.run("echo y = 2 >> app.py && touch tests/new_output.txt").ok


def test_links_that_lead_out_never_reach_the_container(make_repo, open_sandbox, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    repo = make_repo({"app.py": "x = 1\n"})
    os.symlink("app.py", repo / "inside.py")
    os.symlink(str(secret), repo / "out.txt")
    session = open_sandbox(repo)
    r = session.box.run("readlink inside.py; cat inside.py; ls out.txt; cat /proc/self/mountinfo")
    assert r.output.startswith("app.py\nx = 1\n")
    assert "No such file" in r.output and "host secret" not in r.output
    # A link a command makes in the container leads to the container's own files only, and
    # nothing of it comes back to the host copy.
    session.box.run(f"ln -s {secret} stolen.txt")
    assert not (session.workspace.path / "stolen.txt").exists()
    assert "host secret" not in session.box.run("cat stolen.txt").output


def test_code_that_rewrites_a_fixture_is_named_and_put_back(make_repo, open_sandbox):
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
    (session.workspace.path / "app.py").write_text(
        "import pathlib\n"
        "def shout(s):\n"
        "    pathlib.Path('tests/golden/out.txt').write_text(s + '\\n')\n"
        "    return s\n"
    )
    run = run_tests(session.box, test_cmd="python -m pytest tests")
    assert run.result.fixtures_put_back == ("tests/golden/out.txt",)
    assert not judge(run, baseline=baseline).passed
    # Put back before the next command: the container has the snapshot's bytes again.
    assert session.box.run("cat tests/golden/out.txt").output == "HI\n"


def test_a_test_that_writes_its_toml_data_back_passes_and_test_settings_stay_locked(
    make_repo, open_sandbox
):
    """A TOML library's tests load `tests/examples/*.toml` and write it back (tomlkit's
    test_toml_file): test data, so it passes as in a checkout; `tests/pytest.ini` is the
    runner's settings and stays locked."""
    files = {
        "app.py": "def dump(text):\n    return text\n",
        "tests/pytest.ini": "[pytest]\n",
        "tests/examples/example.toml": "title = 'x'\n",
        "tests/test_app.py": (
            "import pathlib, app\n"
            "def test_round_trip():\n"
            "    path = pathlib.Path(__file__).parent / 'examples' / 'example.toml'\n"
            "    text = path.read_text()\n"
            "    path.write_text(app.dump(text))\n"
            "    assert path.read_text() == text\n"
        ),
    }
    session = open_sandbox(make_repo(files), protect=language_paths().protection)
    run = run_tests(session.box, test_cmd="python -m pytest tests")
    assert run.passed and run.result.fixtures_put_back == ()
    r = session.box.run("echo '[pytest]' > tests/pytest.ini")
    assert r.exit_code != 0 and "Permission denied" in r.output


def test_a_fixture_swapped_for_a_link_is_named_and_replaced(make_repo, open_sandbox):
    files = {"app.py": "x = 1\n", "tests/data/a.txt": "A\n", "tests/test_a.py": "def test_a():\n"}
    session = open_sandbox(make_repo(files), protect=language_paths().protection)
    r = session.box.run("mv tests/data tests/old && ln -s /etc tests/data && echo done")
    assert r.output.strip() == "done" and r.fixtures_put_back == ("tests/data/a.txt",)
    r = session.box.run("ls -ld tests/data | cut -c1; cat tests/data/a.txt")
    assert r.output == "d\nA\n"  # a real folder again, holding the snapshot's bytes


def test_a_test_that_fills_the_disk_is_stopped(make_repo, open_sandbox):
    session = open_sandbox(make_repo({"a.txt": "x"}), limits=Limits(workspace_mb=64))
    r = session.box.run("dd if=/dev/zero of=big bs=1M count=4000 2>&1; echo finished")
    assert r.disk_exceeded and not r.ok
    assert "finished" not in r.output
    assert "wrote more to the workspace" in r.describe()
    assert session.box.run("rm big && echo again > small && cat small").output == "again\n"


def test_a_command_that_outlives_its_limit_is_killed_with_its_children(make_repo, open_sandbox):
    session = open_sandbox(make_repo({"a.txt": "x"}), limits=Limits(command_timeout_s=60))
    r = session.box.run("(sleep 300 &) ; sleep 300", timeout_s=2)
    assert r.timed_out and r.duration_s < 30
    assert "sleep" not in session.box.run("ps -eo comm").output


def test_staged_files_reach_the_container(make_repo, open_sandbox, tmp_path: Path):
    session = open_sandbox(make_repo({"a.txt": "x"}))
    path = session.box.stage("plugin.py", b"VALUE = 7\n")
    assert session.box.run(f"cat {path}").output == "VALUE = 7\n"
    assert session.box.run(f"echo x > {path}").exit_code != 0


def test_a_same_named_folder_that_is_not_ours_means_copied(
    make_repo, docker_client, sandbox_image, tmp_path, monkeypatch
):
    """A daemon that mounts a folder of the copy's name that does not hold what the worker
    wrote (another machine's): caught at the first command, which runs in a copied sandbox."""
    from sandbox.container import placement
    from sandbox.container.docker_sandbox import DockerSandbox
    from sandbox.worktree.workspace import snapshot

    theirs = tmp_path / "theirs"  # the daemon's folder of that name: empty of what we wrote
    theirs.mkdir()

    class ElsewhereSandbox(DockerSandbox):
        def _start_in(self, where):
            if where != "mounted":
                return super()._start_in(where)
            ours, self.control_dir = self.control_dir, theirs
            try:
                super()._start_in(where)
            finally:
                self.control_dir = ours

    monkeypatch.delenv(PLACEMENT_ENV)
    monkeypatch.setattr(placement, "_known", {})
    ws = snapshot(make_repo({"a.txt": "from the repo\n"}), tmp_path / "copy")
    box = ElsewhereSandbox(
        client=docker_client, image=sandbox_image, workspace=ws.path,
        control_dir=tmp_path / "control", limits=Limits(),
    )  # fmt: skip
    with box:
        assert box.placement == "mounted"
        r = box.run("cat a.txt")
        assert r.output == "from the repo\n" and box.placement == "copied"
    assert placement.known(docker_client) == "copied"  # the next sandbox skips the probe
    monkeypatch.setenv(PLACEMENT_ENV, "mounted")
    forced = ElsewhereSandbox(
        client=docker_client, image=sandbox_image, workspace=ws.path,
        control_dir=tmp_path / "control2", limits=Limits(),
    )  # fmt: skip
    with forced, pytest.raises(SandboxError, match="does not see this machine's files"):
        forced.run("cat a.txt")


def test_what_a_patch_wrote_is_looked_at_as_the_full_scan_would(tmp_path: Path):
    # After `git apply` in the container, the paths it wrote are stat'ed, not the whole tree
    # walked again (sandbox/container/placement.py: entries); they must agree with the walk,
    # links included (the walk does not go under a link to a folder).
    root = tmp_path / "copy"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("a = 1\n")
    (root / "pkg" / "sub" / "b.py").write_text("b = 2\n")
    (root / "alias").symlink_to("pkg")
    rels = ["pkg", "pkg/a.py", "pkg/sub", "pkg/sub/b.py", "alias", "alias/a.py", "pkg/gone.py"]
    full = where.scan(root)
    assert where.entries(root, rels) == {rel: full.get(rel) for rel in rels}
