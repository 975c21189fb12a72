"""Test output as the model reads it: the same run gives the same text (issue 48, item 5).

A test run's text carries what changes from one run of the same tree to the next: the runners'
wall-clock figures (pytest's `in 0.12s`, go's `(0.00s)`, cargo's `finished in`, jest's `Time:`,
Maven's `Time elapsed`) and the addresses of objects (`<Node object at 0x7f3a1c2b9d90>`, a Go
pointer `0xc000012345`). Two runs of a deterministic model on the same failure then differ from
the first request, a replay parts where nothing changed, and the prompt cache is missed. Here
they are taken out or masked, and only they: every value a test compares stays as printed.

The human's copy (`worker sandbox run-tests`, the run's logs) keeps them.
"""

from __future__ import annotations

import re

_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Addresses: Python's default repr, and a Go heap pointer on amd64/arm64.
    (re.compile(r"(\bat 0x)[0-9a-fA-F]{4,16}\b"), r"\g<1>…"),
    # ...and its tail where pytest's repr cut the middle out: `<shop.Car...7fe06c316c90>`.
    (re.compile(r"(\.\.\.)x?[0-9a-f]{4,16}>"), r"\g<1>…>"),
    (re.compile(r"\b0xc[0-9a-f]{9}\b"), "0xc…"),
    # pytest's closing line: `==== 1 failed, 2 passed in 0.12s (0:00:00) ====`.
    (re.compile(r"^(=+ .*?) in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?( =+)$", re.M), r"\1\2"),
    # go test: `--- FAIL: TestX (0.00s)`, `FAIL	example.com/m	0.012s`, `ok  	m	0.01s`.
    (re.compile(r"^(\s*--- (?:FAIL|PASS|SKIP): \S+) \(\d+\.\d+s\)$", re.M), r"\1"),
    (re.compile(r"^((?:ok|FAIL)\s+\S+)\s+\d+\.\d+s$", re.M), r"\1"),
    # cargo's libtest: `test result: FAILED. 1 passed; 1 failed; ...; finished in 0.00s`.
    (re.compile(r"(test result: .*?); finished in \d+\.\d+s"), r"\1"),
    # Maven Surefire: `Tests run: 3, Failures: 1, ..., Time elapsed: 0.05 s`.
    (re.compile(r", Time elapsed: \d+(?:\.\d+)? s"), ""),
    # mocha: `2 passing (12ms)`.
    (re.compile(r"^(\s*\d+ (?:passing|failing|pending)) \(\d+(?:\.\d+)?m?s\)$", re.M), r"\1"),
    # Lines that are a clock and nothing else: jest's `Time:`, vitest's `Duration`, node --test's
    # `duration_ms`, Maven's `Total time:` and `Finished at:`.
    (
        re.compile(
            r"^\s*(?:Time:\s+\d|Duration\s+\d|# duration_ms \d|duration_ms: \d|"
            r"\[INFO\] (?:Total time:|Finished at:)).*\n?",
            re.M,
        ),
        "",
    ),
)


def steady(text: str) -> str:
    """`text` without the figures that differ from one run of the same tests to the next.

    >>> steady("assert <app.Node object at 0x7f3a1c2b9d90> is None")
    'assert <app.Node object at 0x…> is None'
    >>> steady("assert (2, <shop.Car...7fe06c316c90>) == (3, ['apple',...ear', 'plum'])")
    "assert (2, <shop.Car...…>) == (3, ['apple',...ear', 'plum'])"
    >>> steady("==== 1 failed, 2 passed in 0.12s ====\\nFAIL\\tm/calc\\t0.012s")
    '==== 1 failed, 2 passed ====\\nFAIL\\tm/calc'
    >>> steady("--- FAIL: TestMean (0.00s)\\nexpected 0x1f, got 0x20 in 3.5s")
    '--- FAIL: TestMean\\nexpected 0x1f, got 0x20 in 3.5s'
    >>> steady("Tests: 1 failed\\nTime:        1.234 s\\nRan all test suites.")
    'Tests: 1 failed\\nRan all test suites.'
    """
    for pattern, mask in _MASKS:
        text = pattern.sub(mask, text)
    return text
