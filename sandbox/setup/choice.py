"""Which set-up a run gets: the one given (`--setup`, the configuration), else the one inferred
from the repository's files (sandbox/ecosystems/python/setup_infer.py), else none; and whether the
sandbox's
Python is one the project accepts (`requires-python`), said before anything runs.

`worker fix`, `worker ci`, `worker eval`'s re-check and `worker sandbox run-tests` all choose
here, so a repository is set up the same way whichever command runs it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import docker
import docker.errors

from policies.config import WorkerConfig
from sandbox.ecosystems.base import Ecosystem
from sandbox.ecosystems.python.choice import WrongPython
from sandbox.ecosystems.python.pins import python_satisfies
from sandbox.home import worker_home
from sandbox.setup.cache import SetupSpec
from sandbox.setup.installer import PLAIN, Installer
from sandbox.setup.plan import SetupPlan

Source = Literal["given", "inferred", "none", "off"]
PYTHON_CACHE = "image-python.json"  # image id -> its Python, under the worker's cache folder


@dataclass(frozen=True, kw_only=True)
class SetupChoice:
    """The set-up chosen for a run, and why; `spec` None: nothing runs before the tests."""

    source: Source
    spec: SetupSpec | None
    plan: SetupPlan | None = None

    def describe(self) -> str:
        """One line for the user, said before the set-up runs ("": nothing to add to the
        set-up's own line, which names a given command)."""
        if self.source == "given":
            return ""
        if self.source == "off":
            return "set-up: off (--no-setup)"
        assert self.plan is not None
        return self.plan.describe()

    def said(self) -> str:
        """What set-up ran, for a baseline that cannot import what it needs."""
        if self.spec is not None:
            return f"set-up that ran ({self.source}): {self.spec.command}"
        if self.source == "off":
            return "set-up is off (--no-setup): pass --setup 'pip install ...' to install it"
        return (
            "no set-up was found in the repository's files (pyproject.toml, setup.py, "
            "requirements*.txt, tox.ini): pass --setup 'pip install ...'"
        )

    def to_dict(self) -> dict[str, Any]:
        """The report's `setup` fields this choice knows (the run adds how it went)."""
        plan, spec = self.plan, self.spec
        return {
            "source": self.source,
            "command": spec.command if spec else None,
            "from": list(plan.sources) if plan else [],
            "notes": list(plan.notes) if plan else [],
            "network": spec.network if spec else None,
            "env_names": list(spec.env_names) if spec else [],
            "requires_python": plan.requires_python if plan else None,
            "timeout_s": spec.timeout_s if spec else None,
        }


def choose_setup(
    repo: Path, config: WorkerConfig, ecosystem: Ecosystem | None = None
) -> SetupChoice:
    """The given set-up, else the one `ecosystem` infers (unless set-up is off); with no
    ecosystem, the one the repository's files or test command name (sandbox/ecosystems/)."""
    if ecosystem is None:
        from sandbox.ecosystems import ecosystem_for

        ecosystem = ecosystem_for(repo, config.test_cmd)
    if ecosystem is None:
        plan = SetupPlan(command=None) if config.setup_infer else None
    else:
        plan = ecosystem.infer_setup(repo) if config.setup_infer else None

    def spec(command: str) -> SetupSpec:
        return SetupSpec(
            command=command,
            network=config.setup_network,
            env_names=config.setup_env,
            timeout_s=config.setup_timeout_s,
            installer=_installer(repo, plan, ecosystem),
        )

    if config.setup:
        return SetupChoice(source="given", spec=spec(config.setup), plan=plan)
    if plan is None:
        return SetupChoice(source="off", spec=None)
    if plan.command is None:
        return SetupChoice(source="none", spec=None, plan=plan)
    return SetupChoice(source="inferred", spec=spec(plan.command), plan=plan)


def _installer(repo: Path, plan: SetupPlan | None, ecosystem: Ecosystem | None) -> Installer:
    """The installer a set-up command runs as: the plan's, else (inference off) the one the
    repository's ecosystem would infer, else a plain command's."""
    if plan is not None:
        return plan.installer
    return ecosystem.infer_setup(repo).installer if ecosystem is not None else PLAIN


def before_setup(
    choice: SetupChoice,
    client: docker.DockerClient | None,
    image: str,
    *,
    say: Callable[[str], None],
    python_seen: Callable[[tuple[int, int, int] | None], None] = lambda _v: None,
) -> None:
    """Once the image is there and before set-up runs: say the inferred set-up and what it did
    not follow, tell `python_seen` the image's Python, and stop when the project does not
    accept it."""
    if said := choice.describe():
        say(said)
    for note in choice.plan.notes if choice.plan and choice.spec else ():
        say(f"set-up: not followed: {note}")
    python = image_python(client, image, cache_dir=worker_home())
    python_seen(python)
    check_python(choice, python, image=image or "(the host)")


def check_python(choice: SetupChoice, python: tuple[int, int, int] | None, *, image: str) -> None:
    """Stop, in one line, when the project's `requires-python` excludes the image's Python (an
    image named by the user, or a chosen one whose Python is not what its release promised)."""
    wanted = choice.plan.requires_python if choice.plan else None
    if wanted is None or python is None or python_satisfies(wanted, python) is not False:
        return
    have = ".".join(map(str, python))
    raise WrongPython(
        f"the project requires Python {wanted} and the sandbox image {image} has {have}: build "
        "an image for another Python with `worker sandbox build --base IMAGE --image NAME` "
        "(docs/configuration.md) and pass --image NAME"
    )


def image_python(
    client: docker.DockerClient | None, image: str, *, cache_dir: Path
) -> tuple[int, int, int] | None:
    """The Python that `python` runs in `image` (the host's for the local backend), remembered
    by image id so only the first run on an image starts a container for it."""
    if client is None:
        return sys.version_info[:3]
    try:
        image_id = client.images.get(image).id
    except docker.errors.ImageNotFound:
        return None
    cache = cache_dir / PYTHON_CACHE
    known = _read_json(cache)
    if image_id in known:
        return tuple(known[image_id])  # type: ignore[return-value]
    try:
        out = client.containers.run(
            image,
            ["python", "-c", "import sys; print(*sys.version_info[:3])"],
            network_mode="none",
            remove=True,
            stdout=True,
            stderr=False,
        )
        version = tuple(int(n) for n in out.decode().split())
    except (docker.errors.DockerException, ValueError):
        return None
    if len(version) != 3:
        return None
    _remember(cache, known, image_id, list(version))
    return version  # type: ignore[return-value]


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _remember(path: Path, known: dict[str, Any], key: str, value: list[int]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**known, key: value}), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache: the next run asks the image again
