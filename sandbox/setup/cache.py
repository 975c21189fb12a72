"""The dependency set-up phase, cached as an image keyed by what determines its result.

`pip install -e .[test]` runs once, on a throwaway copy of the tree, as the sandbox user; the
container is committed as `worker-setup:<key>`, so the next run on the same repository starts
warm. Installing runs the project's own build code, so its network is fenced
(sandbox/setup/network.py): by default the package registry alone. The registry and proxy
variables a user has set, and the extra ones named in `SetupSpec.env_names` (a private index's
token, `NPM_TOKEN`), reach the set-up command through its exec environment only: never the
container's configuration (so never the committed image's), never a file, never a progress
line. Their names, the network mode and the allowed hosts are part of the key; their values are
not. The agent's own sandbox never has a network.

What differs between ecosystems is data, the spec's `installer` (sandbox/setup/installer.py):
pip's by default; npm's, Yarn's or pnpm's from sandbox/ecosystems/node/setup_infer.py, whose
`node_modules` is moved into the image and linked from each copy (sandbox/setup/tree_dirs.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import docker
import docker.errors

from policies.config import ENV_NAME
from policies.isolation import HARDENED, Isolation
from policies.limits import Limits
from policies.secrets import Secrets
from sandbox.container.docker_sandbox import DockerSandbox
from sandbox.container.image import DEFAULT_IMAGE
from sandbox.container.results import CommandResult
from sandbox.errors import SandboxError, SandboxUsageError, SetupFailed
from sandbox.home import worker_home
from sandbox.setup.installer import CACHE_DIR, PLAIN, FromCheckout, Installer
from sandbox.setup.key import hash_inputs
from sandbox.setup.log import failure_cause, keep_log
from sandbox.setup.network import (
    NETWORK_MODES,
    PROXY_VARIABLES,
    NetworkMode,
    NetworkPlan,
    ProxyFence,
    attach,
    network_error_in,
    plan_network,
)
from sandbox.setup.secret_scan import SecretFound, find_secret
from sandbox.setup.tool import SetupTool
from sandbox.setup.tree import added_files, ensure_on_host, manifest, store
from sandbox.setup.tree_dirs import LINKS_LABEL, find_tree_dirs, make_deps_dir, move_tree_dirs
from sandbox.worktree.workspace import SANDBOX_UID, make_run_dir, remove_dir, snapshot

SETUP_REPOSITORY = "worker-setup"
TAIL_LINES = 15
#: What changes the set-up images' contents beyond the key's inputs: bump to set up anew.
RECIPE = (
    "3"  # 3: keyed on the installer's own inputs; 2: tree files kept, git versions, fresh pip env
)
#: pip in the image's venv sees the base's packages (Debian's pytest 7.2) as installed and keeps
#: them; a fresh environment, which is what a project's CI has, gets what its requirements ask
#: for at the newest, as pip resolves it with nothing installed.
FRESH_ENV = {"PIP_IGNORE_INSTALLED": "1"}
#: Temporary files on the set-up container's disk, not in its 256 MB /tmp: pip keeps every wheel
#: its resolver tries there (filelock's test extras: 78 virtualenv wheels of 5.5 MB, "No space
#: left on device", bench/corpus.py). pip removes them when it ends, before the commit.
SETUP_TMP = {"TMPDIR": "/var/tmp"}
_NAME = re.compile(ENV_NAME)
_URL_SECRET = re.compile(r"://[^/@\s]+@")
#: The way out, named when set-up wrote a secret down.
SECRET_WAY_OUT = (
    "hand it to the tool in a variable it reads at install time (PIP_INDEX_URL; an .npmrc "
    "line //host/:_authToken=${NPM_TOKEN}), never in a file: docs/configuration.md, "
    "'Set-up secrets'"
)


@dataclass(frozen=True, kw_only=True)
class SetupSpec:
    """One dependency set-up: its command, its network, the host variables it also gets."""

    command: str
    network: NetworkMode = "index"
    env_names: tuple[str, ...] = ()  # read from os.environ at run time, passed to set-up only
    timeout_s: float = 900.0
    installer: Installer = PLAIN  # the registry hosts, variables and folders of its ecosystem
    #: The tool the command runs, from its cached layer (sandbox/setup/tool_layer.py).
    tool: SetupTool | None = None

    def __post_init__(self) -> None:
        bad = [n for n in self.env_names if not _NAME.match(n)]
        if bad:
            raise SandboxUsageError(f"not an environment variable name: {', '.join(bad)}")
        if self.network not in NETWORK_MODES:
            raise SandboxUsageError(
                f"set-up network must be one of {', '.join(NETWORK_MODES)}: {self.network}"
            )


@dataclass(frozen=True, kw_only=True)
class SetupResult:
    """The set-up image and how it came to be; `allowed_hosts` is empty unless `index`."""

    image: str
    cached: bool
    duration_s: float
    network: str
    allowed_hosts: tuple[str, ...]
    #: A host folder of the files set-up wrote into the tree, laid over each new copy.
    tree: Path | None = None
    version: str | None = None  # handed to a build that reads its version from git
    log: Path | None = None  # the set-up's whole output, where this machine kept it


class SetupWroteSecret(SetupFailed):
    """Set-up wrote a set-up-only variable's value into a file: nothing of that set-up is kept
    (no image, no tree files); `str()` names the variable and the file, never the value."""

    def __init__(
        self, *, command: str, found: SecretFound, setup_network: str, log: Path | None
    ) -> None:
        SandboxError.__init__(
            self,
            f"set-up wrote the value of {found.name} into {found.path}: no set-up image kept; "
            + SECRET_WAY_OUT,
        )
        self.command, self.tail, self.network_error = command, "", None
        self.setup_network, self.timed_out, self.log = setup_network, False, log
        self.found = found


def setup_key(
    client: docker.DockerClient,
    *,
    base_image: str,
    spec: SetupSpec,
    repo: Path,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Hash of what decides the set-up image (sandbox/setup/key.py): the base image id, the
    command, the network (mode, allowed hosts, the names of the variables passed: never their
    values), the installer, and its input files' contents."""
    spec, env_source = with_host_config(spec, _environ(environ))
    plan = plan_network(
        spec.network, env_names=spec.env_names, environ=env_source, installer=spec.installer
    )
    version = spec.installer.from_checkout(repo) if spec.installer.from_checkout else None
    return _key(client, base_image=base_image, spec=spec, repo=repo, plan=plan, version=version)


