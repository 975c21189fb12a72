"""The set-up phase's network: the package registry, and nothing else.

Installing a project runs its build backend (setup.py, a PEP 517 hook, npm's install scripts)
with the network on: untrusted code. In `index` mode (the default) the set-up container sits on
an internal Docker network of its own, whose one way out is a filtering proxy in a sidecar
container: Debian's tinyproxy, denying every host but the package registry's. Which hosts those
are is the set-up's installer's to say (sandbox/setup/installer.py): PyPI's for pip, the npm
registry's for Node, plus the hosts of the registry variables the user has set (PIP_INDEX_URL,
npm_config_registry). So a build script cannot reach the cloud metadata address, the
host's private network or any other name; direct connections have no route at all, and no name
outside resolves. `full` is the egress network as it is (Docker's default bridge unless the
caller names another), `none` no network at all.

tinyproxy because it is a Debian package of 100 KB depending on libc alone, so it ships in the
sandbox image that is built offline anyway (no second image to build), and its filter is a plain
allow-list of anchored regular expressions over the requested host name. How it reads them
(version 1.11.1, checked against the running binary): with `FilterURLs Off` each pattern is
matched against the host of the request (no port, no user info: `GET http://a@b/` is host `b`),
for CONNECT and plain HTTP alike; `FilterDefaultDeny Yes` turns the list into an allow-list;
`FilterType ere` reads extended regular expressions, matched case-insensitively. An IP literal
(169.254.169.254) or a trailing dot is a host of its own and matches no `^pypi\\.org$`.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit

import docker
import docker.errors
from docker.types import Mount

from sandbox.container import placement as where
from sandbox.container.create import ContainerSpec, Hardening, create_container
from sandbox.container.docker_sandbox import DAEMON_ERRORS, LABEL, run_labels
from sandbox.errors import SandboxError, SandboxUsageError
from sandbox.setup.installer import PLAIN, Installer
from sandbox.worktree.workspace import SANDBOX_UID

NetworkMode = Literal["index", "full", "none"]
NETWORK_MODES: tuple[str, ...] = ("index", "full", "none")
PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
NO_PROXY_VARIABLES = ("NO_PROXY", "no_proxy")
PROXY_PORT = 8888
PROXY_MOUNT = "/run/worker-proxy"
READY_TIMEOUT_S = 15.0
#: Connections tinyproxy serves at once, one thread each; later ones wait in its listen backlog
#: (1024) until a thread is free. npm 8's proxy agent opens a CONNECT for every tarball at once.
MAX_CLIENTS = 64
#: The sidecar's process limit, which counts threads: tinyproxy's main one, a thread per client,
#: and the readiness probe, with room to spare. At `pids == MAX_CLIENTS` the 64th thread could not
#: start; tinyproxy then closes the client unanswered ("Could not allocate memory for child"),
#: and npm 8 waits out its fetch timeout on that socket (class-transformer's set-up, issue 45).
SIDECAR_PIDS = MAX_CLIENTS + 16
#: tinyproxy resolves a host for every connection, up to MAX_CLIENTS at once (it has no cache).
#: A look-up a resolver dropped is asked again after 1 s, up to 5 times, not after glibc's 5 s
#: twice: of 64 parallel look-ups on this machine 12-14 failed so, none with these options.
SIDECAR_ENV = {"RES_OPTIONS": "timeout:1 attempts:5"}
_HOST = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$")
_UPSTREAM = re.compile(r"^(?:[^\s@/:]+(?::[^\s@/]*)?@)?[A-Za-z0-9_.-]+:\d{1,5}$")
_REFUSED = re.compile(r'refused on filtered domain "([^"]+)"')


@dataclass(frozen=True, kw_only=True)
class NetworkPlan:
    """What one set-up may reach and what its command is told, before anything starts."""

    mode: str
    allowed_hosts: tuple[str, ...]  # the proxy's allow-list (index mode only)
    connect_ports: tuple[int, ...]  # ports a CONNECT may name
    upstream: str | None  # the user's own proxy, tinyproxy's `Upstream` (index mode)
    direct_hosts: tuple[str, ...]  # allowed hosts the user's NO_PROXY keeps off that upstream
    notes: tuple[str, ...]  # what the user should know: a proxy of theirs left out, and why
    passed: dict[str, str]  # host variables for the set-up command (see command_env)
    names: tuple[str, ...]  # the names of the host variables read: part of the cache key
    #: Variables the installer reads its proxy from, besides PROXY_VARIABLES.
    proxy_variables: tuple[str, ...] = ()

    def command_env(self, proxy_url: str | None) -> dict[str, str]:
        """The set-up command's environment: in index mode the proxies are the sidecar, and no
        NO_PROXY can send an index host around it (there is no other way out anyway)."""
        if self.mode != "index" or proxy_url is None:
            return dict(self.passed)
        proxies = (*PROXY_VARIABLES, *self.proxy_variables)
        env = {k: v for k, v in self.passed.items() if k not in (*proxies, *NO_PROXY_VARIABLES)}
        return {**env, **dict.fromkeys(proxies, proxy_url)}


def plan_network(
    mode: str,
    *,
    env_names: tuple[str, ...],
    environ: Mapping[str, str],
    installer: Installer = PLAIN,
) -> NetworkPlan:
    """Read the host environment once: the allow-list (the installer's hosts and those of the
    registry variables set), the upstream proxy, what is passed."""
    if mode not in NETWORK_MODES:
        raise SandboxUsageError(f"set-up network must be one of {', '.join(NETWORK_MODES)}: {mode}")
    known = (*installer.url_variables, *installer.passed, *PROXY_VARIABLES, *NO_PROXY_VARIABLES)
    wanted = [n for n in dict.fromkeys(known) if environ.get(n)]
    passed = {n: environ[n] for n in wanted}
    passed.update({n: environ[n] for n in env_names if n in environ})
    names = tuple(sorted({*wanted, *env_names}))
    if mode != "index":
        return NetworkPlan(
            mode=mode, allowed_hosts=(), connect_ports=(), upstream=None, direct_hosts=(),
            notes=(), passed=passed, names=names,
        )  # fmt: skip
    hosts, ports = list(dict.fromkeys(installer.hosts)), [443, 80]
    for name in installer.url_variables:
        for url in _index_urls(environ.get(name, "")):
            host, port = _host_port(url, name)
            hosts += [host] if host not in hosts else []
            # A port named in an http URL too: Node's fetch (corepack's) tunnels with CONNECT
            # whatever the scheme. The filter still allows the listed hosts alone.
            ports += [port] if port and port not in ports else []
    upstream = _upstream(environ)
    notes: tuple[str, ...] = ()
    if upstream and _loopback(upstream):
        notes = (f"set-up: your proxy {upstream.rpartition('@')[2]} is on this machine's loopback, "
                 "which no container reaches: the set-up proxy goes direct",)  # fmt: skip
        upstream = None
    return NetworkPlan(
        mode=mode,
        allowed_hosts=tuple(hosts),
        connect_ports=tuple(ports),
        upstream=upstream,
        direct_hosts=_no_proxy_matches(hosts, environ) if upstream else (),
        notes=notes,
        passed=passed,
        names=names,
        proxy_variables=installer.proxy_variables,
    )


def tinyproxy_config(plan: NetworkPlan, *, allow_subnet: str) -> str:
    """The sidecar's configuration: clients of the internal network only, listed hosts only."""
    lines = [
        "# One set-up's egress proxy, written by worker (sandbox/setup/network.py).",
        f"Port {PROXY_PORT}",
        "Timeout 600",
        f"MaxClients {MAX_CLIENTS}",
        "LogLevel Notice",  # refusals are notices; each connection would be one more line
        "DisableViaHeader Yes",
        f"Allow {allow_subnet}",
        f'Filter "{PROXY_MOUNT}/filter"',
        "FilterURLs Off",
        "FilterType ere",
        "FilterDefaultDeny Yes",
        *(f"ConnectPort {p}" for p in plan.connect_ports),
    ]
    if plan.upstream:
        lines.append(f"Upstream http {plan.upstream}")
        lines += [f'Upstream none "{h}"' for h in plan.direct_hosts]
    return "\n".join(lines) + "\n"


