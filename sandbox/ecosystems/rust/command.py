"""A `cargo test` command: its words, and the same command as the sandbox runs it.

As it runs (`instrumented`): `--no-fail-fast` (every test target reports, a failing one does
not stop the next), cargo's messages as JSON on its standard output into the run's folder
(which executable is which target, and each compiler error's target and spans), each test
binary started by our runner (report.py: RUNNER), which gives it a libtest `--logfile` of its
own in that folder, and rustdoc by our wrapper (report.py: RUSTDOC), which does the same for
each package's doc-tests; the folder packed into the report at the end. No network: the
crates come from the set-up image's CARGO_HOME (CARGO_NET_OFFLINE). docs/rust-tests.md.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.ecosystems.words import shell_join

_SHELL = re.compile(r"[;&|<>`$(){}\\\n]")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
#: cargo flags that take the next word as their value.
VALUE_FLAGS = frozenset(
    "-p --package --exclude -j --jobs --features -F --target --target-dir --manifest-path "
    "--profile --test --bench --bin --example --color --config -Z --lockfile-path".split()
)


@dataclass(frozen=True, kw_only=True)
class CargoTest:
    """`[VAR=value ...] cargo test [flags] [-- test args]`, split."""

    assignments: tuple[str, ...]
    flags: tuple[str, ...]
    test_args: tuple[str, ...]

    @classmethod
    def parse(cls, test_cmd: str) -> CargoTest | None:
        """None for anything but a plain `cargo test ...` (a pipe, `&&`, a variable: left to
        its exit code)."""
        if _SHELL.search(test_cmd):
            return None
        try:
            words = shlex.split(test_cmd)
        except ValueError:
            return None
        assignments = []
        while words and _ASSIGNMENT.match(words[0]):
            assignments.append(words.pop(0))
        if words[:2] != ["cargo", "test"]:
            return None
        rest = words[2:]
        if "--" in rest:
            at = rest.index("--")
            flags, test_args = rest[:at], rest[at + 1 :]
        else:
            flags, test_args = rest, []
        return cls(assignments=tuple(assignments), flags=tuple(flags), test_args=tuple(test_args))

    def cargo_flags(self) -> list[str]:
        """The flags as run: the user's, less the ones the run sets itself, with
        --no-fail-fast."""
        out: list[str] = []
        skip = False
        for flag in self.flags:
            if skip:
                skip = False
                continue
            if flag in ("--message-format", "--color"):
                skip = True
                continue
            if flag.startswith(("--message-format=", "--color=")) or flag in (
                "--no-fail-fast",
                "--no-run",
                "-q",
                "--quiet",
            ):
                continue
            out.append(flag)
        return ["--no-fail-fast", "--message-format=json", *out]

    def filters(self, ids: Sequence[str]) -> list[str]:
        """The test args: the user's, or with `ids` the names of those tests as libtest filters
        them (a superset, by substring: the verdict reads the ids)."""
        if not ids:
            return list(self.test_args)
        names = dict.fromkeys(test_name(i) for i in ids)
        if "" in names:
            return list(self.test_args)
        kept = [a for a in self.test_args if a.startswith("-")]
        return [*kept, *names]


def test_name(test_id: str) -> str:
    """The name libtest gives the test `test_id` names (what follows the target's part):
    `demo::tests::add` -> `tests::add`; `tests/it.rs::adds` -> `adds`; a doc-test's,
    `src/lib.rs - add (line 3)`'s item, `add`. "" where the id names a whole target."""
    head, _, name = test_id.partition("::")
    if not name:
        return ""
    if head.endswith(".rs") and name.endswith(")") and " (line " in name:
        return name.rsplit(" (line ", 1)[0]
    return name


def instrumented(
    parsed: CargoTest, ids: Sequence[str], *, folder: str, report: str, runner: str, rustdoc: str
) -> str:
    """The shell that runs `parsed` as the module docstring says, its exit status cargo's."""
    quoted = shlex.quote(folder)
    words = [
        *parsed.assignments,
        f"RUSTDOC={folder}/rustdoc",
        "cargo",
        "test",
        *parsed.cargo_flags(),
        "--",
        *parsed.filters(ids),
    ]
    host = "$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z.-' 'A-Z__')"
    return "; ".join(
        [
            f"mkdir -p {quoted}",
            f"cp {shlex.quote(runner)} {quoted}/runner",
            f"cp {shlex.quote(rustdoc)} {quoted}/rustdoc",
            f"chmod 755 {quoted}/rustdoc",
            f'export "CARGO_TARGET_{host}_RUNNER=sh {folder}/runner"',
            f"{shell_join(words)} > {quoted}/cargo.json",
            "rc=$?",
            f"tar -cf {shlex.quote(report)} -C {quoted} .",
            "exit $rc",
        ]
    )