def prepare_setup_image(
    client: docker.DockerClient,
    *,
    base_image: str,
    spec: SetupSpec,
    repo: Path,
    limits: Limits,
    isolation: Isolation = HARDENED,
    progress: Callable[[str], None] = lambda _m: None,
    egress_network: str = "bridge",
    environ: Mapping[str, str] | None = None,
    proxy_image: str = DEFAULT_IMAGE,
) -> SetupResult:
    """The set-up image for `repo`, built now unless already cached.

    `egress_network` is where set-up reaches the outside: the proxy's second network in `index`
    mode, the set-up container's own in `full`. `proxy_image` holds tinyproxy (the sandbox
    image does). Raises SetupFailed when the command fails or times out."""
    started = time.monotonic()
    spec, env_source = with_host_config(spec, _environ(environ))
    plan = plan_network(
        spec.network, env_names=spec.env_names, environ=env_source, installer=spec.installer
    )
    version = spec.installer.from_checkout(repo) if spec.installer.from_checkout else None
    key = _key(client, base_image=base_image, spec=spec, repo=repo, plan=plan, version=version)
    tag = f"{SETUP_REPOSITORY}:{key}"
    kept = worker_home() / "setup" / key

    def result(cached: bool) -> SetupResult:
        return SetupResult(
            image=tag,
            cached=cached,
            duration_s=round(time.monotonic() - started, 3),
            network=spec.network,
            allowed_hosts=plan.allowed_hosts,
            tree=ensure_on_host(client, tag, kept / "tree"),
            version=version.version if version else None,
            log=kept / "setup.log" if (kept / "setup.log").is_file() else None,
        )

    try:
        client.images.get(tag)
        progress(f"set-up cached: {tag}")
        return result(True)
    except docker.errors.ImageNotFound:
        pass
    missing = [n for n in spec.env_names if n not in env_source]
    if missing:
        raise SandboxUsageError(f"set-up needs {', '.join(missing)}: not set in the environment")
    where = f"only {', '.join(plan.allowed_hosts)}" if spec.network == "index" else spec.network
    for note in plan.notes:
        progress(note)
    progress(f"set-up (network: {where}): {_summary(spec.command)}")
    if version is not None:
        given = f"given {version.version}" + (" in PKG-INFO" if version.files() else "")
        progress(f"set-up: the build reads its version from git: {given}")
    run_dir = make_run_dir("worker-setup-")
    try:
        workspace = snapshot(repo, run_dir)
        for rel, text in (version.files() if version else {}).items():
            if not os.path.lexists(path := workspace.path / rel):  # never over the tree's own
                path.write_text(text, encoding="utf-8")
        before = manifest(workspace.path)
        with ExitStack() as stack:
            fence = None
            target = egress_network if spec.network == "full" else None
            if spec.network == "index":
                fence = stack.enter_context(
                    ProxyFence(
                        client=client,
                        image=proxy_image,
                        plan=plan,
                        egress_network=egress_network,
                        config_dir=run_dir / "proxy",
                    )
                )
                target = fence.network
            box = DockerSandbox(
                client=client,
                image=base_image,
                workspace=workspace.path,
                control_dir=run_dir / "control",
                limits=limits,
                log_dir=run_dir / "logs",
                # A writable root: that is what set-up is for; the result is committed, and the
                # agent's sandbox gets neither it nor any network. With a network, the host's CA
                # bundle is mounted (DockerSandbox does that for a networked container).
                isolation=replace(isolation, network=spec.network != "none", read_only_root=False),
                labels={"worker.phase": "setup"},
            )
            secrets = _secrets(spec, env_source)
            box.mask(secrets)  # in its output and its log
            stack.enter_context(box)
            if target is not None and target != "bridge":
                attach(client, box.container_id, target)
            installer = spec.installer
            if installer.needs_deps_dir:
                make_deps_dir(client, box.container_id, uid=SANDBOX_UID)
            env = {**plan.command_env(fence.url if fence else None), **FRESH_ENV, **SETUP_TMP}
            env |= installer.env
            env |= version.env() if version else {}
            ran = box.run(spec.command, timeout_s=spec.timeout_s, env=env)
            log = keep_log(ran, kept / "setup.log")
            refused = fence.refused_hosts() if fence else ()
            if not ran.ok:
                raise _failure(spec, plan, ran, refused, log=log)
            box.sync_back()  # a copy in the container: what set-up wrote comes back
            if refused:  # it did without them; the user may want to know all the same
                progress(f"set-up: the proxy refused {', '.join(refused[:5])} (not index hosts)")
            found_dirs = find_tree_dirs(workspace.path, installer.tree_dirs)
            moved = move_tree_dirs(box, found_dirs, scratch=installer.scratch, timeout_s=600)
            if installer.env or installer.tree_dirs:  # its caches: not for the image
                box.run(f"rm -rf {CACHE_DIR}", timeout_s=300)
            found = added_files(before, manifest(workspace.path))
            # Before anything is kept: a value only set-up had, written down, ends it here.
            hit = find_secret(
                client, box.container_id, secrets, tree=workspace.path, tree_files=found.files
            )
            if hit is not None:
                raise SetupWroteSecret(
                    command=spec.command, found=hit, setup_network=spec.network, log=log
                )
            store(client, box.container_id, workspace.path, found, kept / "tree", links=moved)
            if moved:
                progress(f"set-up: {', '.join(moved[:3])} kept in the image, linked from the tree")
            if found.files:
                progress(f"set-up wrote {_files(found.files)} into the tree: kept with the image")
            if found.left_out:
                progress(f"set-up: not kept (over the caps): {_files(found.left_out)}")
            _commit(
                client, box.container_id, base_image=base_image, tag=key, spec=spec, links=moved
            )
    finally:
        remove_dir(run_dir)
    done = result(False)
    progress(f"set-up done in {done.duration_s:.1f}s, cached as {tag}")
    return done


