"""sandbox/worktree/tree_digest.py: a small tree's digest, read in-process, changes with
everything git's tree id changes with, never blocks on what the sandbox's code left, and gives
way to git for a big tree."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from sandbox.worktree.tree_digest import small_tree_digest
from sandbox.worktree.workspace import snapshot


def make_tree(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "calc.py").write_text("def mean(v):\n    return sum(v) / len(v)\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "link").symlink_to("pkg/calc.py")
    return root


def test_equal_trees_have_equal_digests_and_every_change_shows(tmp_path):
    a, b = make_tree(tmp_path / "a"), make_tree(tmp_path / "b")
    first = small_tree_digest(a)
    assert first is not None and first == small_tree_digest(b)
    changes = [
        lambda t: (t / "pkg" / "calc.py").write_text("def mean(v):\n    return sum(v) / len(v)\n "),
        lambda t: (t / "run.sh").chmod(0o755),
        lambda t: ((t / "link").unlink(), (t / "link").symlink_to("run.sh")),
        lambda t: (t / "pkg" / "new.py").write_text(""),
        lambda t: (t / "run.sh").unlink(),
        lambda t: (t / "pkg" / "calc.py").rename(t / "pkg" / "calc2.py"),
    ]
    for i, change in enumerate(changes):
        tree = make_tree(tmp_path / f"c{i}")
        change(tree)
        assert small_tree_digest(tree) not in (None, first), i


def test_a_fifo_left_in_the_tree_is_not_opened(tmp_path):
    tree = make_tree(tmp_path / "t")
    os.mkfifo(tree / "pipe")
    answer: list[str | None] = []
    reader = threading.Thread(target=lambda: answer.append(small_tree_digest(tree)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert answer and answer[0] is not None
    assert answer[0] != small_tree_digest(make_tree(tmp_path / "u"))


def test_a_big_tree_is_left_to_git(tmp_path):
    tree = make_tree(tmp_path / "repo")
    for i in range(30):
        (tree / "pkg" / f"m{i}.py").write_text(f"x = {i}\n")
    assert small_tree_digest(tree, max_files=20) is None
    assert small_tree_digest(tree, max_bytes=100) is None
    assert small_tree_digest(tree) is not None


def test_the_workspace_hash_is_read_here_for_a_small_copy(tmp_path):
    ws = snapshot(make_tree(tmp_path / "repo"), tmp_path / "dest", owner_uid=None)
    before = ws.content_hash()
    assert before.startswith("tree-sha256:")  # no git process
    (ws.path / "run.sh").chmod(0o755)
    after = ws.content_hash()
    assert after.startswith("tree-sha256:") and after != before
    (ws.path / "run.sh").chmod(0o644)
    assert ws.content_hash() == before
