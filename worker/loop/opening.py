"""The one seam between the loop and a search: what a run does before its conversation.

The loop (worker/loop/agent.py) is what any model gets: a conversation over the tools, checked
by the harness. A search (worker/search/) exists because a small model makes mistakes: it opens
the run with moves of its own (sampled first edits, pointed at suspect lines, second choices)
and hands the conversation on, or ends the run with a verified fix. It sees the loop only
through `Moves`; the loop sees it only through `Opening`, and never imports it.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from sandbox.testrun.run import TestRun
from worker.llm.types import CallSettings, ModelReply, ToolCall, ToolSpec
from worker.loop.trace import Trace
from worker.loop.turns import StepInfo, Turn

# The loop's conversation, a list each turn appends to; a model call reads it as the read-only
# `Messages` of worker/llm/types.py.
Conversation = list[dict[str, Any]]


class Moves(Protocol):
    """What an opening may do with the run: ask, run calls, undo and redo edits, within the
    run's budgets; every move traced and counted as the loop's own."""

    baseline: TestRun | None
    last_tests: TestRun | None
    trace: Trace

    @property
    def steps(self) -> int: ...
    def check_budgets(self) -> None: ...
    def ask(self, messages: Conversation, settings: CallSettings) -> ModelReply: ...
    def run_calls(
        self, messages: Conversation, reply: ModelReply, *, idle: bool = True
    ) -> Turn: ...
    def undo_edits(self, calls: Sequence[ToolCall]) -> bool: ...
    def redo_edits(self, calls: Sequence[ToolCall]) -> None: ...
    def grouped(self, **ids: int) -> AbstractContextManager[None]: ...
    def held(self, lines: list[StepInfo]) -> AbstractContextManager[None]: ...
    def tell(self, info: StepInfo) -> None: ...


class Opening(Protocol):
    """Before the conversation: the tools the prompt describes, what the first message says of
    the suspect lines, and the opening moves (a verified fix, or the first call's settings)."""

    def describe(self, specs: Sequence[ToolSpec]) -> list[ToolSpec]: ...
    def hint(self, baseline: TestRun) -> str: ...
    def play(self, moves: Moves, messages: Conversation) -> Turn: ...


class Plain:
    """No opening: every tool described, no suspects named, the conversation starts at once."""

    def describe(self, specs: Sequence[ToolSpec]) -> list[ToolSpec]:
        return list(specs)

    def hint(self, baseline: TestRun) -> str:
        return ""

    def play(self, moves: Moves, messages: Conversation) -> Turn:
        return Turn()
