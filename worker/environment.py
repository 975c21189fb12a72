"""The loop's environment: the tools, the tests and the verification over one sandbox session."""

from __future__ import annotations

from itertools import count
from pathlib import Path

import docker

from policies.isolation import HARDENED, Isolation
from policies.limits import Limits
from sandbox.session import Backend, SandboxSession
from sandbox.testrun import TestRun, run_tests
from tools.base import Observation, ToolContext
from tools.registry import ToolRegistry
from worker.errors import SandboxError
from worker.model_types import ToolCall, ToolSpec
from worker.verify import verify_patch


class SandboxEnvironment:
    """Implements the loop's `Environment` with a real sandbox and the real tools."""

    def __init__(
        self,
        *,
        session: SandboxSession,
        registry: ToolRegistry,
        context: ToolContext,
        client: docker.DockerClient | None,
        image: str,
        limits: Limits,
        run_dir: Path,
        backend: Backend = "docker",
        isolation: Isolation = HARDENED,
    ) -> None:
        self._backend = backend
        self._isolation = isolation
        self._session = session
        self._registry = registry
        self._context = context
        self._client = client
        self._image = image
        self._limits = limits
        self._run_dir = run_dir
        self._verifications = count(1)

    def tool_specs(self) -> list[ToolSpec]:
        return self._registry.specs()

    def call_tool(self, call: ToolCall) -> Observation:
        obs = self._registry.call(call.name, call.arguments, self._context, raw_error=call.error)
        if obs.data.get("exception") == "SandboxError":
            # The sandbox itself failed (time spent, container gone): not the model's to fix.
            raise SandboxError(obs.text)
        return obs

    def run_tests(self) -> TestRun:
        return run_tests(
            self._session.box,
            test_cmd=self._context.test_cmd,
            timeout_s=self._context.test_timeout_s,
        )

    def diff(self) -> str:
        return self._session.workspace.diff()

    def verify(self, patch: str) -> TestRun:
        return verify_patch(
            client=self._client,
            image=self._image,
            workspace=self._session.workspace,
            patch=patch,
            test_cmd=self._context.test_cmd,
            limits=self._limits,
            work_dir=self._run_dir / f"verify-{next(self._verifications)}",
            timeout_s=self._context.test_timeout_s,
            backend=self._backend,
            isolation=self._isolation,
        )
