"""`python -m worker.llm.bundled.engine --model M --port P ...`: llama.cpp's server, from xllamacpp.

The `xllamacpp` wheel compiles llama.cpp's own HTTP server (`tools/server`, the code behind the
`llama-server` binary) into a Python extension, built for an x86-64 AVX2 baseline rather than
for the build machine. This module gives it `llama-server`'s command line (the flags `LocalServer`
passes), so the rest of the worker starts, watches and stops it exactly like a `llama-server`
binary: a separate process in its own group, logging to stderr, answering `GET /health`.
See docs/local-model.md.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

REQUIREMENT = "xllamacpp==2026.10.11549"

# x86-64 instructions the xllamacpp CPU wheel is compiled for (its `get_system_info()` reports
# SSE3 SSSE3 AVX AVX2 F16C FMA BMI2); a CPU without one of them dies of SIGILL.
REQUIRED_X86_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi2")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The subset of llama-server's flags the worker uses, spelled as llama-server spells them."""
    parser = argparse.ArgumentParser(prog="python -m worker.llm.bundled.engine")
    parser.add_argument("--model", "-m", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", "-t", type=int, default=-1)
    parser.add_argument("--ctx-size", "-c", type=int, default=8192)
    parser.add_argument("--alias", "-a", default=None)
    parser.add_argument("--parallel", "-np", type=int, default=1)
    parser.add_argument("--no-webui", action="store_true")
    return parser.parse_args(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import xllamacpp
    except ImportError:
        print(
            f"error: the xllamacpp package is not installed: pip install '{REQUIREMENT}'",
            file=sys.stderr,
        )
        return 3

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.hostnames = [args.host]
    params.port = args.port
    params.n_ctx = args.ctx_size
    params.n_parallel = args.parallel
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.ui = not args.no_webui
    if args.alias:
        params.model_alias = {args.alias}

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    print(f"system_info: {xllamacpp.get_system_info()}", file=sys.stderr, flush=True)
    # Loads the model and starts the HTTP threads; returns once the server is listening.
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as exc:  # llama.cpp has logged why (bad model file, port taken, ...)
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"serving at {server.listening_address}", file=sys.stderr, flush=True)
    while not stop.wait(1.0):
        pass
    del server  # joins the server's threads
    return 0


if __name__ == "__main__":
    sys.exit(main())
