"""A package.json script as shell: its simple commands and the operators between them.

npm runs a script with `sh -c`. To instrument the test runner's command and leave the others
(a `tsc` after the tests, a `lint` before) as they are, the script is cut at the operators of
its top level (`&&`, `||`, `;`, `|`, `&`, newlines, and the parentheses of a subshell), never
inside quotes, `$(...)`, backquotes or braces; each piece in between is one `Command`, kept as
the text it was, so that quoting survives a round trip.

`npm run X` (and `yarn X`, `pnpm X`, `npm test`, `run-s X Y`) inside a script is replaced by
script X itself, in parentheses, a few levels deep: the runner is often one indirection away
(`"test": "npm run lint && npm run test:unit"`).

>>> [p.text for p in parse("mocha 'a b' && tsc; echo \\"x && y\\"")]
["mocha 'a b'", '&&', 'tsc', ';', 'echo "x && y"']
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

OPERATORS = ("&&", "||", ";;", ";", "|", "&", "\n", "(", ")")
MAX_EXPANSIONS = 4  # levels of `npm run X` followed
#: Commands that run a package.json script by name: (program, subcommand or None).
_RUN_SCRIPT = {
    ("npm", "run"),
    ("npm", "run-script"),
    ("npm", "rum"),
    ("npm", "urn"),
    ("yarn", "run"),
    ("pnpm", "run"),
    ("bun", "run"),
}
_TEST_ALIASES = {("npm", "test"), ("npm", "t"), ("npm", "tst"), ("yarn", "test"), ("pnpm", "test")}
_RUN_ALL = {"run-s", "npm-run-all"}
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Piece:
    """An operator (`&&`, `|`, `(`, ...) or one simple command's text."""

    text: str
    operator: bool = False


def parse(script: str) -> list[Piece]:
    """`script` cut at its top-level operators (see the module docstring)."""
    pieces: list[Piece] = []
    current: list[str] = []
    depth = 0  # inside $( ) or ${ }: opaque
    quote = ""
    backquoted = False
    i = 0

    def flush() -> None:
        text = "".join(current).strip(" \t")
        if text:
            pieces.append(Piece(text))
        current.clear()

    while i < len(script):
        c = script[i]
        if quote:
            current.append(c)
            if c == "\\" and quote == '"' and i + 1 < len(script):
                current.append(script[i + 1])
                i += 1
            elif c == quote:
                quote = ""
            i += 1
            continue
        if c == "\\" and i + 1 < len(script):
            current.append(script[i : i + 2])
            i += 2
            continue
        if c in "'\"":
            quote = c
            current.append(c)
            i += 1
            continue
        if c == "`" or backquoted:
            backquoted = backquoted != (c == "`")  # opaque up to the closing backquote
            current.append(c)
            i += 1
            continue
        if script.startswith(("$(", "${"), i):
            depth += 1
            current.append(script[i : i + 2])
            i += 2
            continue
        if depth and c in ")}":
            depth -= 1
            current.append(c)
            i += 1
            continue
        if depth:
            current.append(c)
            i += 1
            continue
        op = next((o for o in OPERATORS if script.startswith(o, i)), None)
        # `2>&1` and `&>` are redirections, not operators; `(` only opens a subshell where a
        # command starts.
        if op == "&" and (script.startswith(">", i + 1) or "".join(current).endswith((">", "<"))):
            op = None
        if op == "(" and "".join(current).strip():
            op = None
        if op is None:
            current.append(c)
            i += 1
            continue
        flush()
        pieces.append(Piece(op, operator=True))
        i += len(op)
    flush()
    return pieces


def join(pieces: Sequence[Piece]) -> str:
    """The pieces as one shell line again."""
    out: list[str] = []
    for piece in pieces:
        if piece.text == "\n":
            out.append(";")
        else:
            out.append(piece.text)
    return " ".join(out)


def words(command: str) -> list[str] | None:
    """The words of one simple command, unquoted; None when shlex cannot split them."""
    try:
        return shlex.split(command, comments=False, posix=True)
    except ValueError:
        return None


def expand(script: str, scripts: Mapping[str, str], *, depth: int = 0) -> list[Piece]:
    """`script` parsed, each command that runs another script of `scripts` replaced by that
    script in parentheses, between its own `pre` and `post` scripts as npm runs them."""
    pieces = parse(script)
    if depth >= MAX_EXPANSIONS:
        return pieces
    out: list[Piece] = []
    for piece in pieces:
        named = None if piece.operator else _runs_scripts(piece.text, scripts)
        if not named:
            out.append(piece)
            continue
        for k, (name, extra) in enumerate(named):
            if k:
                out.append(Piece("&&", operator=True))
            inner = scripts[name] + "".join(f" {shlex.quote(a)}" for a in extra)
            # npm runs `preX` and `postX` around `X`, and only on success.
            steps = [s for s in (scripts.get(f"pre{name}"), inner, scripts.get(f"post{name}")) if s]
            body = inner if len(steps) == 1 else " && ".join(f"( {s} )" for s in steps)
            out += [Piece("(", True), *expand(body, scripts, depth=depth + 1), Piece(")", True)]
    return out


def _runs_scripts(command: str, scripts: Mapping[str, str]) -> list[tuple[str, list[str]]]:
    """The scripts `command` runs, each with the arguments passed to it (after `--`), or []."""
    ws = words(command)
    if not ws or _ENV_ASSIGNMENT.match(ws[0]):
        return []
    program = ws[0]
    rest = [w for w in ws[1:] if w not in ("--silent", "-s", "--if-present", "-q")]
    if program in _RUN_ALL:
        names = [w for w in rest if not w.startswith("-")]
        if len(names) == len(rest) and names and all(n in scripts for n in names):
            return [(n, []) for n in names]
        return []
    extra: list[str] = []
    if "--" in rest:
        extra = rest[rest.index("--") + 1 :]
        rest = rest[: rest.index("--")]
    elif program in ("yarn", "pnpm", "bun") and len(rest) > 1:
        extra = rest[1:]  # yarn and pnpm pass what follows the name on to the script
        rest = rest[:1]
    if (program, rest[0] if rest else None) in _TEST_ALIASES and len(rest) == 1:
        return [("test", extra)] if "test" in scripts else []
    if len(rest) == 2 and (program, rest[0]) in _RUN_SCRIPT and rest[1] in scripts:
        return [(rest[1], extra)]
    if len(rest) == 1 and program in ("yarn", "pnpm") and rest[0] in scripts:
        return [(rest[0], extra)]
    return []
