"""What the model is told about a tool; no dependency, so the model client can import it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """A tool as the model sees it: a name, a description and a JSON Schema for its arguments.
    The model client turns it into each wire format (worker/llm)."""

    name: str
    description: str
    parameters: dict[str, Any]
