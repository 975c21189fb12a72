"""Which set-up a run gets: the one given (`--setup`, the configuration), else the one the
repository's language infers from its files (sandbox/ecosystems/*/setup_infer.py), else none;
and whether the project can run in the image (`Ecosystem.check_image`: Python's
`requires-python`), said before anything runs.

`worker fix`, `worker ci`, `worker eval`'s re-check and `worker sandbox run-tests` all choose
here, so a repository is set up the same way whichever command runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import docker
import docker.errors

from policies.config import WorkerConfig
from sandbox.ecosystems.base import Ecosystem
from sandbox.setup.cache import SetupSpec
from sandbox.setup.installer import PLAIN, Installer
from sandbox.setup.plan import SetupPlan
from sandbox.worktree.ci_jobs import ci_jobs
from sandbox.worktree.ci_test_env import CiTestEnv, ci_test_env
from sandbox.worktree.repo_files import RepoFiles

Source = Literal["given", "inferred", "none", "off"]


@dataclass(frozen=True, kw_only=True)
class SetupChoice:
    """The set-up chosen for a run, and why; `spec` None: nothing runs before the tests."""

    source: Source
    spec: SetupSpec | None
    plan: SetupPlan | None = None
    #: The repository's language, which checks the image before set-up runs.
    ecosystem: Ecosystem | None = None
    #: The services the CI's jobs start (`postgres (.github/workflows/ci.yml:14)`): none is
    #: provided in the sandbox, and the user is told so before anything runs.
    services: tuple[str, ...] = ()
    #: The variables CI sets for its test step that the test runs take, and those left out
    #: (none read when the test command is given: it runs as given).
    ci_env: CiTestEnv = CiTestEnv()

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
            "ci_services": list(self.services),
            "ci_env": [v.describe() for v in self.ci_env.taken],
            "ci_env_left_out": list(self.ci_env.left_out),
            "tool": spec.tool.describe() if spec and spec.tool else None,
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

    def spec(command: str, *, inferred: bool) -> SetupSpec:
        return SetupSpec(
            command=command,
            network=config.setup_network,
            env_names=config.setup_env,
            timeout_s=config.setup_timeout_s,
            installer=_installer(repo, plan, ecosystem),
            tool=plan.tool if plan is not None and inferred else None,  # a given one names none
        )

    services = ci_services(repo)
    env = CiTestEnv()
    if ecosystem is not None and not config.test_cmd:
        env = ci_test_env(RepoFiles(repo), ecosystem.runs)

    def choice(source: Source, command: str | None, plan: SetupPlan | None) -> SetupChoice:
        made = None if command is None else spec(command, inferred=source == "inferred")
        return SetupChoice(
            source=source,
            spec=made,
            plan=plan,
            ecosystem=ecosystem,
            services=services,
            ci_env=env,
        )

    if config.setup:
        return choice("given", config.setup, plan)
    if plan is None:
        return choice("off", None, None)
    if plan.command is None:
        return choice("none", None, plan)
    return choice("inferred", plan.command, plan)


def ci_services(repo: Path) -> tuple[str, ...]:
    """The services the repository's CI jobs start, each with its file and line."""
    found = []
    for job in ci_jobs(RepoFiles(repo)):
        found += [f"{name} ({job.where(line)})" for name, line in job.services]
    return tuple(dict.fromkeys(found))[:10]


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
) -> dict[str, Any]:
    """Once the image is there and before set-up runs: say the inferred set-up and what it did
    not follow, and let the language check the image (it stops the run, in one line, when the
    project cannot run there); the report's `setup` fields it learned."""
    if said := choice.describe():
        say(said)
    for note in choice.plan.notes if choice.plan and choice.spec else ():
        say(f"set-up: not followed: {note}")
    if choice.services:
        say(
            f"CI starts services the sandbox does not provide: {', '.join(choice.services)}; "
            "tests that need them fail here"
        )
    if said := choice.ci_env.describe():
        say(said)
    if choice.ecosystem is None:
        return {}
    return choice.ecosystem.check_image(client, image, plan=choice.plan)
