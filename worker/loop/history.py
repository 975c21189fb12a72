"""Keep the conversation within bounds without breaking the tool-call protocol."""

from __future__ import annotations

from typing import Any

from worker.loop.endings import BudgetExhausted
from worker.loop.trace import Trace

COLLAPSED = (
    "[older output collapsed to save context: {size} characters; call the tool again if needed]"
)


def compact(
    messages: list[dict[str, Any]], *, max_chars: int, keep_recent: int = 6, prefix: int = 2
) -> list[dict[str, Any]]:
    """Collapse old tool results (oldest first) until the history fits in `max_chars`.

    The first `prefix` messages (system prompt and task) never change, so provider prompt caches
    keep hitting; every tool call keeps its result message (with a short text), as the protocol
    requires; the `keep_recent` newest messages are left whole.
    """
    total = history_chars(messages)
    if total <= max_chars:
        return messages
    out = list(messages)
    for i in range(prefix, max(prefix, len(out) - keep_recent)):
        if total <= max_chars:
            break
        message = out[i]
        content = message.get("content")
        if message.get("role") == "tool" and isinstance(content, str) and len(content) > 200:
            short = COLLAPSED.format(size=len(content))
            out[i] = {**message, "content": short}
            total -= len(content) - len(short)
    return out


def shrink(
    messages: list[dict[str, Any]],
    sent: list[dict[str, Any]],
    max_chars: int,
    why: Exception,
    trace: Trace,
) -> tuple[list[dict[str, Any]], int]:
    """After the endpoint said `sent` is too long: the history compacted to half its size (the
    two newest messages whole), and that size, the limit for the calls after. When compacting
    cannot make it smaller, the context budget is spent (BudgetExhausted)."""
    size = history_chars(sent)
    max_chars = max(1, min(max_chars, size) // 2)
    smaller = compact(messages, max_chars=max_chars, keep_recent=2)
    trace.event("context_too_long", chars=size, shrunk_to=history_chars(smaller))
    if history_chars(smaller) >= size:
        raise BudgetExhausted(
            f"context budget exhausted: the conversation ({size} characters) does not fit "
            f"the model's window even compacted; {why}"
        ) from why
    return smaller, max_chars


def history_chars(messages: list[dict[str, Any]]) -> int:
    """The size `compact` measures: message texts and tool-call arguments, in characters."""
    return sum(_size(m) for m in messages)


def _size(message: dict[str, Any]) -> int:
    size = len(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        size += len(str(call.get("function", {}).get("arguments", "")))
    return size
