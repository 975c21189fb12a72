"""A set-up's output: kept whole, and read for the one line that says why it failed.

pip's last lines are the same whatever went wrong (`note: This error originates from a
subprocess...`, `hint: See above for details.`); the cause is further up: an exception a build
backend raised (`LookupError: setuptools-scm was unable to detect version`), a compiler's
`fatal error: Python.h: No such file or directory`, pip's own `ERROR: No matching distribution`.
npm, Yarn and pnpm say theirs in their own forms: `npm error 404 Not Found - GET .../nope` (after
`npm error code E404`, which names no package), `npm error notarget No matching version found
for a@^9` (ETARGET), Yarn 1's `error Couldn't find package "nope"...`, Berry's `YN0035: nope@npm:
^1: Package not found`, pnpm's `ERR_PNPM_FETCH_404  GET .../nope: Not Found - 404`.
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
_FRAME = re.compile(r"^[\s│╰─>×|➤]*")
CAUSE_CHARS = 240
_NPM = re.compile(r"^npm (?:error|ERR!) (.+)")
# npm's lines around the cause: its code, where the log is, the 404's advice.
_NPM_AROUND = re.compile(
    r"^(code|errno|syscall|path|signal|command|cwd) |^A complete log|^Log files|^\d{3}(\s|$)"
)
_NPM_HTTP = re.compile(r"^\d{3} (\d{3} )?[A-Z][A-Za-z]*( [A-Z][A-Za-z]*)* - ")
_NODE_CAUSE = re.compile(
    r"^ERR_PNPM_\w+\s+\S"  # pnpm
    r"|^YN0(?!000)\d{3}:\s.*\S"  # Yarn Berry (YN0000 is its info)
    r"|^error (?!Command failed)\S"  # Yarn 1
    r"|^(?:Internal |Usage )?Error: \S"  # a JavaScript Error (corepack's), a Yarn usage error
)


def failure_cause(output: str) -> str:
    """The first line of `output` that names a cause (an exception, an `error:` line that is
    not one of pip's wrappers), trimmed; "" when there is none.

    >>> failure_cause("  LookupError: no version\\n  error: subprocess-exited-with-error\\n")
    'LookupError: no version'
    >>> failure_cause("note: This error originates from a subprocess\\nhint: See above\\n")
    ''
    >>> failure_cause("npm error code E404\\nnpm error 404 Not Found - GET http://r/nope\\n")
    'npm error 404 Not Found - GET http://r/nope'
    """
    for raw in output.splitlines():
        line = _FRAME.sub("", raw).strip()
        if not line or _GENERIC.search(line):
            continue
        npm = _NPM.match(line)
        if npm is not None:
            said = npm.group(1)
            if _NPM_HTTP.match(said) or not _NPM_AROUND.match(said):
                return line[:CAUSE_CHARS]
            continue
        if _NODE_CAUSE.match(line) or _EXCEPTION.match(line) or _ERROR.search(line):
            return line[:CAUSE_CHARS]
    return ""


def keep_log(ran: CommandResult, dest: Path) -> Path | None:
    """The set-up's whole output (its secrets masked as it ran: policies/secrets.py), written
    to `dest`; None when it could not be written."""
    try:
        text = ran.log_path.read_text(errors="replace") if ran.log_path else ran.output
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    except OSError:
        return None
    return dest
