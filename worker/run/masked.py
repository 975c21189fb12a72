"""The model as the loop sees it, with the run's secrets masked in every request it is sent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policies.secrets import Secrets
from worker.llm.types import PLAIN, CallSettings, Messages, ModelReply, ToolSpec
from worker.loop.interfaces import Model


@dataclass(frozen=True, kw_only=True)
class MaskedModel:
    """`model`, sent every message with `secrets` masked (policies/secrets.py): what a test
    prints, a file the model reads, a traceback's URL reach the endpoint as `***`."""

    model: Model
    secrets: Secrets

    def complete(
        self, messages: Messages, tools: Sequence[ToolSpec], settings: CallSettings = PLAIN
    ) -> ModelReply:
        return self.model.complete(self.secrets.mask_data(messages), tools, settings)