def _summary(command: str) -> str:
    """A set-up command in a few words: a long one (a lock file's export) by what it installs.

    >>> _summary("python -m pip install -e '.[test]'")
    "python -m pip install -e '.[test]'"
    >>> _summary("go mod download && " + "x" * 160)[-44:]
    'xxx... (the whole command is in report.json)'
    """
    if len(command) <= 160:
        return command
    tools = [t for t in ("uv export", "poetry export", "pdm export") if t in command]
    how = f"{tools[0]}, then pip; " if tools else ("pip; " if "pip" in command else "")
    return f"{command[:100]}... ({how}the whole command is in report.json)"


def _files(names: tuple[str, ...]) -> str:
    shown = ", ".join(names[:3])
    return f"{len(names)} files ({shown}{', ...' if len(names) > 3 else ''})"


def _key(
    client: docker.DockerClient,
    *,
    base_image: str,
    spec: SetupSpec,
    repo: Path,
    plan: NetworkPlan,
    version: FromCheckout | None,
) -> str:
    digest = hashlib.sha256()
    digest.update(client.images.get(base_image).id.encode())
    given = version.key if version else ""
    parts = (RECIPE, spec.command, spec.network, *plan.names, "|", *plan.allowed_hosts, given)
    for part in (*parts, *spec.installer.key_parts()):
        digest.update(b"\0" + part.encode())
    digest.update(b"\0")
    hash_inputs(digest, repo, spec.installer.inputs)
    return digest.hexdigest()[:24]