def filter_text(hosts: tuple[str, ...]) -> str:
    """One anchored pattern per host; a validated host has no metacharacter but the dot.

    >>> filter_text(("pypi.org", "my-index_1.example"))
    '^pypi\\\\.org$\\n^my-index_1\\\\.example$\\n'
    """
    return "".join("^" + h.replace(".", "\\.") + "$\n" for h in hosts)


def network_error_in(output: str) -> str | None:
    """A one-line description of the first network failure the output shows, or None."""
    for line in output.splitlines():
        for needle, what in _NETWORK_SIGNS:
            if needle.lower() in line.lower():
                return f"{what}: {' '.join(line.split())[:200]}"
    return None


_NETWORK_SIGNS = (
    ("403 Filtered", "refused by the set-up proxy (not an allowed index host)"),
    ("403 Access violation", "refused by the set-up proxy (port not allowed)"),
    ("Access denied", "refused by a proxy"),
    ("403 Forbidden", "refused (403 Forbidden)"),
    ("ProxyError", "the proxy refused or failed"),
    ("Tunnel connection failed", "the proxy refused or failed"),
    ("Proxy response (403)", "refused by the set-up proxy"),
    ("Temporary failure in name resolution", "a host name did not resolve"),
    ("Name or service not known", "a host name did not resolve"),
    ("Network is unreachable", "no route to the network"),
    ("Failed to establish a new connection", "a connection could not be made"),
    ("Connection refused", "a connection was refused"),
    ("timed out", "a connection timed out"),
    ("No matching distribution found", "no index offered the package"),
    ("Could not find a version that satisfies", "no index offered the package"),
)


