"""Token prices: a small built-in table, user overrides, and the cost of a model call.

An unknown model has no price (None): the cost is then reported as unknown, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from policies.errors import ConfigError


@dataclass(frozen=True, kw_only=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens.

    >>> cost(Price(input_per_mtok=2.0, output_per_mtok=8.0), _Tokens(1_000_000, 500_000))
    6.0
    """

    input_per_mtok: float
    output_per_mtok: float

    def __post_init__(self) -> None:
        for name in ("input_per_mtok", "output_per_mtok"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(f"price {name} must be a number >= 0, got {value!r}")


class TokenCounts(Protocol):
    """Anything that carries a call's token counts (worker.llm.client.Usage does)."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...


@dataclass(frozen=True)
class _Tokens:
    prompt_tokens: int
    completion_tokens: int


def _p(input_per_mtok: float, output_per_mtok: float) -> Price:
    return Price(input_per_mtok=input_per_mtok, output_per_mtok=output_per_mtok)


# List prices as published by the providers, checked 2025-08 (standard tier, uncached input;
# cached-input discounts are ignored, so costs err high). Override them when they change.
BUILTIN_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "local": _p(0.0, 0.0),
        "gpt-4o": _p(2.50, 10.00),
        "gpt-4o-mini": _p(0.15, 0.60),
        "gpt-4.1": _p(2.00, 8.00),
        "gpt-4.1-mini": _p(0.40, 1.60),
        "gpt-4.1-nano": _p(0.10, 0.40),
        "o3": _p(2.00, 8.00),
        "o3-mini": _p(1.10, 4.40),
        "o4-mini": _p(1.10, 4.40),
        "gpt-5": _p(1.25, 10.00),
        "gpt-5-mini": _p(0.25, 2.00),
        "deepseek-chat": _p(0.27, 1.10),
        "deepseek-reasoner": _p(0.55, 2.19),
    }
)

# Exact snapshot names known to carry the same price as their alias; nothing else is matched,
# since a prefix match would price e.g. "gpt-4o-2024-05-13" ($5/$15) as "gpt-4o".
ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "gpt-4o-2024-08-06": "gpt-4o",
        "gpt-4o-2024-11-20": "gpt-4o",
        "gpt-4o-mini-2024-07-18": "gpt-4o-mini",
        "gpt-4.1-2025-04-14": "gpt-4.1",
        "gpt-4.1-mini-2025-04-14": "gpt-4.1-mini",
        "gpt-4.1-nano-2025-04-14": "gpt-4.1-nano",
        "o3-2025-04-16": "o3",
        "o3-mini-2025-01-31": "o3-mini",
        "o4-mini-2025-04-16": "o4-mini",
        "gpt-5-2025-08-07": "gpt-5",
        "gpt-5-mini-2025-08-07": "gpt-5-mini",
    }
)


def parse_price(value: Price | Mapping[str, Any]) -> Price:
    """A price from an override: a Price, or a mapping with "input" and "output" (USD/Mtok).

    >>> parse_price({"input": 1, "output": 2})
    Price(input_per_mtok=1, output_per_mtok=2)
    """
    if isinstance(value, Price):
        return value
    if not isinstance(value, Mapping) or set(value) != {"input", "output"}:
        raise ConfigError(f'a price must have exactly the keys "input" and "output", got {value!r}')
    return Price(input_per_mtok=value["input"], output_per_mtok=value["output"])


def price_for(
    model: str, overrides: Mapping[str, Price | Mapping[str, Any]] | None = None
) -> Price | None:
    """The price of `model`: an override first, then the table; None when unknown.

    >>> price_for("gpt-4o-2024-08-06") == price_for("gpt-4o")
    True
    >>> price_for("gpt-4o-super") is None
    True
    >>> price_for("my-model", {"my-model": {"input": 0.5, "output": 1.5}}).output_per_mtok
    1.5
    """
    if overrides and model in overrides:
        return parse_price(overrides[model])
    name = ALIASES.get(model, model)
    if overrides and name in overrides:
        return parse_price(overrides[name])
    return BUILTIN_PRICES.get(name)


def cost(price: Price, usage: TokenCounts) -> float:
    """USD for the tokens in `usage` at `price`."""
    return (
        usage.prompt_tokens * price.input_per_mtok + usage.completion_tokens * price.output_per_mtok
    ) / 1_000_000
