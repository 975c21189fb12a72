"""The `worker` command line: parse, dispatch, and map every ending to one exit code."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from worker.cli.exit_codes import EXPECTED, exit_code_for
from worker.cli.out_of_space import known_error
from worker.errors import Interrupted, UsageError


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit 2, one line) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="worker", description="Fix failing tests in a disposable sandbox.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    from worker.cli.ci import add_ci_arguments
    from worker.cli.eval import add_eval_arguments
    from worker.cli.fix import add_fix_arguments
    from worker.cli.model import add_model_arguments
    from worker.cli.publish import add_publish_arguments
    from worker.cli.sandbox import add_sandbox_arguments

    add_fix_arguments(sub.add_parser("fix", help="run the agent until the tests pass"))
    add_ci_arguments(sub.add_parser("ci", help="from a red CI build: triage flaky tests, fix"))
    add_publish_arguments(
        sub.add_parser("publish", help="a verified fix as a draft pull request (no LLM key)")
    )

    add_eval_arguments(
        sub.add_parser("eval", help="run a task set; resolve rate, re-checked on clean copies")
    )
    add_sandbox_arguments(sub.add_parser("sandbox", help="build, use and clean up the sandbox"))
    add_model_arguments(sub.add_parser("model", help="the bundled local model"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    args = None
    try:
        args = build_parser().parse_args(argv)
        return _dispatch(args)
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
        signal.signal(signal.SIGTERM, previous)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(f"received signal {signum}")


def _say(text: str) -> None:
    print(text.splitlines()[0] if text else text, file=sys.stderr)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "fix":
        from worker.cli.fix import run_fix

        return run_fix(args)
    if args.command == "ci":
        from worker.cli.ci import run_ci

        return run_ci(args)
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
    if args.command == "model":
        from worker.cli.model import run_model

        return run_model(args)
    raise UsageError(f"unknown command {args.command}")  # pragma: no cover - argparse refuses


if __name__ == "__main__":
    sys.exit(main())
