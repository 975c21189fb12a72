"""Progress for people: a live line per step at a terminal (rich), plain lines in CI."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from policies.secrets import NO_SECRETS, Secrets

if TYPE_CHECKING:
    from rich.console import Console

    from worker.loop.turns import StepInfo


class ProgressPrinter:
    """Prints one line per step to stderr, `secrets` masked; colours and markup only on a
    terminal."""

    def __init__(
        self, *, quiet: bool = False, stream: TextIO | None = None, secrets: Secrets = NO_SECRETS
    ) -> None:
        self._stream = stream or sys.stderr
        self._secrets = secrets
        self._console: Console | None = None
        if not quiet and self._stream.isatty():
            # rich costs 0.15 s of start-up: loaded only when there is a terminal to colour.
            from rich.console import Console

            self._console = Console(file=self._stream, highlight=False, soft_wrap=True)

    def say(self, message: str) -> None:
        """A free-form line (phase changes, warnings)."""
        message = self._secrets.mask(message)
        if self._console is None:
            self._line(message)
        else:
            self._console.print(f"[bold cyan]worker[/] {message}", markup=True)

    def step(self, info: StepInfo) -> None:
        """One step: number, tool, target, outcome, tokens so far, elapsed time."""
        line = (
            f"step {info.step:>2} {info.tool:<11} {info.target[:40]:<40} {info.outcome}"
            f"  [{info.tokens} tok, {info.elapsed_s:.0f}s]"
        )
        line = self._secrets.mask(line)
        if self._console is None:
            self._line(line)
        else:
            style = "red" if info.outcome.startswith(("error", "refused")) else "green"
            self._console.print(line, style=style, markup=False)

    def _line(self, text: str) -> None:
        self._stream.write(text + "\n")
        self._stream.flush()
