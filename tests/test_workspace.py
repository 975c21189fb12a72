"""The working-tree copy: what goes in, what stays out, and the diff of what changed."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from sandbox.worktree.workspace import snapshot
from tests.conftest import git


def files_in(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.is_symlink()}


def test_copy_has_the_tree_as_it_is_without_history(make_repo, tmp_path):
    repo = make_repo({"app.py": "x = 1\n", "old.py": "gone\n", ".gitignore": "build/\n*.log\n"})
    (repo / "app.py").write_text("x = 2  # uncommitted\n")
    (repo / "new.py").write_text("untracked\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.bin").write_text("ignored\n")
    (repo / "debug.log").write_text("ignored\n")
    (repo / "old.py").unlink()  # deleted, not yet committed
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    assert files_in(ws.path) == {"app.py", "new.py", ".gitignore"}
    assert (ws.path / "app.py").read_text() == "x = 2  # uncommitted\n"
    assert not (ws.path / ".git").exists()
    # The user's repository is only read.
    assert git(repo, "status", "--porcelain").splitlines() == [
        " M app.py",
        " D old.py",
        "?? new.py",
    ]


def test_links_that_leave_the_tree_are_not_copied(make_repo, tmp_path):
    repo = make_repo({"pkg/mod.py": "x = 1\n"}, commit=False)
    os.symlink("/etc/passwd", repo / "passwd")
    os.symlink("../../outside", repo / "pkg" / "escape")
    os.symlink("mod.py", repo / "pkg" / "alias.py")
    os.symlink("pkg", repo / "pkg_link")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "links")
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    assert set(ws.skipped_links) == {"passwd", "pkg/escape"}
    assert os.readlink(ws.path / "pkg" / "alias.py") == "mod.py"
    assert os.readlink(ws.path / "pkg_link") == "pkg"
    assert not (ws.path / "passwd").exists() and not (ws.path / "passwd").is_symlink()


def test_a_folder_that_is_not_a_git_repository(tmp_path):
    tree = tmp_path / "plain"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("a\n")
    for noise in (".venv/lib", "__pycache__", "node_modules/x"):
        (tree / noise).mkdir(parents=True)
        (tree / noise / "junk").write_text("j\n")
    # A gitfile (`.git` naming a repository elsewhere) is no file of the project, at any depth.
    (tree / ".git").write_text("gitdir: /etc\n")
    (tree / "src" / ".git").write_text("gitdir: /etc\n")
    ws = snapshot(tree, tmp_path / "run", owner_uid=None)
    assert files_in(ws.path) == {"src/a.py"}


def test_a_subfolder_of_a_repository(make_repo, tmp_path):
    repo = make_repo({"sub/a.py": "a\n", "other/b.py": "b\n"})
    ws = snapshot(repo / "sub", tmp_path / "run", owner_uid=None)
    assert files_in(ws.path) == {"a.py"}


def test_diff_applies_to_the_users_tree_and_snapshot_exports_clean(make_repo, tmp_path):
    repo = make_repo({"app.py": "def f():\n    return 1\n", "data.bin": "x"})
    (repo / "app.py").write_text("def f():\n    return 1  # mine\n")
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    (ws.path / "app.py").write_text("def f():\n    return 2  # mine\n")
    (ws.path / "added.py").write_text("new\n")
    (ws.path / "data.bin").unlink()
    (ws.path / "__pycache__").mkdir()
    (ws.path / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0")
    assert sorted(ws.changed_files()) == ["added.py", "app.py", "data.bin"]
    patch = ws.diff()
    subprocess.run(
        ["git", "-C", str(repo), "apply", "--check", "-"], input=patch.encode(), check=True
    )
    clean = tmp_path / "clean"
    clean.mkdir()
    ws.export_snapshot(clean)
    assert (clean / "app.py").read_text() == "def f():\n    return 1  # mine\n"
    assert files_in(clean) == {"app.py", "data.bin"}


def test_names_like_options_modes_and_hard_links_are_copied_times_are_new(make_repo, tmp_path):
    repo = make_repo({"run.sh": "echo hi\n", "a.py": "a\n"}, commit=False)
    odd = "--checkpoint-action=exec=touch pwned"
    (repo / odd).write_text("a name, not an option\n")
    (repo / "-C").write_text("neither\n")
    os.chmod(repo / "run.sh", 0o755)
    os.utime(repo / "a.py", (1_000_000_000, 1_000_000_000))
    os.link(repo / "a.py", repo / "hard.py")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "odd")
    started = time.time()
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    assert (ws.path / odd).read_text() == "a name, not an option\n"
    assert (ws.path / "-C").read_text() == "neither\n"
    assert not any((where / "pwned").exists() for where in (repo, ws.path, Path.cwd()))
    assert os.stat(ws.path / "run.sh").st_mode & 0o777 == 0o755
    # Times are the copy's, as in a fresh clone: no build tool takes an output a set-up image
    # made (maybe of another tree) for newer than these sources (test_java: another_tree).
    assert os.stat(ws.path / "a.py").st_mtime >= int(started)
    # A hard link in the user's tree is two files in the copy: an edit to one is one change.
    (ws.path / "hard.py").write_text("edited\n")
    assert (ws.path / "a.py").read_text() == "a\n"
    assert ws.changed_files() == ["hard.py"]
    assert (repo / "hard.py").read_text() == "a\n"


def test_a_populated_submodule_s_files_are_copied_an_empty_one_s_are_not(make_repo, tmp_path):
    # A test suite's data in a submodule (toml-test, say): its files come from the user's
    # checkout, as they are there; nothing is fetched.
    data = make_repo({"cases/one.toml": "a = 1\n"})
    other = make_repo({"x.txt": "x\n"})
    repo = make_repo({"test_data.py": "def test_x():\n    pass\n"})
    for source, where in ((data, "tests/data"), (other, "vendor/other")):
        git(repo, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(source), where)
    git(repo, "commit", "-q", "-m", "submodules")
    git(repo, "submodule", "-q", "deinit", "-f", "vendor/other")  # not populated here
    ws = snapshot(repo, tmp_path / "run", owner_uid=None)
    assert files_in(ws.path) == {"test_data.py", ".gitmodules", "tests/data/cases/one.toml"}
    assert (ws.path / "tests/data/cases/one.toml").read_text() == "a = 1\n"
