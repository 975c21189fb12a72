"""The task generator's bug planting (bench/tasks/mutate.py): one line, one realistic change,
still valid Python, and undone exactly by the reference fix."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

MUTATE = Path(__file__).resolve().parent.parent / "bench" / "tasks" / "mutate.py"
SOURCE = '''\
def clamp(value, lo, hi):
    """Keep value within [lo, hi]."""
    if value < lo:
        return lo
    if value > hi and hi is not None:
        return hi
    return value + 0


def label(name):
    return "x" + name
'''


def load():
    spec = importlib.util.spec_from_file_location("mutate", MUTATE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutate"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_each_mutant_changes_one_line_of_a_function_and_still_parses():
    found = load().mutants(SOURCE, path="clamp.py")
    kinds = {m.kind for m in found}
    assert {"compare", "negate", "variable", "boolop", "off_by_one", "binop"} <= kinds
    for m in found:
        changed = m.apply(SOURCE)
        ast.parse(changed)
        pairs = zip(SOURCE.splitlines(), changed.splitlines(), strict=True)
        diff = [(a, b) for a, b in pairs if a != b]
        assert diff == [(m.old, m.new)]
    news = {m.new.strip() for m in found}
    assert "if value <= lo:" in news and "if not (value < lo):" in news
    assert "if value > hi or hi is not None:" in news
    # Not planted: string concatenation flipped (a TypeError, not a bug), the docstring.
    assert not any('"x" - name' in m.new for m in found)
    assert all(m.line != 2 for m in found)
