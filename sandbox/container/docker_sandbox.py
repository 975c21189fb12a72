"""One disposable, locked-down container per run, and commands run in it with limits.

Lifecycle (`with DockerSandbox(...) as box`) is separate from use (`box.run(...)`). The container is
removed on every exit path; SIGINT/SIGTERM are held back while it is being removed so a second
Ctrl-C cannot leave it behind.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterable
from contextvars import ContextVar
from importlib import resources
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions
import urllib3.exceptions
from docker.types import Mount

from policies.isolation import HARDENED, Isolation
from policies.limits import Limits
from sandbox.container import checkout_repo
from sandbox.container import placement as where
from sandbox.container.base import BASE_ENV, SandboxBase
from sandbox.container.capture import TRAILER_MAX, from_trailer
from sandbox.container.create import ContainerSpec, Hardening, create_container
from sandbox.container.output import OutputCapture
from sandbox.container.placement import Entry, Placement
from sandbox.container.results import CommandResult
from sandbox.container.writable import volume_mounts, writable_dirs
from sandbox.errors import DaemonGone, SandboxError, SandboxGone
from sandbox.worktree.fixture_guard import FixtureGuard
from sandbox.worktree.workspace import SANDBOX_UID

LABEL = "worker.sandbox"
#: Labels a caller asks for on every container this process starts (`worker eval --ray` names
#: the eval, the task and the attempt, so that a node's sweep finds exactly an attempt's
#: containers): a JSON object in this environment variable, read when a sandbox is made.
RUN_LABELS_ENV = "WORKER_RUN_LABELS"
#: The same for code running in-process (a cluster node's re-check): set for its duration.
RUN_LABELS: ContextVar[dict[str, str] | None] = ContextVar("worker_run_labels", default=None)
CONTROL_MOUNT = "/run/worker"
WORKSPACE_MOUNT = "/workspace"
#: The copy's git directory, a tmpfs of the container's own (checkout_repo.py).
GIT_DIR_MOUNT = f"{WORKSPACE_MOUNT}/{checkout_repo.GIT_DIR_NAME}"
GIT_SYSTEM_CONFIG = f"{CONTROL_MOUNT}/{checkout_repo.SYSTEM_CONFIG_FILE}"
#: Every container's environment (a set-up image's commit keeps it: nothing secret in it).
CONTAINER_ENV = {**BASE_ENV, "GIT_CONFIG_SYSTEM": GIT_SYSTEM_CONFIG}
HOST_CA_BUNDLE = "/etc/ssl/certs"
#: What the Docker client raises when the daemon or the container goes away under it: an API
#: error (404, 409), a broken or refused connection, a stream cut short.
#: (Not every OSError: a full disk under the command's log is ours to report as such.)
DAEMON_ERRORS: tuple[type[BaseException], ...] = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    ConnectionError,
    TimeoutError,
)
LOSS_SETTLE_S = 1.5
GONE = (
    "the sandbox container disappeared from outside while a command ran (removed or killed, "
    "by another tool or `docker rm -f`); its result is lost"
)
DAEMON_STOPPED = (
    "the Docker daemon stopped answering while a command ran (stopped, killed or restarting); "
    "run again once it is back: leftovers are removed then"
)


class DockerSandbox(SandboxBase):
    """A hardened container with `workspace` at /workspace; run commands with `run`.

    The copy is bind-mounted where the daemon sees this machine's files, else sent in
    (`placement`: "auto", "mounted" or "copied"; sandbox/container/placement.py). The first
    git call in the container makes the copy a git repository of its own
    (sandbox/container/checkout_repo.py)."""

    isolation_label = "docker"

    def __init__(
        self,
        *,
        client: docker.DockerClient,
        image: str,
        workspace: Path,
        control_dir: Path,
        limits: Limits,
        output_bytes: int = 16_000,
        log_dir: Path | None = None,
        isolation: Isolation = HARDENED,
        labels: dict[str, str] | None = None,
        placement: str = "auto",
    ) -> None:
        super().__init__(
            workspace=workspace,
            control_dir=control_dir,
            limits=limits,
            output_bytes=output_bytes,
            log_dir=log_dir,
        )
        self._client = client
        self.image = image
        self.isolation = isolation
        self._user = _user_for(isolation)
        self._labels = {
            LABEL: "1", "worker.pid": str(os.getpid()), **run_labels(), **(labels or {})
        }  # fmt: skip
        self._container: Any = None
        self._lost: SandboxError | None = None
        self._asked = where.asked_placement(placement)
        #: Where the copy is for this container, once started.
        self.placement: Placement = "mounted"
        self._sent: dict[str, Entry] | None = None  # copied: the host copy as last sent
        self._count_started = 0
        #: The image's writable folders (writable.py), each a volume of this container's own.
        self._writable: tuple[str, ...] = ()
        #: What they held at this container's first command (runner.py: WRITABLE_BASE).
        self._writable_base: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> DockerSandbox:
        self.start()
        return self

    def start(self) -> None:
        """Create and start the container (no network, read-only root, no capabilities...)."""
        self.control_dir.mkdir(parents=True, exist_ok=True)
        for name in ("runner.py", "reaper.py"):
            src = resources.files("sandbox.container").joinpath(name)
            (self.control_dir / name).write_bytes(src.read_bytes())
        (self.control_dir / checkout_repo.SYSTEM_CONFIG_FILE).write_bytes(
            checkout_repo.system_config(WORKSPACE_MOUNT)
        )
        git = self.control_dir / checkout_repo.WRAPPER_NAME
        git.write_bytes(checkout_repo.wrapper(CONTROL_MOUNT, WORKSPACE_MOUNT))
        git.chmod(0o755)  # the runner puts the control folder first on commands' PATH
        os.chmod(self.control_dir, 0o755)
        asked = self._asked
        first: Placement = "mounted"
        if asked != "auto":
            first = asked
        else:
            first = where.known(self._client) or "mounted"
        try:
            self._start_in(first)
        except _NotShared as exc:
            if asked == "mounted":
                raise SandboxError(
                    f"the Docker daemon does not see this machine's files ({exc}), and "
                    f"{where.PLACEMENT_ENV} or sandbox.placement says mounted: "
                    "set it to auto or copied"
                ) from exc
            self._start_in("copied")
        if asked == "auto":
            where.remember(self._client, self.placement)

    def _start_in(self, placement: Placement) -> None:
        isolation = self.isolation
        self.placement = placement
        self._count_started = 0
        self._user = _user_for(isolation, placement)
        copied = placement == "copied"
        if copied:
            mounts = [
                Mount(WORKSPACE_MOUNT, None, type="volume"),
                Mount(CONTROL_MOUNT, None, type="volume"),
            ]
            self._sent = {}
        else:
            self._sent = None
            mounts = [
                Mount(WORKSPACE_MOUNT, str(self.workspace), type="bind"),
                Mount(CONTROL_MOUNT, str(self.control_dir), type="bind", read_only=True),
            ]
            if isolation.network and os.path.isdir(HOST_CA_BUNDLE):
                mounts.append(Mount(HOST_CA_BUNDLE, HOST_CA_BUNDLE, type="bind", read_only=True))
        # A writable root has the image's writable folders writable in its own layer (set-up,
        # whose commit keeps them); a read-only one gets a copy of each on the daemon's disk.
        self._writable = self._image_writable() if isolation.read_only_root else ()
        self._writable_base = None  # a new container: its volumes are the image's again
        mounts += volume_mounts(self._writable)
        spec = ContainerSpec(
            image=self.image,
            command=["python3", "-S", f"{CONTROL_MOUNT}/reaper.py"],
            hardening=Hardening.of(isolation, self.limits, user=self._user),
            network="bridge" if isolation.network else "none",
            name=f"worker-{uuid.uuid4().hex[:12]}",
            labels={**self._labels, "worker.placement": placement},
            mounts=mounts,
            working_dir=WORKSPACE_MOUNT,
            environment=CONTAINER_ENV,
            tmpfs={GIT_DIR_MOUNT: checkout_repo.tmpfs_options(self._user)},
        )
        try:
            container = create_container(self._client, spec)
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(
                f"sandbox image {self.image} not found: run `worker sandbox build`"
            ) from exc
        except docker.errors.APIError as exc:
            if not copied and where.bind_refused(exc):
                raise _NotShared(f"no {self.workspace} where the daemon runs") from exc
            raise SandboxError(f"cannot start the sandbox: {exc.explanation or exc}") from exc
        self._container = container
        try:
            if copied:
                self._send_control()
            container.start()
        except BaseException as exc:
            self.close()
            if isinstance(exc, docker.errors.APIError):
                raise SandboxError(f"cannot start the sandbox: {exc.explanation or exc}") from exc
            raise

    def _image_writable(self) -> tuple[str, ...]:
        try:
            labels = self._client.images.get(self.image).labels
        except docker.errors.ImageNotFound:
            return ()  # creating the container says so
        except DAEMON_ERRORS as exc:
            raise SandboxError(f"cannot read the image {self.image}: {_say(exc)}") from exc
        try:
            return writable_dirs(labels)
        except ValueError as exc:
            raise SandboxError(f"sandbox image {self.image}: {exc}") from exc

    # -- the copied placement: files sent in through the API ---------------------------------

    def _send_control(self) -> None:
        files = {p.name: p.read_bytes() for p in self.control_dir.iterdir() if p.is_file()}
        with where.control_tar(files, programs=[checkout_repo.WRAPPER_NAME]) as tar:
            self._put(CONTROL_MOUNT, tar)

    def _put(self, path: str, data: Any) -> None:
        try:
            self._client.api.put_archive(self._container.id, path, data)
        except DAEMON_ERRORS as exc:
            raise self._loss() or SandboxError(
                f"cannot copy files into the sandbox: {_say(exc)}"
            ) from exc

    def stage(self, name: str, data: bytes) -> str:
        staged = super().stage(name, data)
        if self.placement == "copied" and self._container is not None:
            with where.control_tar({staged.rsplit("/", 1)[-1]: data}) as tar:
                self._put(CONTROL_MOUNT, tar)
        return staged

    def _sync(self) -> None:
        """Copied: bring the container's copy up to the host copy before a command: what the
        tools changed or removed since the last command, and the fixtures every time (a test may
        have changed them; this puts them back, as the fixture guard does on a mounted copy)."""
        if self._sent is None:
            return
        now = where.scan(self.workspace)
        first = not self._sent
        changed, removed = where.changes(self._sent, now)
        if removed:
            self._remove_in_container(removed)
        again = set(changed)
        if self._guard is not None:
            again.update(rel for rel in self._guard.files if rel in now)
        if again or first:
            owner = _uid_of(self._user)
            with where.tar_of(self.workspace, again, owner=owner, root_entry=first) as tar:
                self._put(WORKSPACE_MOUNT, tar)
        self._sent = now

    def _sweep(self, guard: FixtureGuard) -> tuple[str, ...]:
        """Copied: the fixtures whose bytes in the container differ from the snapshot's (each
        sent again before the next command); mounted: the guard's sweep of the host copy."""
        if self.placement != "copied":
            return guard.sweep()
        files = guard.files
        try:
            exec_id = self._client.api.exec_create(
                self._container.id,
                ["python3", "-S", "-c", _DIGESTS, *files],
                user=self._user,
                workdir=WORKSPACE_MOUNT,
            )["Id"]
            out = self._client.api.exec_start(exec_id)
            found = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1])
        except _UNREADABLE:
            return files  # cannot tell: each is sent again anyway; say so
        return tuple(rel for rel in files if found.get(rel) != guard.digest(rel))

    def _remove_in_container(self, rels: list[str]) -> None:
        api = self._client.api
        for start in range(0, len(rels), 500):
            paths = [f"{WORKSPACE_MOUNT}/{rel}" for rel in rels[start : start + 500]]
            try:
                exec_id = api.exec_create(
                    self._container.id, ["rm", "-rf", "--", *paths], user=self._user
                )["Id"]
                api.exec_start(exec_id)
            except DAEMON_ERRORS as exc:
                raise self._loss() or SandboxError(
                    f"cannot update the sandbox's copy: {_say(exc)}"
                ) from exc

    def pull(self, rels: Iterable[str]) -> None:
        """Copied: bring `rels` from the container's copy to the host copy (what a command
        wrote there on the tools' behalf: `git apply`); nothing to do when mounted."""
        if self.placement != "copied" or self._container is None:
            return
        rels = list(rels)
        where.pull_paths(self._client, self._container.id, WORKSPACE_MOUNT, rels, self.workspace)
        if self._sent is not None:  # those paths and their folders only: no walk of the tree
            keys = {key for rel in rels for key in (rel, *_parents(rel))}
            for key, entry in where.entries(self.workspace, keys).items():
                if entry is not None:
                    self._sent[key] = entry
                else:
                    self._sent.pop(key, None)

    def sync_back(self) -> None:
        """Copied: make the host copy hold what the commands wrote in the container's (set-up's
        files); nothing to do when the copy is mounted."""
        if self.placement != "copied" or self._container is None:
            return
        where.pull(self._client, self._container.id, WORKSPACE_MOUNT, self.workspace)
        self._sent = where.scan(self.workspace)

    def close(self) -> None:
        """Remove the container, with SIGINT/SIGTERM held back until it is gone."""
        container, self._container = self._container, None
        if container is None:
            return
        with _signals_held():
            try:
                container.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if not _removal_in_progress(exc):
                    raise SandboxError(
                        f"could not remove container {container.name}: {exc.explanation or exc}"
                    ) from exc
                self._wait_removed(container.id)  # someone else removes it: done once it is gone
            except DAEMON_ERRORS as exc:
                if self._lost is not None:
                    return  # already said; the next worker start removes the container
                raise DaemonGone(
                    f"could not remove container {container.name}: the Docker daemon stopped "
                    "answering (the next worker start removes it)"
                ) from exc

    @property
    def container_id(self) -> str:
        if self._container is None:
            raise SandboxError("the sandbox is not running")
        return str(self._container.id)

    def commit(self, *, repository: str, tag: str, labels: dict[str, str]) -> str:
        """Save the container's filesystem as an image that starts like the original one."""
        if self._container is None:
            raise SandboxError("the sandbox is not running")
        image = self._container.commit(
            repository=repository,
            tag=tag,
            conf={"Labels": {**labels, "worker.base": self.image}, "Cmd": ["sleep", "infinity"]},
        )
        return str(image.id)

    # -- use: what SandboxBase.run and .stage need of a container -----------------------------

    def _running(self) -> bool:
        return self._container is not None

    def _staged_path(self, safe_name: str) -> str:
        return f"{CONTROL_MOUNT}/{safe_name}"

    def _execute(
        self,
        command: str,
        *,
        limit: float,
        capture: OutputCapture,
        capture_file: str | None,
        env: dict[str, str],
        log_path: Path | None,
    ) -> CommandResult:
        def once() -> CommandResult:
            return self._execute_once(
                command,
                limit=limit,
                capture=capture,
                capture_file=capture_file,
                env=env,
                log_path=log_path,
            )

        try:
            return once()
        except SandboxGone:
            if not self._not_shared():
                raise
        # The daemon mounted a folder of the same name that is not ours (another machine's):
        # the container's first process found no reaper there. Send the files in instead.
        if self._asked == "mounted":
            raise SandboxError(
                f"the Docker daemon does not see this machine's files ({self.control_dir} is "
                f"empty where it runs), and {where.PLACEMENT_ENV} or sandbox.placement says "
                "mounted: set it to auto or copied"
            )
        self.close()
        self._lost = None
        where.remember(self._client, "copied")
        self._start_in("copied")
        capture.restart()  # what the first try printed (the runtime's own error) is not output
        return once()

    def _not_shared(self) -> bool:
        """Whether a mounted container ended because its control folder was not ours."""
        if self.placement != "mounted" or self._container is None or self._count_started > 1:
            return False
        try:
            logs = self._container.logs(stdout=False, stderr=True, tail=20)
        except DAEMON_ERRORS:
            return False
        return b"reaper.py" in logs and b"can't open file" in logs

    def _execute_once(
        self,
        command: str,
        *,
        limit: float,
        capture: OutputCapture,
        capture_file: str | None,
        env: dict[str, str],
        log_path: Path | None,
    ) -> CommandResult:
        trailer = bytearray()
        self._count_started += 1
        started = time.monotonic()
        api = self._client.api
        self._sync()
        try:
            exec_id = api.exec_create(
                self._container.id,
                [
                    "python3",
                    "-S",
                    f"{CONTROL_MOUNT}/runner.py",
                    f"{limit:.3f}",
                    capture_file or "",
                    command,
                    str(self.limits.workspace_mb),
                    "-" if self._writable_base is None else str(self._writable_base),
                    *self._writable,
                ],
                user=self._user,
                workdir=WORKSPACE_MOUNT,
                environment=env,
            )["Id"]
            backstop = threading.Timer(limit + 15.0, self._kill_all)
            backstop.daemon = True
            backstop.start()
            try:
                for out, err in api.exec_start(exec_id, stream=True, demux=True):
                    if out:
                        capture.feed(out)
                    if err and len(trailer) <= TRAILER_MAX:
                        trailer += err
            finally:
                backstop.cancel()
        except DAEMON_ERRORS as exc:
            raise self._loss() or SandboxError(f"running a command failed: {_say(exc)}") from exc
        overflow = len(trailer) > TRAILER_MAX  # longer than the runner writes: not all its own
        result = {} if overflow else _parse_trailer(bytes(trailer))
        runner_died = result.get("exit_code") is None  # killed by the OOM killer, or the backstop
        if runner_died:
            # ...or the container itself went: then there is no result to report, only that.
            lost = self._loss()
            if lost is not None:
                raise lost
            try:
                exit_code = int(api.exec_inspect(exec_id).get("ExitCode") or 137)
            except DAEMON_ERRORS as exc:
                raise self._loss() or SandboxError(f"a command was lost: {_say(exc)}") from exc
        else:
            exit_code = int(result["exit_code"])
        if self._writable_base is None and isinstance(result.get("writable_bytes"), int):
            self._writable_base = result["writable_bytes"]
        name = capture_file or "the capture file"
        captured, capture_error = from_trailer(
            result.pop("capture", None), result.get("capture_over"), name=name
        )
        if overflow and capture_file:
            capture_error = f"{name} did not come back: the runner's result line was too long"
        return CommandResult(
            command=command,
            exit_code=exit_code,
            duration_s=float(result.get("duration_s", time.monotonic() - started)),
            timed_out=bool(result.get("timed_out", time.monotonic() - started >= limit)),
            oom_killed=bool(result.get("oom_killed")) or (runner_died and self._oom_flagged()),
            output=capture.text(),
            output_bytes=capture.total,
            truncated=capture.truncated,
            log_path=log_path,
            captured=captured,
            capture_error=capture_error,
            disk_exceeded=bool(result.get("disk_exceeded")),
            disk_by_free_space=bool(result.get("disk_by_free_space")),
            pids_exceeded=bool(result.get("pids_exceeded")),
            writable_full=bool(result.get("writable_full")),
        )

    def _kill_all(self) -> None:
        # Last resort when the in-container limit did not end the command in time.
        try:
            self._client.api.exec_start(
                self._client.api.exec_create(
                    self.container_id,
                    ["python3", "-S", "-c", "import os; os.kill(-1, 9)"],
                    user=self._user,
                )["Id"]
            )
        except DAEMON_ERRORS:
            pass
        except SandboxError:
            pass

    def _loss(self, *, settle_s: float = LOSS_SETTLE_S) -> SandboxError | None:
        """None while the container runs; else the one error that says what happened to it.

        A container being removed or killed still reads as running for a moment after the
        command's stream ended, so a running one is asked again for up to `settle_s`: only a
        runner killed inside a live container (OOM, the backstop) pays that wait."""
        deadline = time.monotonic() + settle_s
        while self._lost is None:
            if self._container is None:  # closed by this process while the command ran
                return SandboxGone(GONE)
            self._lost = _container_loss(self._client, self._container.id)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        return self._lost

    def _wait_removed(self, container_id: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                self._client.api.inspect_container(container_id)
            except DAEMON_ERRORS:
                return
            time.sleep(0.1)

    def _oom_flagged(self) -> bool:
        try:
            self._container.reload()
            return bool(self._container.attrs["State"].get("OOMKilled"))
        except docker.errors.APIError:
            return False


def _container_loss(client: docker.DockerClient, container_id: str) -> SandboxError | None:
    """Ask the daemon about the container: running (None), gone or stopped from outside
    (SandboxGone), or no answer at all (DaemonGone)."""
    try:
        state = client.api.inspect_container(container_id).get("State") or {}
    except docker.errors.NotFound:
        return SandboxGone(GONE)
    except docker.errors.APIError as exc:
        if _removal_in_progress(exc):
            return SandboxGone(GONE)
        return SandboxError(f"cannot inspect the sandbox container: {_say(exc)}")
    except DAEMON_ERRORS:
        return DaemonGone(DAEMON_STOPPED)
    if state.get("Running") and not state.get("Paused"):
        return None
    return SandboxGone(GONE)


def _removal_in_progress(exc: docker.errors.APIError) -> bool:
    return exc.status_code == 409 and "in progress" in str(exc.explanation or exc)


def _say(exc: BaseException) -> str:
    if isinstance(exc, docker.errors.APIError) and exc.explanation:
        return str(exc.explanation)
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]


