"""Budgets of one run (steps, tokens, cost, wall clock), checked before each model call, and
the cap on one answer's length, sent with each call."""

from __future__ import annotations

from dataclasses import dataclass, replace

from policies.errors import ConfigError


def _positive(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


ANSWER_TOKENS = 1536  # one answer's cap, by default
LOCAL_ANSWER_TOKENS = 512  # one answer's cap for the bundled model, by default


@dataclass(frozen=True, kw_only=True)
class Budgets:
    """Caps of one run; `None` means no cap (steps and one answer's tokens are always capped).

    `max_completion_tokens` caps each answer (sent as the request's `max_tokens`): one tool
    call needs far less, and a model that runs away stops there instead of filling its window.
    None: ANSWER_TOKENS, or LOCAL_ANSWER_TOKENS for the bundled model, which writes 7-8 tokens
    a second here: 343 of its 344 answers in two evaluations were under 260 tokens, and each of
    the 3 that ran away cost 200 s at 1536.

    >>> Budgets().max_steps
    30
    >>> Budgets(max_steps=0)
    Traceback (most recent call last):
    ...
    ValueError: max_steps must be a positive number, got 0
    """

    max_steps: int = 30
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_wall_s: float | None = None
    max_completion_tokens: int | None = None

    def __post_init__(self) -> None:
        _positive("max_steps", self.max_steps, optional=False)
        _positive("max_tokens", self.max_tokens, optional=True)
        _positive("max_cost_usd", self.max_cost_usd, optional=True)
        _positive("max_wall_s", self.max_wall_s, optional=True)
        _positive("max_completion_tokens", self.max_completion_tokens, optional=True)


def answer_cap(budgets: Budgets, *, bundled: bool) -> int:
    """The cap on one answer's tokens: the configured one, else the default for the model.

    >>> answer_cap(Budgets(), bundled=True), answer_cap(Budgets(), bundled=False)
    (512, 1536)
    >>> answer_cap(Budgets(max_completion_tokens=2048), bundled=True)
    2048
    """
    if budgets.max_completion_tokens is not None:
        return budgets.max_completion_tokens
    return LOCAL_ANSWER_TOKENS if bundled else ANSWER_TOKENS


@dataclass(frozen=True, kw_only=True)
class BudgetUsage:
    """What a run has used so far; `cost_usd=None` means the cost is unknown (no price)."""

    steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = 0.0
    elapsed_s: float = 0.0

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.tokens_in + self.tokens_out

    def add(self, tokens_in: int, tokens_out: int, cost_usd: float | None) -> BudgetUsage:
        """One more model call (`cost_usd` None: its price is unknown, and so is the total).

        >>> BudgetUsage().add(100, 20, 0.5).add(10, 2, None)
        BudgetUsage(steps=2, tokens_in=110, tokens_out=22, cost_usd=None, elapsed_s=0.0)
        """
        known = cost_usd is not None and self.cost_usd is not None
        return replace(
            self,
            steps=self.steps + 1,
            tokens_in=self.tokens_in + tokens_in,
            tokens_out=self.tokens_out + tokens_out,
            cost_usd=self.cost_usd + cost_usd if known else None,  # type: ignore[operator]
        )


def check(budgets: Budgets, usage: BudgetUsage) -> str | None:
    """The reason the run must stop before its next model call, or None to go on.

    >>> check(Budgets(max_steps=3), BudgetUsage(steps=2)) is None
    True
    >>> check(Budgets(max_steps=3), BudgetUsage(steps=3))
    'step budget exhausted: 3 of 3 steps used (max_steps)'
    """
    if usage.steps >= budgets.max_steps:
        return f"step budget exhausted: {usage.steps} of {budgets.max_steps} steps used (max_steps)"
    if budgets.max_tokens is not None and usage.tokens >= budgets.max_tokens:
        return (
            f"token budget exhausted: {usage.tokens} of {budgets.max_tokens} tokens used "
            f"({usage.tokens_in} in, {usage.tokens_out} out; max_tokens)"
        )
    if budgets.max_cost_usd is not None:
        if usage.cost_usd is None:
            # validate_cost_cap should have refused this run; stop rather than spend blind.
            return "cost budget cannot be checked: the cost so far is unknown (max_cost_usd)"
        if usage.cost_usd >= budgets.max_cost_usd:
            return (
                f"cost budget exhausted: ${usage.cost_usd:.4f} of "
                f"${budgets.max_cost_usd:.4f} spent (max_cost_usd)"
            )
    if budgets.max_wall_s is not None and usage.elapsed_s >= budgets.max_wall_s:
        return (
            f"time budget exhausted: {usage.elapsed_s:.0f}s of {budgets.max_wall_s:.0f}s "
            "elapsed (max_wall_s)"
        )
    return None


def validate_cost_cap(budgets: Budgets, price_known: bool, *, model: str | None = None) -> None:
    """Refuse, before a run starts, a cost cap that cannot be enforced for lack of a price.

    >>> validate_cost_cap(Budgets(max_cost_usd=1.0), price_known=True)
    >>> validate_cost_cap(Budgets(max_cost_usd=1.0), price_known=False, model="m")
    Traceback (most recent call last):
    ...
    policies.errors.ConfigError: max_cost_usd is set ($1.00) but model 'm' has no known price: \
add [tool.worker.prices."m"] with input and output in USD per million tokens, or remove max_cost_usd
    """
    if budgets.max_cost_usd is None or price_known:
        return
    name = model or "<model>"
    raise ConfigError(
        f"max_cost_usd is set (${budgets.max_cost_usd:.2f}) but model {name!r} has no known "
        f'price: add [tool.worker.prices."{name}"] with input and output in USD per million '
        "tokens, or remove max_cost_usd"
    )