class ProxyFence:
    """`with ProxyFence(...) as fence`: an internal network and its filtering sidecar, both
    removed on exit. Put the set-up container on `fence.network`; its proxy is `fence.url`."""

    def __init__(
        self,
        *,
        client: docker.DockerClient,
        image: str,
        plan: NetworkPlan,
        egress_network: str,
        config_dir: Path,
    ) -> None:
        self._client = client
        self._image = image
        self._plan = plan
        self._egress = egress_network
        self._config_dir = config_dir
        suffix = uuid.uuid4().hex[:12]
        self.network = f"worker-setup-net-{suffix}"
        self.sidecar = f"worker-proxy-{suffix}"
        self.url = f"http://{self.sidecar}:{PROXY_PORT}"
        self._labels = {
            LABEL: "1", "worker.pid": str(os.getpid()), **run_labels(), "worker.phase": "setup"
        }  # fmt: skip
        self._net: Any = None
        self._container: Any = None

    def __enter__(self) -> ProxyFence:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _start(self) -> None:
        try:
            self._net = self._client.networks.create(
                self.network, driver="bridge", internal=True, labels=self._labels
            )
            subnet = self._net.attrs["IPAM"]["Config"][0]["Subnet"]
            self._write_config(subnet)
            asked = where.asked_placement()
            known = where.known(self._client) if asked == "auto" else asked
            self._container = self._sidecar(copied=known == "copied")
            self._client.networks.get(self._egress).connect(self._container)
        except docker.errors.NotFound as exc:
            raise SandboxError(f"set-up network: {_say(exc)}") from exc
        except docker.errors.APIError as exc:
            raise SandboxError(f"cannot start the set-up proxy: {_say(exc)}") from exc
        self._wait_ready()

    def _sidecar(self, *, copied: bool) -> Any:
        """The proxy's container, started, its configuration mounted from the host or (where the
        daemon does not see this machine's files) sent in (sandbox/container/placement.py)."""
        if copied:
            mount = Mount(PROXY_MOUNT, None, type="volume")
        else:
            mount = Mount(PROXY_MOUNT, str(self._config_dir), type="bind", read_only=True)
        spec = ContainerSpec(
            image=self._image,
            command=["tinyproxy", "-d", "-c", f"{PROXY_MOUNT}/tinyproxy.conf"],
            hardening=Hardening(
                user=_sidecar_user(), memory_mb=64, pids=SIDECAR_PIDS, cpus=1, tmp_mb=8
            ),
            network=self.network,
            name=self.sidecar,
            labels={**self._labels, "worker.phase": "setup-proxy"},
            mounts=[mount],
            working_dir="/",
            environment=SIDECAR_ENV,
        )
        try:
            container = create_container(self._client, spec)
        except docker.errors.APIError as exc:
            if copied or not where.bind_refused(exc) or where.asked_placement() == "mounted":
                raise
            where.remember(self._client, "copied")
            return self._sidecar(copied=True)
        self._container = container
        if copied:
            uid = int(_sidecar_user().split(":")[0])
            names = [p.name for p in self._config_dir.iterdir()]
            with where.tar_of(self._config_dir, names, owner=uid) as tar:
                self._client.api.put_archive(container.id, PROXY_MOUNT, tar)
        container.start()
        return container

    def _write_config(self, subnet: str) -> None:
        # A bind-mounted folder, not container configuration: an upstream proxy's password
        # must not show in `docker inspect`. Readable by the sidecar's user alone.
        self._config_dir.mkdir(mode=0o755, parents=True, exist_ok=True)
        uid = SANDBOX_UID if os.geteuid() == 0 else os.getuid()
        texts = {
            "tinyproxy.conf": tinyproxy_config(self._plan, allow_subnet=subnet),
            "filter": filter_text(self._plan.allowed_hosts),
        }
        for name, text in texts.items():
            path = self._config_dir / name
            path.write_text(text, encoding="utf-8")
            os.chmod(path, 0o400)
            if os.geteuid() == 0:
                os.chown(path, uid, uid)

    def _wait_ready(self) -> None:
        # Its log says nothing at level Notice once it listens: ask the port itself.
        probe = f"import socket; socket.create_connection(('127.0.0.1', {PROXY_PORT}), 1).close()"
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if self._container.exec_run(["python3", "-S", "-c", probe]).exit_code == 0:
                    return
            except docker.errors.APIError:
                pass  # not running (yet, or any more): the status says which
            self._container.reload()
            if self._container.status not in ("created", "running"):
                break
            time.sleep(0.05)
        tail = "\n".join(self._logs().splitlines()[-10:])
        raise SandboxError(
            f"the set-up proxy did not start (is tinyproxy in {self._image}?):\n{tail}"
        )

    def refused_hosts(self) -> tuple[str, ...]:
        """The hosts the proxy refused so far, in order, once each."""
        found = dict.fromkeys(_REFUSED.findall(self._logs()))
        return tuple(found)

    def _logs(self) -> str:
        if self._container is None:
            return ""
        try:
            return bytes(self._container.logs()).decode("utf-8", "replace")
        except DAEMON_ERRORS:
            return ""

    def close(self) -> None:
        """Remove the sidecar, then the network (attached containers must be gone first)."""
        container, self._container = self._container, None
        net, self._net = self._net, None
        try:
            if container is not None:
                container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        finally:
            if net is not None:
                _remove_network(net)


