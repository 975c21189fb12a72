"""The ranking of suspect lines (pure logic): Ochiai first, structure last among equals."""

from __future__ import annotations

from sandbox.ecosystems.python.lines_run import LineCounts
from worker.search.suspects import rank, render

SOURCE = """\
def first(items, default):
    try:
        for item in items:
            if item is not None:
                return item
    except TypeError:
        pass
    return not default
"""


def counts(lines: dict[int, tuple[int, int]], *, failed=2, passed=3, path="pkg/mod.py"):
    return LineCounts(failed=failed, passed=passed, lines={path: lines})


def test_lines_run_by_failing_tests_and_fewest_passing_ones_rank_first(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(SOURCE)
    found = rank(
        counts({2: (2, 3), 3: (2, 3), 4: (2, 3), 5: (1, 3), 8: (2, 0), 6: (0, 1)}),
        workspace=tmp_path,
        allowed=lambda rel: True,
    )
    # Line 8 runs only in failing tests; among the lines every test runs, the condition comes
    # first and `try:` last; line 6 (only passing tests ran it) is no suspect at all.
    assert [s.line for s in found] == [8, 4, 3, 2, 5]
    assert found[0].text == "return not default" and found[0].score == 1.0
    # With the lines around it, numbered as read_file numbers them, the line itself marked.
    assert found[0].around.splitlines() == [
        " 6|     except TypeError:", " 7|         pass", ">8|     return not default"
    ]  # fmt: skip
    assert render(found, failed=2).splitlines()[0] == (
        "  pkg/mod.py:8: return not default   (run by 2 of 2 failing tests, 0 passing)"
    )


def test_among_equal_lines_conditions_come_first_and_structure_last(tmp_path):
    lines = ["total = a + b", "for x in items:", "else:", "flag = x >= limit",
             "return a is b", "while busy:", "f = lambda: x", "def g(a) -> int:"]  # fmt: skip
    (tmp_path / "mod.py").write_text("\n".join(lines) + "\n")
    found = rank(
        counts({n: (1, 1) for n in range(1, len(lines) + 1)}, path="mod.py"),
        workspace=tmp_path,
        allowed=lambda rel: True,
    )
    assert [s.text for s in found] == [
        "flag = x >= limit", "return a is b", "while busy:",  # decide
        "total = a + b", "for x in items:", "f = lambda: x",  # compute
        "else:", "def g(a) -> int:",  # structure
    ]  # fmt: skip


def test_test_files_refused_paths_and_lines_past_the_end_are_left_out(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "helpers.py").write_text("x = 1\n")
    (tmp_path / "mod.py").write_text("x = 1\n")
    (tmp_path / "secret.py").write_text("x = 1\n")
    data = LineCounts(
        failed=1,
        passed=0,
        lines={"tests/helpers.py": {1: (1, 0)}, "mod.py": {1: (1, 0), 9: (1, 0)},
               "secret.py": {1: (1, 0)}},
    )  # fmt: skip
    found = rank(data, workspace=tmp_path, allowed=lambda rel: rel != "secret.py")
    assert [s.where() for s in found] == ["mod.py:1"]


def test_no_counts_no_suspects(tmp_path):
    assert rank(LineCounts(why_empty="x"), workspace=tmp_path, allowed=lambda rel: True) == []
    assert render([], failed=0) == ""
