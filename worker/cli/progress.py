"""Progress for people: a live line per step at a terminal (rich), plain lines in CI."""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console

from worker.loop.agent import StepInfo


class ProgressPrinter:
    """Prints one line per step to stderr; colours and markup only on a terminal."""

    def __init__(self, *, quiet: bool = False, stream: TextIO | None = None) -> None:
        stream = stream or sys.stderr
        self._plain = quiet or not stream.isatty()
        self._console = Console(
            file=stream,
            highlight=False,
            soft_wrap=True,
            force_terminal=None if not self._plain else False,
        )

    def say(self, message: str) -> None:
        """A free-form line (phase changes, warnings)."""
        if self._plain:
            self._console.print(message, markup=False)
        else:
            self._console.print(f"[bold cyan]worker[/] {message}", markup=True)

    def step(self, info: StepInfo) -> None:
        """One step: number, tool, target, outcome, tokens so far, elapsed time."""
        line = (
            f"step {info.step:>2} {info.tool:<11} {info.target[:40]:<40} {info.outcome}"
            f"  [{info.tokens} tok, {info.elapsed_s:.0f}s]"
        )
        if self._plain:
            self._console.print(line, markup=False)
        else:
            style = "red" if info.outcome.startswith(("error", "refused")) else "green"
            self._console.print(line, style=style, markup=False)