def attach(client: docker.DockerClient, container_id: str, network: str) -> None:
    """Move a running container from the default bridge to `network`.

    The sandbox starts on the default bridge (where the host's CA bundle is mounted for it) and
    is moved before its first command: until then only its own idle process runs there."""
    try:
        client.api.disconnect_container_from_network(container_id, "bridge", force=True)
        client.api.connect_container_to_network(container_id, network)
    except docker.errors.APIError as exc:
        raise SandboxError(f"cannot put the set-up container on {network}: {_say(exc)}") from exc


def _remove_network(net: Any) -> None:
    # A container just removed can hold its endpoint for a moment.
    for _ in range(20):
        try:
            net.remove()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            time.sleep(0.1)
    net.remove()


def _index_urls(value: str) -> list[str]:
    """URLs in a variable: space-separated, uv's `name=url` form too; GOPROXY's list, split at
    `,` and `|`, without its `direct` and `off`."""
    urls = []
    for item in re.split(r"[\s,|]+", value.strip()):
        if item in ("", "direct", "off"):
            continue
        name, eq, rest = item.partition("=")
        urls.append(rest if eq and "://" not in name else item)
    return urls


def _host_port(url: str, variable: str) -> tuple[str, int | None]:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if not _HOST.match(host):
        raise SandboxUsageError(
            f"{variable}: cannot allow the index host {host or url!r} through the set-up proxy "
            "(a name or IPv4 address is needed; or run set-up with --setup-network full)"
        )
    try:
        return host, parts.port
    except ValueError as exc:
        raise SandboxUsageError(f"{variable}: bad port in the index URL") from exc


def _upstream(environ: Mapping[str, str]) -> str | None:
    """The user's own proxy as tinyproxy's `[user:pass@]host:port`, or None."""
    for name in PROXY_VARIABLES:
        value = environ.get(name, "").strip()
        if not value:
            continue
        parts = urlsplit(value if "://" in value else f"http://{value}")
        netloc = (
            parts.netloc
            if parts.port
            else f"{parts.netloc}:{80 if parts.scheme == 'http' else 443}"
        )
        if parts.scheme not in ("http", "") or not _UPSTREAM.match(netloc):
            raise SandboxUsageError(
                f"{name}: the set-up proxy can forward to an http://host:port proxy only; "
                "run set-up with --setup-network full to use this one directly"
            )
        return netloc
    return None


def _loopback(netloc: str) -> bool:
    host = netloc.rpartition("@")[2].rpartition(":")[0].lower()
    return host == "localhost" or host.startswith("127.")


def _no_proxy_matches(hosts: list[str], environ: Mapping[str, str]) -> tuple[str, ...]:
    entries = [
        e.strip().lstrip("*").lstrip(".").lower()
        for n in NO_PROXY_VARIABLES
        for e in environ.get(n, "").split(",")
        if e.strip()
    ]
    return tuple(h for h in hosts if any(e == "" or h == e or h.endswith("." + e) for e in entries))


def _sidecar_user() -> str:
    # The sandbox user when worker is root (the config files are chowned to it), else our own.
    uid = SANDBOX_UID if os.geteuid() == 0 else os.getuid()
    gid = SANDBOX_UID if os.geteuid() == 0 else os.getgid()
    return f"{uid}:{gid}"


def _say(exc: BaseException) -> str:
    if isinstance(exc, docker.errors.APIError) and exc.explanation:
        return str(exc.explanation)
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]
