"""The folders set-up writes inside the tree that belong to the environment (node_modules): which
are found, and the links laid in their place. In-process, real files; the move itself runs in a
container in tests/test_node_setup.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sandbox.ecosystems.node.setup_infer import SCRATCH
from sandbox.setup.tree_dirs import find_tree_dirs, link_paths
from sandbox.worktree.overlay import lay_over, link_target

MOVE_DIRS = Path(__file__).parent.parent / "sandbox" / "setup" / "move_dirs.py"


def test_the_outermost_node_modules_are_found_never_through_a_link(tmp_path):
    for rel in (
        "node_modules/a/node_modules/b",  # inside one: not looked at
        "packages/lib/node_modules/c",
        ".git/node_modules",
        ".yarn/cache",
        "deep/1/2/3/4/5/6/node_modules",  # deeper than MAX_DEPTH
    ):
        (tmp_path / rel).mkdir(parents=True)
    (tmp_path / "linked").symlink_to(tmp_path / "packages")
    found = find_tree_dirs(tmp_path, ("node_modules", ".yarn/cache", ".yarn/unplugged"))
    assert found == [".yarn/cache", "node_modules", "packages/lib/node_modules"]


def test_only_the_links_set_up_makes_are_laid_and_never_over_the_trees_own(tmp_path):
    overlay, tree = tmp_path / "overlay", tmp_path / "tree"
    (overlay / "packages/lib").mkdir(parents=True)
    tree.mkdir()
    (overlay / "node_modules").symlink_to(link_target("node_modules"))
    (overlay / "packages/lib/node_modules").symlink_to(link_target("packages/lib/node_modules"))
    (overlay / "evil").symlink_to("/etc")  # not one set-up makes: never laid
    (overlay / "_version.py").write_text("v = 1\n")
    (tree / "packages/lib").mkdir(parents=True)
    (tree / "packages/lib/node_modules").mkdir()  # the tree's own folder stays
    laid = lay_over(overlay, tree)
    assert sorted(laid) == ["_version.py", "node_modules"]
    assert os.readlink(tree / "node_modules") == "/opt/worker-deps/tree/node_modules"
    assert not (tree / "packages/lib/node_modules").is_symlink()
    assert not (tree / "evil").exists()


def test_paths_read_back_from_an_image_label_are_checked():
    assert link_paths(["node_modules", "../x", "/abs", "a/../b", "", 3, "p/node_modules"]) == (
        "node_modules",
        "p/node_modules",
    )


def test_a_moved_folder_keeps_what_its_links_named(tmp_path):
    # The script set-up runs in its container, here on plain folders: npm's link to a workspace
    # package becomes absolute (the same place in the tree); a link within stays relative.
    workspace, dest = tmp_path / "workspace", tmp_path / "deps"
    (workspace / "packages/lib").mkdir(parents=True)
    (workspace / "node_modules/.bin").mkdir(parents=True)
    (workspace / "node_modules/a").mkdir()
    (workspace / "node_modules/lib").symlink_to("../packages/lib")
    (workspace / "node_modules/.bin/a").symlink_to("../a/cli.js")
    (workspace / ".yarn/cache").mkdir(parents=True)
    scratch = json.dumps(["node_modules/.cache", "node_modules/.vite-temp", "other/.x"])
    ran = subprocess.run(
        [sys.executable, str(MOVE_DIRS), str(workspace), str(dest), scratch]
        + ["node_modules", ".yarn/cache", "missing"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert ran.stdout.strip() == '["node_modules", ".yarn/cache"]'
    moved = dest / "node_modules"
    assert os.readlink(workspace / "node_modules") == str(moved)
    assert os.readlink(moved / "lib") == str(workspace / "packages/lib")
    assert os.readlink(moved / ".bin/a") == "../a/cli.js"
    # The installer's scratch folders are links to the run's /tmp, in the folders it names only.
    assert os.readlink(moved / ".cache") == "/tmp" and os.readlink(moved / ".vite-temp") == "/tmp"
    assert os.listdir(dest / ".yarn/cache") == []


def test_a_file_vitest_s_type_check_writes_inside_its_dist_is_a_link_into_tmp(tmp_path):
    # tsc writes vitest's build info into vitest's own dist folder, which the tests' read-only
    # root cannot take: a link to a file of its own in /tmp, where npm and where pnpm put it.
    workspace, dest = tmp_path / "workspace", tmp_path / "deps"
    store = "node_modules/.pnpm/vitest@{}/node_modules/vitest/dist"
    hoisted, pnpm, older = "node_modules/vitest/dist", store.format("5.1.2"), store.format("4.0.1")
    other = "node_modules/.pnpm/vite@7.0.0/node_modules/vite/dist"
    for folder in (hoisted, pnpm, older, other):
        (workspace / folder).mkdir(parents=True)
    (workspace / older / "tsconfig.tmp.tsbuildinfo").write_text("left by set-up")
    subprocess.run(
        [sys.executable, str(MOVE_DIRS), str(workspace), str(dest), json.dumps(SCRATCH)]
        + ["node_modules"],
        capture_output=True,
        text=True,
        check=True,
    )
    links = [os.readlink(dest / f / "tsconfig.tmp.tsbuildinfo") for f in (hoisted, pnpm)]
    assert all(ln.startswith("/tmp/worker-scratch-") for ln in links)
    assert all(ln.endswith("-tsconfig.tmp.tsbuildinfo") for ln in links)
    assert links[0] != links[1]  # a file of its own for each
    kept = dest / older / "tsconfig.tmp.tsbuildinfo"  # what set-up left is never laid over
    assert not kept.is_symlink() and kept.read_text() == "left by set-up"
    assert os.listdir(dest / other) == []
    assert os.readlink(dest / "node_modules/.vite-temp") == "/tmp"
