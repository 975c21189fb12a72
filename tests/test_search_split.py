"""The split of a run's first-edit samples among the moves (worker/search/split.py), case by
case: what the run would spend on a whole rewrite, an insertion and the pointed lines, and the
reason it records (the trace's `sample_split`)."""

from __future__ import annotations

from worker.search.moves import Function, Insertion
from worker.search.split import split
from worker.search.suspects import Anchor, Suspect


def ranked(*scores: float) -> list[Suspect]:
    return [
        Suspect("calc.py", n, f"x{n} = {n}", score, 1, 0, indent_after="    ")
        for n, score in enumerate(scores, start=3)
    ]


SMALL = Function("calc.py", 1, 8, "def f():\n" + "    x = 1\n" * 7)
AFTER_TOP = Insertion(0, "calc.py", Anchor(3, "x3 = 3", "    "), before=False)
BEFORE_TOP = Insertion(0, "calc.py", Anchor(3, "return x", "    "), before=True)


def test_a_flat_ranking_over_a_small_function_rewrites_it_twice_and_adds_no_line():
    made = split(ranked(0.7, 0.7, 0.7, 0.5), samples=5, function=SMALL, insertion=AFTER_TOP)
    assert (made.whole, made.insert, made.cold, made.pointed) == (2, 0, 3, 2)
    assert made.ties == 3 and made.gap == 0.0 and made.function_lines == 8
    assert made.why.startswith("flat ranking (3 of the top 3 lines tie) over a function of 8")
    # A budget of 2: the greedy edit and one rewrite.
    assert split(ranked(0.7, 0.7, 0.7), samples=2, function=SMALL, insertion=None).whole == 1


def test_lines_of_the_called_functions_with_no_counts_are_a_flat_ranking():
    reached = [Suspect("a.go", 4, "return a - b", 0.0, 0, 0, reached=True)]
    made = split(reached, samples=5, function=SMALL, insertion=None)
    assert made.whole == 2 and "functions the tests call" in made.why


def test_a_top_line_that_stands_apart_gets_the_pointed_samples_and_one_insertion():
    made = split(ranked(1.0, 0.5, 0.4), samples=5, function=SMALL, insertion=BEFORE_TOP)
    assert (made.whole, made.insert, made.cold, made.pointed) == (0, 1, 2, 3)
    assert made.gap == 0.5 and made.ties == 1
    assert made.why == (
        "the top line stands apart (the second scores 50% of it): the pointed lines, "
        "and a line added before calc.py:3"
    )


def test_a_flat_ranking_over_a_large_function_adds_a_line_instead_of_a_rewrite():
    made = split(ranked(0.7, 0.7, 0.7), samples=5, function=None, insertion=AFTER_TOP)
    assert (made.whole, made.insert, made.cold) == (0, 1, 2)
    assert made.why.startswith("flat ranking (3 of the top 3 lines tie) but no function small")


def test_with_fewer_than_three_lines_the_warmer_retries_keep_their_slots():
    made = split(ranked(1.0), samples=5, function=None, insertion=BEFORE_TOP)
    assert (made.whole, made.insert, made.cold, made.pointed) == (0, 0, 3, 4)
    assert made.why == "1 line(s) ranked: no third suspect's slot for an insertion"


def test_no_suspects_leave_the_samples_unpointed():
    made = split([], samples=5, function=None, insertion=None)
    assert (made.whole, made.insert, made.cold, made.ranked) == (0, 0, 0, 0)
    assert made.why.startswith("no suspect lines")


def test_moves_off_give_the_order_before_the_moves():
    made = split(ranked(0.7, 0.7, 0.7), samples=5, function=SMALL, insertion=AFTER_TOP, moves=False)
    assert (made.whole, made.insert, made.cold, made.pointed) == (0, 0, 3, 4)
    assert made.why.startswith("moves off")
    assert made.to_dict()["why"] == made.why  # what the trace records
