"""Whether two versions of a Python file compile to the same code: an edit that changes only
parentheses, spacing, comments or the spelling of an equivalent expression (`not (x is None)`
and `x is not None` compile alike) changes nothing the tests can see.

The file is compiled on the host, never run. A file this Python cannot compile (newer syntax, a
compiler limit) is never called the same: the check only ever saves a test run.
"""

from __future__ import annotations

import types
import warnings
from typing import Any

__all__ = ["same_code"]


def same_code(before: bytes, after: bytes, *, name: str = "<edit>") -> bool:
    """True when both compile, and to the same code objects (line numbers set aside)."""
    if before == after:
        return True
    first, second = _compiled(before, name), _compiled(after, name)
    if first is None or second is None:
        return False
    try:
        return _shape(first) == _shape(second)
    except RecursionError:
        return False


def _compiled(source: bytes, name: str) -> types.CodeType | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a SyntaxWarning of the repository's own code
            return compile(source, name, "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return None


def _shape(code: types.CodeType) -> tuple[Any, ...]:
    """What a code object does, without where it stands in the file."""
    consts = tuple(
        _shape(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c))
        for c in code.co_consts
    )
    return (
        code.co_code,
        consts,
        code.co_names,
        code.co_varnames,
        code.co_freevars,
        code.co_cellvars,
        code.co_name,
        code.co_flags,
        code.co_argcount,
        code.co_posonlyargcount,
        code.co_kwonlyargcount,
        getattr(code, "co_exceptiontable", b""),
    )
