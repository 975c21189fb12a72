"""The `worker` command line: parse, dispatch, and map every ending to one exit code."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

from worker.cli.exit_codes import EXPECTED, exit_code_for
from worker.cli.out_of_space import known_error
from worker.errors import Interrupted, UsageError

if TYPE_CHECKING:
    from worker.llm.process import ModelProcess


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit 2, one line) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# verb: (help line, module, the function of that module that adds the verb's flags)
VERBS: dict[str, tuple[str, str, str]] = {
    "fix": ("run the agent until the tests pass", "fix_flags", "add_fix_arguments"),
    "ci": ("from a red CI build: triage flaky tests, fix", "ci", "add_ci_arguments"),
    "publish": (
        "a verified fix as a draft pull request (no LLM key)",
        "publish",
        "add_publish_arguments",
    ),
    "eval": (
        "run a task set; resolve rate, re-checked on clean copies",
        "eval",
        "add_eval_arguments",
    ),
    "sandbox": ("build, use and clean up the sandbox", "sandbox", "add_sandbox_arguments"),
    "model": ("the bundled local model", "model", "add_model_arguments"),
    "show": ("one HTML page of a run (or of an eval)", "show", "add_show_arguments"),
    "replay": (
        "a recorded run again: its model replies, real tools; the first difference",
        "replay",
        "add_replay_arguments",
    ),
}


MODEL_VERBS = ("fix", "ci")  # the verbs whose run talks to a model


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `verb`, only that verb's flags are built (and its module imported), so
    that `worker fix` does not pay for importing what `worker ci` or `worker eval` need."""
    parser = _Parser(prog="worker", description="Fix failing tests in a disposable sandbox.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (help_text, module, adder) in VERBS.items():
        verb_parser = sub.add_parser(name, help=help_text)
        if verb is None or verb == name:
            add = getattr(importlib.import_module(f"worker.cli.{module}"), adder)
            add(verb_parser)
    return parser


def _verb(argv: Sequence[str]) -> str | None:
    """The verb of the command line when it is the first word, else None (the full parser)."""
    return argv[0] if argv and argv[0] in VERBS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    args = None
    early = None
    try:
        words = list(sys.argv[1:] if argv is None else argv)
        verb = _verb(words)
        if verb in MODEL_VERBS and not {"-h", "--help"} & set(words):
            from worker.llm.process import ModelProcess

            # The model client's process first: the openai SDK, the longest import of a run,
            # loads on another core while this one imports the rest and starts the sandbox.
            early = ModelProcess()
        args = build_parser(verb).parse_args(words)
        # The command line itself is recorded in the trace, for `worker replay`.
        return _dispatch(args, argv=words, client=early)
    except KeyboardInterrupt as exc:
        if not isinstance(exc, Interrupted):
            _say("worker: interrupted")
        return exit_code_for(exc)
    except EXPECTED as exc:
        _say(f"worker: error: {exc}")
        return exit_code_for(exc)
    except Exception as exc:  # noqa: BLE001 - a bug of ours: one line, not a traceback
        known = known_error(exc, out=getattr(args, "out", None))
        if known is not exc:
            _say(f"worker: error: {known}")
            return exit_code_for(known)
        _say(f"worker: internal error: {type(exc).__name__}: {exc}")
        return exit_code_for(exc)
    finally:
        if early is not None:
            early.close()
        signal.signal(signal.SIGTERM, previous)


def entry() -> None:
    """The console script (and `python -m worker.cli`): `main`, then exit at once.

    `main` releases everything itself (containers, scratch folders, servers, files: all in
    `with` blocks) before it returns. What would be left is the interpreter tearing down the
    loaded modules, the openai SDK's above all: 0.35-0.4 s measured on the 2-core machine, paid
    by every CI job and every task of a batch. Output is flushed first."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(f"received signal {signum}")


def _say(text: str) -> None:
    print(text.splitlines()[0] if text else text, file=sys.stderr)


def _dispatch(args: argparse.Namespace, *, argv: Sequence[str], client: ModelProcess | None) -> int:
    """The verb's run; `worker fix` and `worker ci` get the command line and the model
    client's process that `main` started early (None: the run starts its own)."""
    if args.command == "fix":
        from worker.cli.fix import run_fix

        return run_fix(args, argv=argv, client=client)
    if args.command == "ci":
        from worker.cli.ci import run_ci

        return run_ci(args, argv=argv, client=client)
    if args.command == "eval":
        from worker.cli.eval import run_eval

        return run_eval(args)
    if args.command == "publish":
        from worker.cli.publish import run_publish

        return run_publish(args)
    if args.command == "sandbox":
        from worker.cli import sandbox as sandbox_cli

        handler = {
            "build": sandbox_cli.build,
            "run-tests": sandbox_cli.run_tests,
            "prune": sandbox_cli.prune,
        }[args.sandbox_command]
        return handler(args)
    if args.command == "show":
        from worker.cli.show import run_show

        return run_show(args)
    if args.command == "replay":
        from worker.cli.replay import run_replay

        return run_replay(args)
    if args.command == "model":
        from worker.cli.model import run_model

        return run_model(args)
    raise UsageError(f"unknown command {args.command}")  # pragma: no cover - argparse refuses


if __name__ == "__main__":
    sys.exit(main())
