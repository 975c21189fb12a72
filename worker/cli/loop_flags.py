"""The flags that shape the agent loop, shared by `worker fix` (and `worker ci`) and `worker eval`
(which passes them on to each task's `worker fix`)."""

from __future__ import annotations

import argparse

from policies.budgets import BUDGETS
from worker.search.settings import SETTINGS, Setting

# The flags `add_loop_arguments` adds, as `worker eval` passes them on.
LOOP_FLAGS: tuple[str, ...] = ("--tool-mode", "--edit-tools", *(s.flag for s in SETTINGS))
# The flags `add_budget_arguments` adds, as `worker eval` passes them on.
TEST_TIMEOUT = "--test-timeout"
BUDGET_FLAGS: tuple[str, ...] = (*(b.flag for b in BUDGETS if b.flag), TEST_TIMEOUT)


def add_budget_arguments(p: argparse.ArgumentParser, *, per_task: bool = False) -> None:
    """One run's budgets (policies/budgets.BUDGETS: one flag each) and its time per test run;
    `per_task`: as `worker eval` says them, for each task's `worker fix`."""
    for budget in BUDGETS:
        if budget.flag is None:
            continue
        said = budget.help
        if per_task:
            said = "per task" + (f", {budget.unit}" if budget.unit else "")
        p.add_argument(budget.flag, type=budget.kind, default=None, help=said)
    p.add_argument(TEST_TIMEOUT, type=float, default=None, help="seconds per test run")


def budget_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The budgets' flags as config overrides (None: not given)."""
    return {b.name: getattr(args, _dest(b.flag)) for b in BUDGETS if b.flag}


def _dest(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def add_loop_arguments(p: argparse.ArgumentParser) -> None:
    """How the model's calls are sent and which edits and loop aids it gets (the search's
    settings: one flag each, from worker/search/settings.SETTINGS)."""
    p.add_argument("--tool-mode", default=None, choices=["auto", "native", "json_schema", "text"])
    p.add_argument(
        "--edit-tools",
        default=None,
        choices=["patch", "replace", "both"],
        help="edit tools the model gets (default both)",
    )
    for setting in SETTINGS:
        add_setting_flag(p, setting)


def add_setting_flag(p: argparse.ArgumentParser, setting: Setting) -> None:
    """A yes/no setting's `--x/--no-x`, a count's `--x N`; unset is None, so the config file's
    value or the profile's stands."""
    if setting.kind is bool:
        action = argparse.BooleanOptionalAction
        p.add_argument(setting.flag, action=action, default=None, help=setting.help)
    else:
        p.add_argument(setting.flag, type=int, default=None, metavar="N", help=setting.help)


def search_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The search's flags as config overrides (None: not given)."""
    return {s.name: getattr(args, s.name) for s in SETTINGS}
