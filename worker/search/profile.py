"""How a run is set for the model it talks to: one profile for a hosted model, one for the
bundled small one, each value next to its evidence (docs/evaluation.md has the runs).

`worker fix` chooses a profile by the endpoint, then lays the user's own settings over it
(`--edit-samples`, `--second-choices`, a config file's keys): a value the user gave wins. Those
settings, and their default for each profile, are declared in worker/search/settings.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from worker.search.settings import SETTINGS, defaults


@dataclass(frozen=True, kw_only=True)
class Profile:
    """The loop's settings and the search's, for one kind of model (the fields after
    `shown_failures` are worker/search/settings.SETTINGS, typed)."""

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
    moves: bool  # a whole function's rewrite and a line added, besides the pointed lines

    def with_config(self, config: Any) -> Profile:
        """This profile with each of the user's settings (`config.search`: the keys of
        worker/search/settings.SETTINGS the file or the flags gave) over it."""
        given = {s.name: config.search.get(s.name) for s in SETTINGS}
        return replace(self, **{name: v for name, v in given.items() if v is not None})


HOSTED = Profile(
    name="hosted",
    bundled=False,
    tool_mode="auto",
    call_timeout_s=120.0,
    context_chars=60_000,
    shown_failures=10,
    **defaults(bundled=False),
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
    **defaults(bundled=True),
)


def profile_for(*, bundled: bool, config: Any) -> Profile:
    """The profile of the endpoint, with the user's settings over it."""
    return (BUNDLED if bundled else HOSTED).with_config(config)
