"""How long a test run of an edited tree may take (pure policy)."""

from __future__ import annotations

from policies.limits import HANG_FLOOR_S, edited_test_timeout


def test_an_edited_tree_gets_ten_times_the_first_run_within_the_command_timeout() -> None:
    assert edited_test_timeout(0.9, 300.0) == HANG_FLOOR_S  # a quick suite: a minute
    assert edited_test_timeout(20.0, 300.0) == 200.0
    assert edited_test_timeout(45.0, 300.0) == 300.0  # never past the user's own limit
    assert edited_test_timeout(45.0, None) == 450.0
