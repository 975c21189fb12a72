"""Context compaction keeps the protocol intact; stuck detection nudges, then stops."""

from __future__ import annotations

from worker.loop.history import compact
from worker.loop.stuck import StuckDetector


def conversation(n: int, size: int) -> list[dict]:
    messages = [{"role": "system", "content": "S" * 500}, {"role": "user", "content": "T" * 500}]
    for i in range(n):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "x" * size})
    return messages


def test_compaction_fits_the_budget_and_keeps_pairs_prefix_and_recent():
    messages = conversation(20, 5000)
    out = compact(messages, max_chars=30_000, keep_recent=6)
    assert sum(len(m.get("content") or "") for m in out) <= 30_000
    assert out[:2] == messages[:2]  # stable prefix for prompt caches
    assert out[-6:] == messages[-6:]  # recent results whole
    assert [m.get("tool_call_id") for m in out] == [m.get("tool_call_id") for m in messages]
    assert "collapsed" in out[3]["content"]
    assert messages[3]["content"] == "x" * 5000  # the canonical history is not changed


def test_compaction_leaves_small_histories_alone():
    messages = conversation(3, 100)
    assert compact(messages, max_chars=30_000) is messages


def test_stuck_detector_nudges_then_stops_and_resets_on_change():
    d = StuckDetector(nudge_at=2, stop_at=3)
    assert d.observe("read_file", {"path": "a"}, "same") is None
    assert d.observe("read_file", {"path": "a"}, "same") == "nudge"
    assert d.observe("read_file", {"path": "a"}, "same") == "stop"
    assert d.observe("read_file", {"path": "b"}, "same") is None  # a different call
    assert d.observe("read_file", {"path": "b"}, "other") is None  # a different result


def test_stuck_detector_catches_cycles():
    d = StuckDetector(nudge_at=2, stop_at=3, window=9)
    cycle = [
        ("search", {"pattern": "x"}, "none"),
        ("list_dir", {}, "a b"),
        ("list_dir", {"path": "src"}, "no such directory"),
    ]
    verdicts = [d.observe(*call) for _ in range(3) for call in cycle]
    assert verdicts[:3] == [None, None, None]
    assert verdicts[3] == "nudge" and verdicts[6] == "stop"


def test_no_progress_is_detected_after_idle_steps():
    d = StuckDetector(idle_steps=3)
    assert not d.step_done(failing=2, diff_size=0)
    assert not d.step_done(failing=2, diff_size=0)
    assert not d.step_done(failing=2, diff_size=0)
    assert d.step_done(failing=2, diff_size=0)
    d2 = StuckDetector(idle_steps=2)
    for size in range(5):  # the diff keeps changing: that is progress of a kind
        assert not d2.step_done(failing=2, diff_size=size)
