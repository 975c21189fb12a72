"""How a run's first-edit samples are split among the moves (sampling.py asks them in this
order: the greedy edit, the whole function, its warmer retry, the top suspect lines cold, the
insertion in the first slot past them, then the lines' warmer retries), chosen from the
evidence the run has before its first sample: how far the top suspects' scores stand apart, how
many tie, whether a function holding the top line is small enough to be rewritten in one
answer, and whether a line can be added at one of them.

The rules, with why (the figures are issue 48's and bench/locate.py's):

- Moves off (`--no-moves`): the order before the moves, the greedy edit, the top 3 lines cold,
  their warmer retries; what an ablation compares against.
- No suspect lines: nothing to point at; the samples after the greedy one are asked warmer.
- A flat ranking (the top lines tie, or come only from the functions the tests call) over a
  small function: the pointed samples only guess at the line (one program's bug was on line 8,
  and ten samples went to line 4), and one rewrite reaches every line, a missing one included.
  So two samples rewrite it (the second warmer, spent only when the first changed the
  function and did not fix) and no sample adds a line (the rewrite may add it).
- A flat ranking over a function too large to rewrite (or none shown whole): the pointed
  samples and one insertion, in the third suspect's cold slot.
- A ranking whose top line stands apart, or one that only partly ties: the pointed samples,
  and one insertion in the third suspect's cold slot (the bug's line ranked third in 2 of 46
  planted tasks, first in 22, second in 11), so the top line's warmer retry keeps its place.
- Fewer than 3 lines ranked: no third suspect's slot to give an insertion; the warmer retries
  of the top lines keep theirs (a wrong `return` is commoner than a line missing before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from worker.search.moves import Function, Insertion, flat
from worker.search.suspects import Suspect

RETRIED = 3  # the top suspects the pointed samples go to cold, then warmer (sampling.py)
WHOLE_TRIES = 2  # a function's rewrite, and its warmer retry
# The top line "stands apart" where the second's score is at most this share of the top's.
APART = 0.8


@dataclass(frozen=True)
class Split:
    """The samples a run plans for each move (at most: an answer refused or repeated does not
    count), and the evidence it was chosen from; `why` says the rule in words."""

    samples: int  # edit_samples: the greedy one and the rest
    whole: int  # rewrites of the whole function (the second warmer)
    insert: int  # samples adding a line
    cold: int  # top suspects pointed at once, at temperature 0, before the insertion's slot
    pointed: int  # samples left to the pointed lines (cold, then warmer retries)
    why: str
    ranked: int  # suspect lines ranked
    ties: int  # of the top RETRIED, how many score as the top one
    gap: float  # the top score less the second's, as a share of the top's (0: a tie)
    function_lines: int  # of the function holding the top line that a rewrite fits; 0: none

    def to_dict(self) -> dict[str, Any]:
        """The trace's `sample_split` event's fields."""
        return asdict(self)


def split(
    suspects: Sequence[Suspect],
    *,
    samples: int,
    function: Function | None,
    insertion: Insertion | None,
    moves: bool = True,
) -> Split:
    """The split of `samples` first edits (sampling.py's budget) for a ranking of `suspects`,
    the small function holding the top line (`function`, None: none a rewrite fits) and where a
    line may be added (`insertion`); `moves` False: the order before the moves."""
    top = suspects[:RETRIED]
    ties = sum(s.score == top[0].score for s in top) if top else 0
    gap = (top[0].score - top[1].score) / top[0].score if len(top) > 1 and top[0].score else 0.0
    lines = function.end - function.start + 1 if function is not None else 0
    even = flat(suspects, top=RETRIED)
    rest = max(samples - 1, 0)
    whole, insert, cold = 0, 0, RETRIED
    if not moves:
        why = "moves off: the greedy edit, the top 3 lines cold, their warmer retries"
    elif not suspects:
        why = "no suspect lines: the samples after the greedy one are asked warmer, unpointed"
        cold = 0
    elif even and function is not None:
        whole = min(WHOLE_TRIES, rest)
        why = (
            f"flat ranking ({_ties(top, ties)}) over a function of {lines} lines: "
            "a rewrite reaches every line, a missing one included; no separate insertion"
        )
    elif len(suspects) < RETRIED:
        why = f"{len(suspects)} line(s) ranked: no third suspect's slot for an insertion"
    elif insertion is None:
        why = "no top line a statement can be added at: the pointed lines alone"
    else:
        insert, cold = 1, RETRIED - 1
        if even:
            why = f"flat ranking ({_ties(top, ties)}) but no function small enough to rewrite"
        elif gap >= 1 - APART:
            why = f"the top line stands apart (the second scores {1 - gap:.0%} of it)"
        else:
            why = f"a ranking that partly ties ({_ties(top, ties)})"
        side = "before" if insertion.before else "after"
        why += f": the pointed lines, and a line added {side} {insertion.where()}"
    pointed = max(rest - whole - insert, 0)
    return Split(
        samples=samples, whole=whole, insert=insert, cold=cold, pointed=pointed, why=why,
        ranked=len(suspects), ties=ties, gap=round(gap, 3), function_lines=lines,
    )  # fmt: skip


def _ties(top: Sequence[Suspect], ties: int) -> str:
    if top and top[0].reached:
        return "lines of the functions the tests call, no counts"
    return f"{ties} of the top {len(top)} lines tie"
