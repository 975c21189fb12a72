"""The one reader of unified diffs and the one `git apply`, in-process, on diffs that real `git
diff` and GNU `diff -u` wrote."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sandbox.errors import SandboxError
from sandbox.worktree.diff import (
    APPLY_TO_INDEX,
    HEADERS,
    GitApply,
    apply_to_dir,
    diff_lines,
    file_paths,
    removed_lines,
)
from tests.conftest import MakeRepo, git

BEFORE = {
    "src/calc.py": "def add(a, b):\n    return a - b\n",
    "src/old_name.py": "".join(f"line {n}\n" for n in range(20)),
    "gone.py": "x = 1\n",
    "docs/my notes.txt": "-- a comment\n--flag\nkeep\n",
}


def _changed(make_repo: MakeRepo) -> tuple[Path, str]:
    """A repository, and `git diff` of a change to it: a file modified, one added, one deleted,
    one renamed with an edit, one whose name has a space."""
    repo = make_repo(BEFORE)
    (repo / "src/calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "src/new.py").write_text("import pytest\n")
    (repo / "gone.py").unlink()
    text = (repo / "src/old_name.py").read_text()
    (repo / "src/old_name.py").unlink()
    (repo / "src/new_name.py").write_text(text.replace("line 3\n", "line three\n"))
    (repo / "docs/my notes.txt").write_text("keep\n")
    git(repo, "add", "-A")
    return repo, git(repo, "diff", "--cached", "-M", "HEAD")


def test_the_files_of_a_real_git_diff(make_repo: MakeRepo) -> None:
    _, patch = _changed(make_repo)
    assert "+++ b/docs/my notes.txt\t" in patch  # git marks a name with a space with a tab
    assert file_paths(patch) == [
        "docs/my notes.txt", "gone.py", "src/calc.py", "src/new.py",
        "src/old_name.py", "src/new_name.py",
    ]  # fmt: skip
    assert file_paths(patch, kinds=("new",)) == [
        "docs/my notes.txt", "src/calc.py", "src/new.py", "src/new_name.py",
    ]  # fmt: skip
    assert sorted(file_paths(patch, kinds=HEADERS)) == sorted(file_paths(patch))


def test_a_pure_rename_is_named_only_by_its_extended_headers(make_repo: MakeRepo) -> None:
    repo = make_repo({"a.py": "x = 1\n"})
    git(repo, "mv", "a.py", "b.py")
    patch = git(repo, "diff", "--cached", "-M", "HEAD")
    assert "rename from a.py\nrename to b.py" in patch and "--- " not in patch
    assert file_paths(patch) == []
    assert file_paths(patch, kinds=HEADERS) == ["a.py", "b.py"]


def test_added_and_removed_lines_of_a_real_git_diff(make_repo: MakeRepo) -> None:
    _, patch = _changed(make_repo)
    kinds = [(line.kind, line.text) for line in diff_lines(patch)]
    assert ("added", "    return a + b") in kinds
    assert ("added", "import pytest") in kinds
    assert ("new", "/dev/null") in kinds  # gone.py's new side
    assert ("old", "/dev/null") in kinds  # src/new.py's old side
    # "--flag" taken out is the line "---flag": a removed line, not a header.
    assert removed_lines(patch) == ["--flag", "x = 1", "    return a - b", "line 3"]


def test_a_removed_line_that_looks_like_a_header_is_read_as_one(make_repo: MakeRepo) -> None:
    # Lines are read by prefix alone (a model's hunk counts cannot be trusted): "-- a comment"
    # taken out is "--- a comment", a header line, whose name has no a/ and so is no file.
    _, patch = _changed(make_repo)
    assert "--- a comment" in patch.splitlines()
    assert "-- a comment" not in removed_lines(patch)
    assert "a comment" not in file_paths(patch, kinds=HEADERS)


def test_gnu_diff_headers_end_at_the_tab(tmp_path: Path) -> None:
    if shutil.which("diff") is None:
        pytest.skip("no GNU diff on this machine")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a/x.py").write_text("a = 1\n")
    (tmp_path / "b/x.py").write_text("a = 2\n")
    patch = subprocess.run(
        ["diff", "-u", "a/x.py", "b/x.py"], cwd=tmp_path, capture_output=True, text=True
    ).stdout
    assert patch.startswith("--- a/x.py\t")  # then a date
    assert file_paths(patch) == ["x.py"]
    assert removed_lines(patch) == ["a = 1"]


def test_apply_to_dir_applies_a_real_diff_all_or_nothing(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    repo, patch = _changed(make_repo)
    tree = tmp_path / "plain"
    tree.mkdir()
    tar = subprocess.run(
        ["git", "-C", str(repo), "archive", "--format=tar", "HEAD"], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=tar, check=True)
    apply_to_dir(tree, patch, check_only=True)
    assert (tree / "gone.py").exists()  # a check changes nothing
    apply_to_dir(tree, patch)
    assert not (tree / "gone.py").exists()
    assert (tree / "src/calc.py").read_text().endswith("a + b\n")
    assert (tree / "src/new_name.py").exists() and not (tree / "src/old_name.py").exists()
    with pytest.raises(SandboxError, match="does not apply"):
        apply_to_dir(tree, patch)  # once only: nothing of it applies again
    assert (tree / "src/calc.py").read_text().endswith("a + b\n")
    apply_to_dir(tree, "  \n")  # an empty patch is nothing to do


def test_git_apply_keeps_config_out_and_says_so_in_shell() -> None:
    in_sandbox = GitApply(options=("--recount", "--unidiff-zero", "-p1"))
    assert in_sandbox.shell() == (
        "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git apply --recount --unidiff-zero -p1"
    )
    assert in_sandbox.args() == ("apply", "--recount", "--unidiff-zero", "-p1", "-")
    assert APPLY_TO_INDEX.env == {}  # the user's identity is read for the commit that follows
    assert APPLY_TO_INDEX.args() == ("apply", "--cached", "--whitespace=nowarn", "-")


def test_git_apply_with_no_repository_runs_nothing_the_copy_s_repository_names(
    make_repo: MakeRepo, tmp_path: Path
) -> None:
    # The sandbox's copy is a repository whose config code run there may write: a filter
    # (a program git runs on each file it reads or writes) must not run for our patch.
    repo = make_repo({"f.txt": "a\n", ".gitattributes": "f.txt filter=evil\n"})
    ran = tmp_path / "filter-ran"
    git(repo, "config", "filter.evil.clean", f"touch {ran}; cat")
    git(repo, "config", "filter.evil.smudge", f"touch {ran}; cat")
    (tmp_path / "p.diff").write_text("--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-a\n+b\n")

    def apply(how: GitApply) -> None:
        shell = f"{how.shell()} {tmp_path / 'p.diff'}"
        subprocess.run(["sh", "-c", shell], cwd=repo, check=True, capture_output=True)

    apply(GitApply(no_repository=True))
    assert (repo / "f.txt").read_text() == "b\n" and not ran.exists()
    apply(GitApply(options=("-R",)))  # inside the repository, as it was: the filter runs
    assert (repo / "f.txt").read_text() == "a\n" and ran.exists()
