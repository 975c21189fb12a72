"""`worker model pull|serve`: the bundled local model's weights and server."""

from __future__ import annotations

import argparse
import sys


def add_model_arguments(model: argparse.ArgumentParser) -> None:
    """The sub-commands of `worker model` and their flags."""
    msub = model.add_subparsers(dest="model_command", required=True, parser_class=type(model))
    msub.add_parser("pull", help="download and verify the local model's weights")
    serve = msub.add_parser("serve", help="serve the local model in the foreground")
    serve.add_argument("--host", default="127.0.0.1", help="address (no API key: keep it local)")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--threads", type=int, default=None)
    serve.add_argument("--ctx-size", type=int, default=8192)


def run_model(args: argparse.Namespace) -> int:
    """Pull the weights (printing their path), or serve them until stopped."""
    from worker.llm import bundled

    def progress(message: str) -> None:
        print(message, file=sys.stderr)

    if args.model_command == "pull":
        print(bundled.pull(progress=progress))
        return 0
    return bundled.serve(
        host=args.host,
        port=args.port,
        threads=args.threads,
        ctx_size=args.ctx_size,
        progress=progress,
    )
