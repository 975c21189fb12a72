"""The search's settings a user may give, each declared once: its name (the config key, and the
flag with `-` for `_`), type, bounds, help and default for each kind of model. The config
file's schema fragment, the `worker fix` flag and the override of the profile are derived from
this table (policies/config.py validates the fragment without knowing what the keys mean).

A setting left unset (None) takes the profile's default (worker/search/profile.py): the default
for a hosted model, or for the bundled small one, with the evidence beside each value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Setting:
    """One setting: a yes/no (flag `--x/--no-x`) or a count (`--x N`, within `low`..`high`)."""

    name: str
    kind: type[bool] | type[int]
    hosted: bool | int  # the default for a hosted model
    bundled: bool | int  # the default for the bundled one
    help: str
    low: int | None = None
    high: int | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def schema(self) -> dict[str, Any]:
        """Its JSON Schema in the config file."""
        if self.kind is bool:
            return {"type": "boolean"}
        return {"type": "integer", "minimum": self.low, "maximum": self.high}


SETTINGS: tuple[Setting, ...] = (
    # The first reply must edit the code the first message shows (measured in
    # docs/evaluation.md).
    Setting(
        name="first_edit",
        kind=bool,
        hosted=False,
        bundled=True,
        help="the first reply must edit the code shown (default: for the bundled model only)",
    ),
    # An edit after which more tests fail is undone, and the model told.
    Setting(
        name="undo_worse_edits",
        kind=bool,
        hosted=False,
        bundled=True,
        help="undo an edit that makes more tests fail (default: for the bundled model only)",
    ),
    # First edits tried on the original tree when the first reply must be an edit: for the
    # bundled model, the greedy edit, one per top suspect line, then the warmer retries of those
    # lines (sampling.HOT_RETRIES); an answer refused or repeated does not count (at most 2
    # answers a sample), and its prompt cache makes each one cost its answer alone. On 26 fresh
    # planted tasks with a cap of 8 (arm U), 4 of the 9 fixes came from warmer retries, 2 of
    # them from the 5th sample; samples 6 to 8 fixed none and took the median prompt tokens from
    # 14.6k to 20.7k. So the cap is 5, read off that run, and checked on the fresh seeds of arms
    # V and W (9 of 17, 12 of 23).
    Setting(
        name="edit_samples",
        kind=int,
        hosted=1,
        bundled=5,
        low=1,
        high=16,
        help="with --first-edit, first edits tried on the original tree until one fixes "
        "(default: 5 for the bundled model, else 1)",
    ),
    # After each edit, the clean re-run of the patch starts beside the working copy's run: for a
    # hosted model only (an unused clean re-check costs a test run's CPU, on the cores that run
    # the bundled model, and most small-model edits fail).
    Setting(
        name="verify_ahead",
        kind=bool,
        hosted=True,
        bundled=False,
        help="start the clean re-run of each edit beside the working copy's run "
        "(default: for a hosted model only)",
    ),
    # One traced run of the failing tests' files ranks the lines they run (fault localisation):
    # for the bundled model only (it costs a test run, and hosted models read code well).
    Setting(
        name="locate",
        kind=bool,
        hosted=False,
        bundled=True,
        help="rank the lines the failing tests run (one traced test run) and point the model "
        "at them (default: for the bundled model only)",
    ),
    # After first-edit samples none of which fixed, the run goes on as a conversation: not for
    # the bundled model, samples only (in arms F to M every fix came from the greedy answer or a
    # sample; the conversation after the samples fixed nothing in about 50 runs, and it is what
    # cost tokens).
    Setting(
        name="converse",
        kind=bool,
        hosted=True,
        bundled=False,
        help="when no sampled first edit fixed, go on as a conversation until a budget ends "
        "the run (default: not for the bundled model)",
    ),
    # After a sample pointed at a line, this many edits the model nearly wrote (one token
    # swapped for its runner-up, from the answer's logprobs) are tried by the tests alone: for
    # the bundled model only (json_schema mode), the 5 likeliest untried swaps that may parse:
    # 3 of V's 9 fixes and 2 of W's 12 came from one (docs/evaluation.md).
    Setting(
        name="second_choices",
        kind=int,
        hosted=0,
        bundled=5,
        low=0,
        high=16,
        help="after a sample pointed at a line, try N edits the model nearly wrote (one "
        "token swapped for its runner-up) with the tests alone, no model call (json_schema "
        "mode; default: 5 for the bundled model, else 0)",
    ),
    # The search's moves beyond the pointed line (worker/search/moves.py, issue 48): a small
    # function rewritten whole where the ranking is flat, and a line added after a suspect line
    # or before its `return`, in the split worker/search/split.py chooses. Off: the split of
    # before them (the greedy edit, the top 3 lines, their warmer retries). Off by default:
    # on 11 fresh tasks of seed 97 in five languages, the bundled model resolved 4 with them
    # and 7 without, and no task only with them (docs/evaluation.md, "The moves, measured"):
    # the insertion took the third suspect's cold sample that held toolz's bug, and two
    # rewrites took the budget of the warm retry that fixed textkit's.
    Setting(
        name="moves",
        kind=bool,
        hosted=False,
        bundled=False,
        help="with samples, also rewrite a small function whole where the ranking is flat, "
        "and add a line after a suspect line or before its return (default: off: on 11 "
        "fresh tasks they resolved 4 against 7)",
    ),
)


def config_fragment() -> dict[str, dict[str, Any]]:
    """The settings' keys in the config file's schema (policies.config.config_schema)."""
    return {s.name: s.schema() for s in SETTINGS}


def defaults(*, bundled: bool) -> Mapping[str, Any]:
    """Each setting's default for the bundled model or a hosted one (Profile's keywords)."""
    return {s.name: s.bundled if bundled else s.hosted for s in SETTINGS}
