"""Test ids as a runner's arguments: the one check every selection by id passes."""

from __future__ import annotations

from collections.abc import Sequence


def validate_test_ids(test_ids: Sequence[str]) -> list[str]:
    """Test ids as arguments: refuse anything that would be read as an option."""
    clean = []
    for test_id in test_ids:
        if not test_id or test_id.startswith("-") or "\0" in test_id or "\n" in test_id:
            raise ValueError(f"not a test id: {test_id!r} (expected e.g. tests/test_x.py::test_y)")
        clean.append(test_id)
    return clean
