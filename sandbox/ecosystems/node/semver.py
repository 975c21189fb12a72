"""npm's semver ranges, for release versions: what `engines.node` and a CI workflow's
`node-version` accept.

The grammar is node-semver's (https://github.com/npm/node-semver#ranges): `||` between ranges,
comparators separated by spaces, hyphen ranges (`1.2 - 2`), X-ranges (`20`, `20.x`, `*`), tilde
(`~20.10`), caret (`^20.10.1`), and `v`/`=` prefixes. Only release versions are ever matched
(Node's releases are all the sandbox can install), so a comparator's pre-release tag only decides
its bound: `<22.0.0-0` excludes 22.0.0, as in node-semver. Written here rather than taken as a
dependency: the one PyPI port (`node-semver`) is unmaintained since 2022, and this is 100 lines.

>>> accepts(">=18 <21 || ^22.10", (20, 11, 1)), accepts("^22.10", (22, 9, 0))
(True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int, int]
#: A bound: the release tuple and 1 for a release, 0 for "just below it" (a pre-release tag).
_Key = tuple[int, int, int, int]
_PARTIAL = re.compile(
    r"[v=\s]*(?P<major>\d+|[xX*])"
    r"(?:\.(?P<minor>\d+|[xX*])(?:\.(?P<patch>\d+|[xX*])(?P<pre>-[0-9A-Za-z.-]+)?"
    r"(?:\+[0-9A-Za-z.-]+)?)?)?"
)
_COMPARATOR = re.compile(r"(?P<op><=|>=|<|>|=|~>|~|\^)?\s*(?P<partial>\S+)")
_WILD = {"x", "X", "*"}


@dataclass(frozen=True)
class _Partial:
    """`20`, `20.10`, `20.10.1`, `20.x`: the numbers given (None from the first wildcard on)."""

    parts: tuple[int | None, int | None, int | None]
    pre: bool  # a pre-release tag was written: `22.0.0-0`

    @property
    def given(self) -> int:
        """How many leading numbers were written: 0 for `*`, 3 for `20.10.1`."""
        return next((n for n, p in enumerate(self.parts) if p is None), 3)

    def low(self) -> _Key:
        """The smallest version it stands for."""
        major, minor, patch = (p or 0 for p in self.parts)
        return (major, minor, patch, 0 if self.pre else 1)

    def above(self) -> _Key:
        """The bound just above every version it stands for (`20.10` -> below 20.11.0)."""
        n, (major, minor, patch) = self.given, (p or 0 for p in self.parts)
        if n == 1:
            return (major + 1, 0, 0, 0)
        if n == 2:
            return (major, minor + 1, 0, 0)
        return (major, minor, patch, 1 if self.pre else 2)  # just above it


def _partial(text: str) -> _Partial:
    match = _PARTIAL.fullmatch(text)
    if match is None:
        raise ValueError(f"not a version: {text!r}")
    parts: list[int | None] = []
    for name in ("major", "minor", "patch"):
        value = match[name]
        if value is None or value in _WILD or (parts and parts[-1] is None):
            parts.append(None)
        else:
            parts.append(int(value))
    return _Partial(parts=(parts[0], parts[1], parts[2]), pre=bool(match["pre"]))


#: A comparator set: the versions at or above `low` and below `high` (None: unbounded).
_Span = tuple[_Key | None, _Key | None]


def _comparator(op: str, p: _Partial) -> _Span:
    """One comparator as a span; `op` "" is an X-range or an exact version."""
    n = p.given
    if n == 0:
        return ((0, 0, 0, 0), None) if op in ("", "=", ">=", "<=", "~", "~>", "^") else (None, None)
    if op in ("", "="):
        return (p.low(), p.above())
    if op == ">=":
        return (p.low(), None)
    if op == ">":
        return (p.above(), None)
    if op == "<":
        return (None, p.low())
    if op == "<=":
        return (None, p.above())
    major, minor, _ = (x or 0 for x in p.parts)
    if op in ("~", "~>"):
        return (p.low(), (major + 1, 0, 0, 0) if n == 1 else (major, minor + 1, 0, 0))
    # caret: the first non-zero number written stays fixed
    if major > 0 or n == 1:
        return (p.low(), (major + 1, 0, 0, 0))
    if minor > 0 or n == 2:
        return (p.low(), (0, minor + 1, 0, 0))
    return (p.low(), p.above())


def _intersect(spans: list[_Span]) -> _Span:
    lows = [s[0] for s in spans if s[0] is not None]
    highs = [s[1] for s in spans if s[1] is not None]
    return (max(lows) if lows else None, min(highs) if highs else None)


@dataclass(frozen=True)
class Range:
    """A parsed range: versions in any of its spans."""

    text: str
    spans: tuple[_Span, ...]

    def accepts(self, version: Version) -> bool:
        """Whether release `version` is in the range."""
        key = (*version, 1)
        return any(
            (low is None or key >= low) and (high is None or key < high) for low, high in self.spans
        )


def parse_range(text: str) -> Range:
    """`text` as a range; a ValueError saying what is wrong when it is not one."""
    if len(text) > 1000:
        raise ValueError("a range over 1000 characters")
    spans: list[_Span] = []
    for alternative in text.split("||"):
        bare = alternative.strip()
        hyphen = re.fullmatch(r"(\S+)\s+-\s+(\S+)", bare)
        if hyphen:
            spans.append(
                _intersect(
                    [
                        _comparator(">=", _partial(hyphen[1])),
                        _comparator("<=", _partial(hyphen[2])),
                    ]
                )
            )
            continue
        # `>= 18` is one comparator: join an operator to the version after it
        bare = re.sub(r"(<=|>=|<|>|=|~>|~|\^)\s+", r"\1", bare)
        parts = []
        for word in bare.split() or ["*"]:
            match = _COMPARATOR.fullmatch(word)
            if match is None:
                raise ValueError(f"not a comparator: {word!r}")
            parts.append(_comparator(match["op"] or "", _partial(match["partial"])))
        spans.append(_intersect(parts))
    return Range(text=text, spans=tuple(spans))


def accepts(range_text: str, version: Version) -> bool | None:
    """Whether `version` is in the range written `range_text`; None when it is not a range."""
    try:
        return parse_range(range_text).accepts(version)
    except ValueError:
        return None


def parse_version(text: str) -> Version | None:
    """`22.12.0` or `v22.12.0` as a tuple; None for anything else (pre-releases included)."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)", text.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None
