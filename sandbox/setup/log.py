"""A set-up's output: kept whole, and read for the one line that says why it failed.

pip's last lines are the same whatever went wrong (`note: This error originates from a
subprocess...`, `hint: See above for details.`); the cause is further up: an exception a build
backend raised (`LookupError: setuptools-scm was unable to detect version`), a compiler's
`fatal error: Python.h: No such file or directory`, pip's own `ERROR: No matching distribution`.
"""

from __future__ import annotations

import re
from pathlib import Path

from sandbox.container.results import CommandResult

_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)):\s+\S")
_ERROR = re.compile(r"(^|\s|:\s*)(fatal error|error|ERROR):\s+\S")
# Lines pip prints around any failure: they name no cause.
_GENERIC = re.compile(
    r"subprocess-exited-with-error|metadata-generation-failed|originates from a subprocess"
    r"|See above for (details|output)|Failed building (wheel|editable)|Could not build wheels"
    r"|Failed to build installable wheels|CalledProcessError|returned non-zero exit status"
    r"|failed with exit code|Command errored out|legacy-install-failure|^ERROR: Failed to build"
    r"|exit code: \d+$",
    re.IGNORECASE,
)
_FRAME = re.compile(r"^[\s│╰─>×|]*")
CAUSE_CHARS = 240


def failure_cause(output: str) -> str:
    """The first line of `output` that names a cause (an exception, an `error:` line that is
    not one of pip's wrappers), trimmed; "" when there is none.

    >>> failure_cause("  LookupError: no version\\n  error: subprocess-exited-with-error\\n")
    'LookupError: no version'
    >>> failure_cause("note: This error originates from a subprocess\\nhint: See above\\n")
    ''
    """
    for raw in output.splitlines():
        line = _FRAME.sub("", raw).strip()
        if not line or _GENERIC.search(line):
            continue
        if _EXCEPTION.match(line) or _ERROR.search(line):
            return line[:CAUSE_CHARS]
    return ""


def keep_log(ran: CommandResult, dest: Path, *, redact: list[str]) -> Path | None:
    """The set-up's whole output (the values in `redact` replaced), written to `dest`; None
    when it could not be written."""
    try:
        text = ran.log_path.read_text(errors="replace") if ran.log_path else ran.output
        for value in redact:
            text = text.replace(value, "****")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    except OSError:
        return None
    return dest