def _commit(
    client: docker.DockerClient,
    container_id: str,
    *,
    base_image: str,
    tag: str,
    spec: SetupSpec,
    links: tuple[str, ...],
) -> None:
    """Commit with the base image's own environment and the installer's fixed `image_env`:
    the daemon merges the container's variables in (only the sandbox's fixed BASE_ENV: the
    set-up's variables were the exec's)."""
    extra = spec.installer.image_env
    base = client.images.get(base_image).attrs.get("Config", {}).get("Env") or []
    kept = [e for e in base if e.partition("=")[0] not in extra]
    base_env = kept + [f"{k}={v}" for k, v in extra.items()]
    labels = {"worker.setup": spec.command[:200], "worker.base": base_image}
    if links:
        labels[LINKS_LABEL] = json.dumps(list(links))
    client.api.commit(
        container_id,
        repository=SETUP_REPOSITORY,
        tag=tag,
        conf={"Env": base_env, "Labels": labels, "Cmd": ["sleep", "infinity"]},
    )


def _failure(
    spec: SetupSpec,
    plan: NetworkPlan,
    ran: CommandResult,
    refused: tuple[str, ...],
    *,
    log: Path | None,
) -> SetupFailed:
    output = ran.output  # the run's secrets masked already (the box's mask)
    try:
        whole = log.read_text(errors="replace") if log else output
    except OSError:
        whole = output
    tail = "\n".join(output.rstrip().splitlines()[-TAIL_LINES:])
    network_error = network_error_in(output)
    if refused:
        network_error = (
            f"the set-up proxy refused {', '.join(refused[:5])}: index mode reaches "
            f"{', '.join(plan.allowed_hosts)} only ({spec.installer.widen_hint})"
        )
    how = (
        f"timed out after {ran.duration_s:.0f}s" if ran.timed_out else f"failed ({ran.describe()})"
    )
    return SetupFailed(
        command=spec.command,
        tail=tail,
        network_error=network_error,
        setup_network=spec.network,
        how=how,
        timed_out=ran.timed_out,
        cause=failure_cause(whole),
        log=log,
    )


def with_host_config(
    spec: SetupSpec, environ: Mapping[str, str]
) -> tuple[SetupSpec, Mapping[str, str]]:
    """`spec` and `environ` with what the installer reads from the user's own configuration
    (`Installer.host_config`) as if set there: a variable the installer knows (a registry URL,
    a passed one) as the host's own, any other as if named with --setup-env."""
    read = spec.installer.host_config
    found = dict(read()) if read is not None else {}
    if not found:
        return spec, environ
    known = (*spec.installer.url_variables, *spec.installer.passed)
    named = (*spec.env_names, *(n for n in found if n not in known))
    return replace(spec, env_names=tuple(dict.fromkeys(named))), {**environ, **found}


def _secrets(spec: SetupSpec, environ: Mapping[str, str]) -> Secrets:
    """Values never to repeat or keep: the named variables', and the credentials inside
    index/proxy URLs."""
    values = {n: environ[n] for n in spec.env_names if n in environ}
    for name in (*spec.installer.url_variables, *PROXY_VARIABLES):
        for i, match in enumerate(_URL_SECRET.finditer(environ.get(name, ""))):
            values[f"the credentials in {name}" + (f" ({i + 1})" if i else "")] = match.group(0)[
                3:-1
            ]
    return Secrets.of(values)


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ
