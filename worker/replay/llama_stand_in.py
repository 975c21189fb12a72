"""The scripted server in llama-server's place, for the replay of a bundled model's run.

The replayed `worker fix --model local` starts, health-checks and stops its engine as the run
did (worker/llm/bundled/server.py, through `$WORKER_LLAMA_SERVER`), so every setting that comes
with the bundled model (json_schema mode, samples, second choices, suspects) is the run's own;
only the answers come from the recording. Run as
`python -m worker.replay.llama_stand_in --script FILE --report FILE [llama-server's flags]`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from worker.llm.scripted_server import ScriptedServer

_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds the `worker` package


def launcher(
    folder: Path, *, script: list[dict[str, Any]], end_with: int | None = None
) -> tuple[Path, Path]:
    """(an executable for `$WORKER_LLAMA_SERVER` that serves `script`, where it reports); with
    `end_with`, a request past the script's end sends that signal to the run that started it."""
    folder.mkdir(parents=True, exist_ok=True)
    script_file, report = folder / "script.json", folder / "served.json"
    script_file.write_text(json.dumps(script), encoding="utf-8")
    report.unlink(missing_ok=True)
    command = [sys.executable, "-m", "worker.replay.llama_stand_in", "--script", str(script_file),
               "--report", str(report)]  # fmt: skip
    if end_with is not None:
        command += ["--end-with", str(end_with)]
    path = folder / "llama-server"
    path.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH={shlex.quote(str(_ROOT))}${{PYTHONPATH:+:$PYTHONPATH}} "
        f'exec {shlex.join(command)} "$@"\n'
    )
    path.chmod(0o755)
    return path, report


def served(report: Path) -> tuple[int, int]:
    """(recorded replies left unused, requests past the end) as the stand-in reported them; a
    stand-in that never started (the run ended before its model was asked) used none."""
    try:
        data = json.loads(report.read_text())
    except (OSError, ValueError):
        script = json.loads((report.parent / "script.json").read_text())
        return len(script), 0
    return int(data["unused"]), int(data["overruns"])


def signal_past_the_end(
    server: ScriptedServer, *, pid: Callable[[], int | None], signum: int, stop: threading.Event
) -> threading.Thread:
    """A thread that sends `signum` to `pid()` once a request comes past the script's end: the
    recorded run was stopped by that signal while it waited for this answer, or just before."""

    def watch() -> None:
        while not stop.wait(0.05):
            target = pid()
            if server.overruns and target is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(target, signum)
                return

    thread = threading.Thread(target=watch, name="replay-ending", daemon=True)
    thread.start()
    return thread


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the script on llama-server's --host/--port until SIGTERM, then report."""
    parser = argparse.ArgumentParser(prog="python -m worker.replay.llama_stand_in")
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--alias", default="local")
    parser.add_argument("--end-with", type=int, default=None, help="a signal for the run")
    args, _llama_flags = parser.parse_known_args(argv)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    script = json.loads(args.script.read_text(encoding="utf-8"))
    with ScriptedServer(script=script, model=args.alias, port=args.port) as server:
        print(f"replay: serving {len(script)} recorded replies on port {args.port}", flush=True)
        if args.end_with is not None:
            signal_past_the_end(server, pid=os.getppid, signum=args.end_with, stop=stop)
        try:
            while not stop.wait(0.2):
                pass
        finally:
            partial = args.report.with_name(args.report.name + ".partial")
            partial.write_text(
                json.dumps({"unused": len(server.unused()), "overruns": server.overruns})
            )
            os.replace(partial, args.report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
