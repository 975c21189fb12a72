"""Test ids as a model writes them, matched to the ids the repository's tests really have.

A model writes `tests/test_six.py::test_x` where the file is `test_six.py`, or leaves out the class
(`tests/test_idna.py::test_y` for `tests/test_idna.py::IDNATests::test_y`). pytest then runs
nothing and says little; in the bundled model's evaluation runs 11 of 21 `run_tests` calls with
ids ran no test at all. Here such an id is matched, by its test name and file name, to the ids
the baseline run reported, and the run says what it ran instead:

>>> known = ["test_six.py::test_a", "tests/test_idna.py::IDNATests::test_y"]
>>> resolve_test_ids(["tests/test_six.py::test_a", "tests/test_idna.py::test_y"], known).ids
('test_six.py::test_a', 'tests/test_idna.py::IDNATests::test_y')

An id nothing matches is passed on as written (a test added since the baseline may have it).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

MAX_MATCHES = 20  # more than this for one id is not what the model meant


@dataclass(frozen=True)
class ResolvedIds:
    """What to run for the ids asked: `ids`, and a note for each id that was read differently."""

    ids: tuple[str, ...]
    notes: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()  # asked ids no known test matched (run as written)


def resolve_test_ids(asked: Sequence[str], known: Sequence[str]) -> ResolvedIds:
    """Each asked id as is when a known test has it (or lies under it), else its matches."""
    if not known:
        return ResolvedIds(ids=tuple(dict.fromkeys(asked)))
    paths = {k.partition("::")[0] for k in known}
    ids: list[str] = []
    notes: list[str] = []
    unknown: list[str] = []
    for test_id in dict.fromkeys(asked):  # the same id twice is run once
        if _exists(test_id, known, paths):
            ids.append(test_id)
            continue
        matches = _matches(test_id, known, paths)
        if not matches:
            unknown.append(test_id)
            ids.append(test_id)
            continue
        ids.extend(m for m in matches if m not in ids)
        notes.append(f"{test_id} is not a test id here; ran {_listed(matches)} instead.")
    return ResolvedIds(ids=tuple(ids), notes=tuple(notes), unknown=tuple(unknown))


def _exists(test_id: str, known: Sequence[str], paths: set[str]) -> bool:
    """The id names a known test, a parametrised family, a known file or a folder of them."""
    if test_id in known or test_id in paths:
        return True
    if any(k.startswith((test_id + "::", test_id + "[")) for k in known):
        return True
    folder = test_id.rstrip("/") + "/"
    return "::" not in test_id and any(p.startswith(folder) for p in paths)


def _matches(test_id: str, known: Sequence[str], paths: set[str]) -> list[str]:
    """Known ids (or files) the model most likely meant; [] when none, or too many, fit."""
    path, _, name = test_id.partition("::")
    base = posixpath.basename(path)
    if not name:  # a file under another folder: the known files of that name
        found = sorted(p for p in paths if posixpath.basename(p) == base)
        return found if 0 < len(found) <= MAX_MATCHES else []
    found = [k for k in known if _same_test(k.partition("::")[2], name)]
    same_file = [k for k in found if posixpath.basename(k.partition("::")[0]) == base]
    found = same_file or found
    return found if 0 < len(found) <= MAX_MATCHES else []


def _same_test(known_name: str, name: str) -> bool:
    """`Class::test` or `test` (class left out) for `Class::test`, parameters optional."""
    for candidate in (known_name, known_name.partition("[")[0]):
        if candidate == name or candidate.endswith("::" + name):
            return True
    return False


def _listed(ids: Sequence[str], shown: int = 3) -> str:
    more = len(ids) - shown
    return ", ".join(ids[:shown]) + (f" and {more} more" if more > 0 else "")
