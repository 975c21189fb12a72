"""What the loop needs of the model and of the sandbox: two interfaces, so that the loop imports
neither the HTTP client nor Docker (the wiring in worker/run/ plugs the real ones in)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from sandbox.testrun.run import TestRun
from tools.base import Observation
from worker.llm.types import PLAIN, CallSettings, Messages, ModelReply, ToolCall, ToolSpec


class Model(Protocol):
    """Anything that answers a conversation with text or tool calls."""

    def complete(
        self, messages: Messages, tools: Sequence[ToolSpec], settings: CallSettings = PLAIN
    ) -> ModelReply: ...


class Environment(Protocol):
    """What the loop needs of the sandbox: tools, tests, the diff, and a clean re-check."""

    def tool_specs(self) -> list[ToolSpec]: ...
    def call_tool(self, call: ToolCall) -> Observation: ...
    def run_tests(self, test_ids: Sequence[str] = ()) -> TestRun: ...
    def diff(self) -> str: ...
    def verify(self, patch: str) -> TestRun: ...  # the clean re-check's run of `patch`
    def verify_ahead(self, patch: str) -> None: ...  # that run, started beside the working one
    def undo_last_edit(self) -> bool: ...
    def undo_all_edits(self) -> bool: ...
    def end_by(self, at: float) -> None: ...
