"""How a run is set for the model it talks to: one profile for a hosted model, one for the
bundled small one, each value next to its evidence (docs/evaluation.md has the runs).

`worker fix` chooses a profile by the endpoint, then lays the user's own settings over it
(`--edit-samples`, `--second-choices`, a config file's keys): a value the user gave wins.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Profile:
    """The loop's settings and the search's, for one kind of model."""

    name: str
    bundled: bool  # the answer cap of policies/budgets.answer_cap for the bundled model
    tool_mode: str  # what "auto" means for this model (worker/llm/client.ToolMode)
    call_timeout_s: float  # one model call, at most
    context_chars: int  # the history sent is kept under this
    shown_failures: int  # failing tests shown in the first message
    undo_worse_edits: bool  # an edit that makes more tests fail is undone, the model told
    verify_ahead: bool  # each edit's clean re-check starts beside its working-copy run
    locate: bool  # rank the lines the failing tests run (worker/search/suspects.py)
    first_edit: bool  # the first reply must be an edit, where the code is in the first message
    edit_samples: int  # first edits tried on the original tree (worker/search/sampling.py)
    second_choices: int  # one-token swaps tried after each pinned sample (worker/search/second)
    converse: bool  # after samples none of which fixed, go on as a conversation

    def with_config(self, config: Any) -> Profile:
        """This profile with each of the user's settings (USER_SET) that is not None over it."""
        given = {name: getattr(config, name) for name in USER_SET}
        return replace(self, **{name: v for name, v in given.items() if v is not None})


# The settings a user may give (flags, config keys of policies/config.WorkerConfig).
USER_SET = (
    "undo_worse_edits",
    "verify_ahead",
    "locate",
    "first_edit",
    "edit_samples",
    "second_choices",
    "converse",
)


HOSTED = Profile(
    name="hosted",
    bundled=False,
    tool_mode="auto",
    call_timeout_s=120.0,
    context_chars=60_000,
    shown_failures=10,
    undo_worse_edits=False,
    verify_ahead=True,
    locate=False,
    first_edit=False,
    edit_samples=1,
    second_choices=0,
    converse=True,
)

BUNDLED = Profile(
    name="bundled",
    bundled=True,
    # Measured: the bundled model never emits native tool_calls.
    tool_mode="json_schema",
    # llama.cpp on a laptop's CPU: one answer with a long prompt takes minutes.
    call_timeout_s=600.0,
    # The bundled server has an 8192-token window.
    context_chars=18_000,
    # Its first message is re-sent with every sample (cachetools-setitem's was 8.6k characters,
    # 6.4k of them failures): 3 failing tests, with --no-converse, took arm N's tokens from 33k
    # to 7k and lost no fix.
    shown_failures=3,
    undo_worse_edits=True,
    # An unused clean re-check costs a test run's CPU, on the cores that run the model.
    verify_ahead=False,
    locate=True,
    first_edit=True,
    # The greedy edit, one per top suspect line, then the warmer retries of those lines
    # (sampling.HOT_RETRIES); an answer refused or repeated does not count (at most 2 answers a
    # sample). On 26 fresh planted tasks with a cap of 8 (arm U), 4 of the 9 fixes came from
    # warmer retries, 2 of them from the 5th sample; samples 6 to 8 fixed none and took the
    # median prompt tokens from 14.6k to 20.7k. So the cap is 5, read off that run, and checked
    # on the fresh seeds of arms V and W (9 of 17, 12 of 23).
    edit_samples=5,
    # After each pinned sample, the 5 likeliest untried one-token swaps that may parse: 3 of V's
    # 9 fixes and 2 of W's 12 came from one (docs/evaluation.md).
    second_choices=5,
    # Samples only: in arms F to M every fix came from the greedy answer or a sample; the
    # conversation after the samples fixed nothing in about 50 runs, and it is what cost tokens.
    converse=False,
)


def profile_for(*, bundled: bool, config: Any) -> Profile:
    """The profile of the endpoint, with the user's settings over it."""
    return (BUNDLED if bundled else HOSTED).with_config(config)
