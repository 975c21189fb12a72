"""The `worker` command line: parse, dispatch, and map every ending to one exit code."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from worker.errors import Interrupted, UsageError, WorkerError, exit_code_for


class _Parser(argparse.ArgumentParser):
    """argparse that raises UsageError (exit 2, one line) instead of printing usage and exiting."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="worker", description="Fix failing tests in a disposable sandbox.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    from worker.cli.fix import add_backend_argument, add_fix_arguments

    add_fix_arguments(sub.add_parser("fix", help="run the agent until the tests pass"))

    sandbox = sub.add_parser("sandbox", help="build, use and clean up the sandbox")
    sbox = sandbox.add_subparsers(dest="sandbox_command", required=True, parser_class=_Parser)
    build = sbox.add_parser("build", help="build the sandbox image (offline if need be)")
    build.add_argument("--image", default=None, help="image name (default worker-sandbox:latest)")
    build.add_argument("--base", default=None, help="base image to build on")
    run = sbox.add_parser("run-tests", help="run a repository's tests in the sandbox")
    run.add_argument("--repo", type=Path, required=True)
    run.add_argument("--test-cmd", default=None)
    run.add_argument("--setup", default=None, help="dependency set-up command (network on)")
    run.add_argument("--image", default=None)
    run.add_argument("--timeout", type=float, default=None, help="seconds for the test command")
    run.add_argument("--policy", default=None, help="preset: default, strict or ci")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_backend_argument(run)
    prune = sbox.add_parser("prune", help="remove containers left by a crashed worker")
    prune.add_argument("--all", action="store_true", help="also those of running workers")

    model = sub.add_parser("model", help="the bundled local model")
    msub = model.add_subparsers(dest="model_command", required=True, parser_class=_Parser)
    msub.add_parser("pull", help="download and verify the local model's weights")
    serve = msub.add_parser("serve", help="serve the local model in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="address (no API key: keep it local)")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--threads", type=int, default=None)
    serve.add_argument("--ctx-size", type=int, default=8192)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupted)
    try:
        args = build_parser().parse_args(argv)
        return _dispatch(args)
    except WorkerError as exc:
        if not isinstance(exc, Interrupted):
            _say(f"worker: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _say("worker: interrupted")
        return exit_code_for(KeyboardInterrupt())
    except Exception as exc:  # noqa: BLE001 - a bug of ours: one line, not a traceback
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
    if args.command == "sandbox":
        from worker.cli import sandbox as sandbox_cli

        handler = {
            "build": sandbox_cli.build,
            "run-tests": sandbox_cli.run_tests,
            "prune": sandbox_cli.prune,
        }[args.sandbox_command]
        return handler(args)
    if args.command == "model":
        from worker.llm import bundled as local_model

        if args.model_command == "pull":
            path = local_model.pull(progress=lambda m: print(m, file=sys.stderr))
            print(path)
            return 0
        return local_model.serve(
            host=args.host,
            port=args.port,
            threads=args.threads,
            ctx_size=args.ctx_size,
            progress=lambda m: print(m, file=sys.stderr),
        )
    raise UsageError(f"unknown command {args.command}")  # pragma: no cover - argparse refuses


if __name__ == "__main__":
    sys.exit(main())