def _user_for(isolation: Isolation, placement: Placement = "mounted") -> str:
    """uid:gid of commands: the sandbox user (or, off root and mounted, the worker's own ids so
    that the copy it made stays writable), or root where the configuration asks for it."""
    if isolation.run_as_root:
        return "0:0"
    if os.geteuid() != 0 and placement == "mounted":
        return f"{os.getuid()}:{os.getgid()}"
    return f"{SANDBOX_UID}:{SANDBOX_UID}"


def _parse_trailer(data: bytes) -> dict[str, Any]:
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                parsed = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(parsed, dict):
                return parsed
    return {}


_UNREADABLE: tuple[type[BaseException], ...] = (*DAEMON_ERRORS, ValueError, IndexError)
#: Run in the container after a command (copied placement): each named fixture's sha256, or
#: null where it is no longer a regular file reached without a link.
_DIGESTS = """
import hashlib, json, os, stat, sys
out = {}
for rel in sys.argv[1:]:
    try:
        if os.path.realpath(rel) != os.path.abspath(rel):
            raise OSError
        fd = os.open(rel, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise OSError
            out[rel] = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        out[rel] = None
print(json.dumps(out))
"""


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _uid_of(user: str) -> int:
    return int(user.split(":", 1)[0])


class _NotShared(Exception):
    """The daemon has no folder at the copy's path: it does not see this machine's files."""


class _signals_held:
    """Block SIGINT and SIGTERM (main thread only) for the duration of a `with` block."""

    SIGNALS = {signal.SIGINT, signal.SIGTERM}

    def __enter__(self) -> None:
        self._active = threading.current_thread() is threading.main_thread()
        if self._active:
            signal.pthread_sigmask(signal.SIG_BLOCK, self.SIGNALS)

    def __exit__(self, *exc: object) -> None:
        if self._active:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, self.SIGNALS)


def run_labels() -> dict[str, str]:
    """The labels asked for through `RUN_LABELS` or `RUN_LABELS_ENV`: `worker.*` keys with
    string values only (anything else is ignored: a label never replaces ours)."""
    asked: object = RUN_LABELS.get()
    if asked is None:
        try:
            asked = json.loads(os.environ.get(RUN_LABELS_ENV) or "{}")
        except ValueError:
            return {}
    if not isinstance(asked, dict):
        return {}
    reserved = {LABEL, "worker.pid"}
    return {
        k: v
        for k, v in asked.items()
        if isinstance(k, str) and k.startswith("worker.") and k not in reserved
        and isinstance(v, str)
    }  # fmt: skip
