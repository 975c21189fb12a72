"""Truncation: outputs fit their budget and say what was cut and where the rest is."""

from __future__ import annotations

import re

import pytest

from policies.truncation import Truncation


def numbered(n: int) -> str:
    return "".join(f"line {i}\n" for i in range(1, n + 1))


def test_text_within_budget_is_returned_unchanged() -> None:
    text = numbered(10)
    result = Truncation(max_bytes=1000, max_lines=10).apply(text)
    assert result.text == text
    assert not result.truncated
    assert (result.total_bytes, result.total_lines) == (len(text), 10)


def test_too_many_lines_keeps_head_and_tail_whole_lines() -> None:
    result = Truncation(max_bytes=100_000, max_lines=11).apply(numbered(1000))
    lines = result.text.splitlines()
    assert result.truncated and result.total_lines == 1000
    assert lines[:5] == [f"line {i}" for i in range(1, 6)]
    assert lines[-5:] == [f"line {i}" for i in range(996, 1001)]
    assert len(lines) <= 11
    assert "990 lines" in lines[5]


def test_marker_counts_exactly_what_was_cut() -> None:
    text = numbered(1000)
    result = Truncation(max_bytes=100_000, max_lines=11).apply(text)
    match = re.search(r"\[\.\.\. (\d+) lines, (\d+) bytes cut", result.text)
    assert match is not None
    kept = result.text.replace(match.group(0) + " ...]\n", "")
    assert int(match.group(2)) == len(text.encode()) - len(kept.encode())
    assert int(match.group(1)) == 1000 - len(kept.splitlines())


def test_marker_names_where_the_full_output_is() -> None:
    result = Truncation(max_lines=5).apply(numbered(50), full_path="/tmp/run/out.log")
    assert "full output: /tmp/run/out.log" in result.text


@pytest.mark.parametrize("max_bytes", [100, 500, 4000])
@pytest.mark.parametrize(
    "text", [numbered(5000), "x" * 50_000, "é" * 9_999, "a\n" * 3 + "b" * 9000]
)
def test_result_with_marker_fits_the_byte_budget(max_bytes: int, text: str) -> None:
    result = Truncation(max_bytes=max_bytes, max_lines=10_000).apply(text, full_path="out.log")
    assert result.truncated
    assert len(result.text.encode()) <= max_bytes
    assert result.text.encode().decode() == result.text  # no broken characters


def test_one_huge_line_keeps_its_start_and_end() -> None:
    text = "START" + "x" * 100_000 + "END"
    result = Truncation(max_bytes=200).apply(text)
    assert result.text.startswith("START")
    assert result.text.endswith("END")
    assert "bytes cut" in result.text


def test_head_fraction_shifts_what_is_kept() -> None:
    result = Truncation(max_bytes=100_000, max_lines=101, head_fraction=0.9).apply(numbered(1000))
    lines = result.text.splitlines()
    assert lines[89] == "line 90"
    assert lines[-1] == "line 1000"
    assert len(lines) == 101


def test_multibyte_text_is_cut_on_character_boundaries() -> None:
    result = Truncation(max_bytes=101).apply("日本語" * 1000)
    assert "\ufffd" not in result.text
    assert len(result.text.encode()) <= 101


@pytest.mark.parametrize(
    "kwargs", [{"max_bytes": 0}, {"max_lines": -1}, {"head_fraction": 0.0}, {"head_fraction": 1.0}]
)
def test_nonsense_settings_are_rejected(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Truncation(**kwargs)  # type: ignore[arg-type]
