"""sandbox/ecosystems/python/same_code.py: which edits of a Python file change nothing the tests
can see."""

from __future__ import annotations

import pytest

from sandbox.ecosystems.python.same_code import same_code

BODY = "def f(x):\n    if {cond}:\n        return 1\n    return 2\n"


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("not (x is None)", "x is not None"),  # the compiler folds the negation
        ("not (x)", "not x"),
        ("(x > 1)", "x > 1"),
        ("x  >  1", "x > 1"),
        ("x>1", "(x) > (1)"),
    ],
)
def test_spellings_that_compile_alike_are_the_same(before: str, after: str) -> None:
    assert same_code(BODY.format(cond=before).encode(), BODY.format(cond=after).encode())


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("not (x)", "x"),
        ("x > 1", "x >= 1"),
        ("x is None", "x is not None"),
        ("x > 1", "y > 1"),
        ("x > 1", "x > 2"),
    ],
)
def test_a_change_of_behaviour_is_not_the_same(before: str, after: str) -> None:
    assert not same_code(BODY.format(cond=before).encode(), BODY.format(cond=after).encode())


def test_names_docstrings_and_moved_code_count() -> None:
    base = b'def f():\n    """Doc."""\n    return 1\n'
    assert not same_code(base, base.replace(b"def f", b"def g"))
    assert not same_code(base, base.replace(b"Doc.", b"Other."))
    assert not same_code(b"a = 1\nb = 2\n", b"b = 2\na = 1\n")
    assert same_code(base, b'\n\ndef f():\n    """Doc."""\n\n    return (1)\n')  # lines moved


def test_source_this_python_cannot_compile_is_never_the_same() -> None:
    assert not same_code(b"x = (\n", b"x = ((\n")
    deep = b"x = " + b"(" * 5000 + b"1" + b")" * 5000 + b"\n"
    assert not same_code(deep, deep + b"\n")
