"""A command's words joined for the shell, its `NAME=value` prefix kept as assignments.

A language package parses a test command into words (`shlex.split`) and joins them again with
its own flags. `shlex.join` quotes a word whole: `JAVA_OPTS='-Xss4m -Xmx1g'` (CI's environment
for the tests, sandbox/worktree/ci_test_env.py) came back as `'JAVA_OPTS=-Xss4m -Xmx1g'`, which
the shell runs as a command of that name (exit 127: java-classmate in bench/corpus-java.toml).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)=(.*)", re.DOTALL)


def shell_join(words: Sequence[str]) -> str:
    """`shlex.join(words)`, but each leading `NAME=value` word quoted after its `=`.

    >>> shell_join(["JAVA_OPTS=-Xss4m -Xmx1g", "A=b", "mvn", "-Dx=a b", "C=d"])
    "JAVA_OPTS='-Xss4m -Xmx1g' A=b mvn '-Dx=a b' C=d"
    """
    out: list[str] = []
    leading = True
    for word in words:
        match = _ASSIGNMENT.fullmatch(word) if leading else None
        if match is None:
            leading = False
            out.append(shlex.quote(word))
        else:
            out.append(f"{match.group(1)}={shlex.quote(match.group(2))}")
    return " ".join(out)
