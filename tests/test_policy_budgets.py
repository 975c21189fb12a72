"""Budgets: each cap stops the run before the next model call, with a reason naming it."""

from __future__ import annotations

import pytest

from policies.budgets import Budgets, BudgetUsage, answer_cap, check, validate_cost_cap
from policies.errors import ConfigError
from worker.cli.exit_codes import EXIT_USAGE, exit_code_for

ALL = Budgets(max_steps=10, max_tokens=1000, max_cost_usd=0.5, max_wall_s=60.0)


def test_fresh_run_within_every_budget_goes_on() -> None:
    assert check(ALL, BudgetUsage()) is None
    assert check(ALL, BudgetUsage(steps=9, tokens_in=500, tokens_out=499, cost_usd=0.49)) is None


def test_step_budget_stops_at_the_cap() -> None:
    reason = check(ALL, BudgetUsage(steps=10))
    assert reason is not None
    assert "step budget exhausted" in reason and "10 of 10" in reason and "max_steps" in reason


def test_token_budget_counts_prompt_and_completion_together() -> None:
    assert check(ALL, BudgetUsage(tokens_in=999)) is None
    reason = check(ALL, BudgetUsage(tokens_in=600, tokens_out=400))
    assert reason is not None and "token budget exhausted" in reason and "1000 of 1000" in reason


def test_cost_budget_stops_when_spent() -> None:
    reason = check(ALL, BudgetUsage(cost_usd=0.5))
    assert reason is not None and "cost budget exhausted" in reason and "$0.5000" in reason


def test_unknown_cost_with_a_cap_stops_rather_than_spending_blind() -> None:
    reason = check(ALL, BudgetUsage(cost_usd=None))
    assert reason is not None and "unknown" in reason


def test_unknown_cost_without_a_cap_goes_on() -> None:
    assert check(Budgets(max_steps=5), BudgetUsage(cost_usd=None, tokens_in=10**9)) is None


def test_wall_clock_budget_stops_when_elapsed() -> None:
    assert check(ALL, BudgetUsage(elapsed_s=59.9)) is None
    reason = check(ALL, BudgetUsage(elapsed_s=61.0))
    assert reason is not None and "time budget exhausted" in reason and "max_wall_s" in reason


def test_first_exhausted_budget_is_reported() -> None:
    reason = check(ALL, BudgetUsage(steps=10, tokens_in=5000, elapsed_s=100.0))
    assert reason is not None and reason.startswith("step budget")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_steps": 0},
        {"max_steps": -1},
        {"max_tokens": 0},
        {"max_cost_usd": -0.1},
        {"max_wall_s": 0},
        {"max_steps": True},
        {"max_tokens": "many"},
    ],
)
def test_nonsense_caps_are_rejected(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="must be a positive number"):
        Budgets(**kwargs)  # type: ignore[arg-type]


def test_cost_cap_without_a_price_is_a_config_error_naming_the_fix() -> None:
    with pytest.raises(ConfigError) as info:
        validate_cost_cap(Budgets(max_cost_usd=2.0), price_known=False, model="local-7b")
    message = str(info.value)
    assert "max_cost_usd" in message and "local-7b" in message
    assert '[tool.worker.prices."local-7b"]' in message
    assert "\n" not in message
    assert exit_code_for(info.value) == EXIT_USAGE


def test_cost_cap_with_a_price_or_no_cap_is_fine() -> None:
    validate_cost_cap(Budgets(max_cost_usd=2.0), price_known=True)
    validate_cost_cap(Budgets(), price_known=False)


def test_one_answer_is_capped_shorter_for_the_bundled_model_unless_configured() -> None:
    # The bundled model writes 7-8 tokens a second: a runaway answer at 1536 costs 200 s.
    assert answer_cap(Budgets(), bundled=True) == 512
    assert answer_cap(Budgets(), bundled=False) == 1536
    assert answer_cap(Budgets(max_completion_tokens=1536), bundled=True) == 1536
    assert answer_cap(Budgets(max_completion_tokens=300), bundled=False) == 300
