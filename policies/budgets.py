"""Budgets of one run (steps, tokens, cost, wall clock), checked before each model call, and
the cap on one answer's length, sent with each call.

Each budget is declared once, in BUDGETS: its config key (in `[budgets]`), type, the flag of
`worker fix` that sets it (if any) and its help, its default and each preset's value. The
config schema (policies/config.py), the presets, the flags (worker/cli/loop_flags.py) and the
dataclass's defaults are derived from that table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from policies.errors import ConfigError


def _positive(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class Budget:
    """One budget: a positive count (`kind` int) or amount (float); `default` None: no cap."""

    name: str  # its config key, in [budgets]
    kind: type[int] | type[float]
    default: int | float | None = None  # with no preset (`Budgets()`)
    presets: Mapping[str, int | float] = field(default_factory=dict)  # over `default`
    flag: str | None = None  # the `worker fix` flag that sets it; None: config only
    help: str | None = None  # the flag's help
    unit: str | None = None  # said after "per task" in `worker eval`'s help

    def preset(self, name: str) -> int | float | None:
        """Its value in the preset `name` (policies/config.preset_values)."""
        return self.presets.get(name, self.default)

    def schema(self) -> dict[str, Any]:
        """Its JSON Schema in the config file: a positive integer or number."""
        return {"type": "integer" if self.kind is int else "number", "exclusiveMinimum": 0}


BUDGETS: tuple[Budget, ...] = (
    Budget(name="max_steps", kind=int, default=30, presets={"strict": 15}, flag="--max-steps"),
    Budget(
        name="max_tokens",
        kind=int,
        presets={"strict": 300_000, "ci": 1_000_000},
        flag="--max-tokens",
    ),
    Budget(name="max_completion_tokens", kind=int),  # see Budgets' docstring
    Budget(name="max_cost_usd", kind=float, flag="--max-cost", help="USD", unit="USD"),
    Budget(
        name="max_wall_s",
        kind=float,
        # Unattended (ci): every clock bounded.
        presets={"default": 1800.0, "strict": 600.0, "ci": 1200.0},
        flag="--timeout",
        help="wall-clock seconds for the run",
        unit="seconds",
    ),
)
BUDGET = {b.name: b for b in BUDGETS}


def _default(name: str) -> Any:
    """A `Budgets` field's default, from the table."""
    return BUDGET[name].default


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

    max_steps: int = _default("max_steps")
    max_tokens: int | None = _default("max_tokens")
    max_cost_usd: float | None = _default("max_cost_usd")
    max_wall_s: float | None = _default("max_wall_s")
    max_completion_tokens: int | None = _default("max_completion_tokens")

    def __post_init__(self) -> None:
        for budget in BUDGETS:
            value = getattr(self, budget.name)
            _positive(budget.name, value, optional=budget.default is None)

    def time_left(self, elapsed_s: float) -> float | None:
        """Seconds left of `max_wall_s` after `elapsed_s`; None: no time budget.

        >>> Budgets(max_wall_s=60.0).time_left(45.0), Budgets().time_left(45.0)
        (15.0, None)
        """
        return None if self.max_wall_s is None else self.max_wall_s - elapsed_s


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
