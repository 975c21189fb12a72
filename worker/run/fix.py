"""The wiring of one `worker fix` run, as named steps: prepare the sandbox, start the model, run
the baseline, run the loop, record what happened, deliver the patch.

The command line (worker/cli/fix.py) builds the request, maps the ending to an exit code and
writes the report; this module knows no flags and no exit codes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import docker

from policies.budgets import answer_cap
from policies.config import WorkerConfig
from policies.limits import edited_test_timeout
from policies.secrets import NO_SECRETS, Secrets
from sandbox.ecosystems import detect_test_command, ecosystem_for
from sandbox.ecosystems.base import Ecosystem
from sandbox.on_thread import OnThread
from sandbox.prepare import Prepared, prepare, run_pending_setup
from sandbox.session import Backend, SandboxSession, open_session
from sandbox.setup.cache import SetupFailed
from sandbox.setup.choice import before_setup, choose_setup
from sandbox.testrun.cache import TestRunCache
from sandbox.testrun.missing_programs import missing_programs
from sandbox.testrun.run import TestRun
from sandbox.testrun.verdict import judge
from worker.errors import ProjectEnvironment, UsageError
from worker.llm import pricing
from worker.llm.process import ModelProcess
from worker.loop.trace import Trace
from worker.record.folder import SETUP_LOG, RunFolder
from worker.record.report import NOT_RERUN, RunReport, tests_dict
from worker.run.clock import RunClock
from worker.run.deliver import apply_to_worktree, commit_on_branch
from worker.run.masked import MaskedModel
from worker.run.preload import preloaded
from worker.search.profile import Profile, profile_for

if TYPE_CHECKING:
    from tools.base import ToolContext
    from tools.registry import ToolRegistry
    from worker.loop.agent import Agent
    from worker.loop.turns import LoopResult, StepInfo
    from worker.run.environment import SandboxEnvironment
    from worker.search.sampling import FirstEdits
    from worker.search.suspects import Suspect

NOTHING_TO_FIX = "the tests already pass: nothing to fix"
# What only the loop needs: imported on a thread while the sandbox starts (worker/run/preload.py).
LOOP_MODULES = (
    "worker.loop.agent",
    "worker.search.sampling",
    "worker.search.locate",
    "tools.registry",
    "worker.run.environment",
)


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """Where the model is: a URL and a name, or the bundled local model."""

    model: str
    base_url: str | None
    local: bool


@dataclass(frozen=True, kw_only=True)
class FixRequest:
    """Everything one run needs, settled by the command line."""

    repo: Path
    goal: str
    out: Path
    config: WorkerConfig
    endpoint: Endpoint
    price: pricing.Price | None
    backend: Backend
    test_timeout_s: float
    apply: bool = False
    branch: str | None = None
    #: The set-up-only variables' values and the API key: masked in all the run writes or sends.
    secrets: Secrets = NO_SECRETS


class Progress(Protocol):
    """Where the run tells the user what it is doing."""

    def say(self, text: str) -> None: ...
    def step(self, info: StepInfo) -> None: ...


@dataclass(kw_only=True)
class FixRun:
    """One repair. `run()` returns the reason of a good ending (fixed, or nothing to fix) and
    raises on every other; `report` is filled as the run goes, on every path."""

    request: FixRequest
    report: RunReport
    trace: Trace
    progress: Progress
    # The model client's process, when the command line started it before its own imports;
    # else `run` starts one. Either way the run closes it.
    client: ModelProcess | None = None
    clock: RunClock = field(default_factory=lambda: RunClock(limit_s=None))
    # Which set-up ran, for a baseline that cannot import what it needs (prepare_sandbox).
    setup_said: str = "no set-up ran: pass --setup 'pip install ...'"
    # The ecosystem the repository (or its test command) is: sandbox/ecosystems/.
    ecosystem: Ecosystem | None = None

    @property
    def profile(self) -> Profile:
        """The settings for this endpoint's kind of model, the user's own laid over them."""
        return profile_for(bundled=self.request.endpoint.local, config=self.request.config)

    def run(self) -> str:
        self.clock = RunClock(limit_s=self.request.config.budgets.max_wall_s)
        # The model client's process starts first: the openai SDK (most of our start-up time)
        # loads on another core while the sandbox starts and the baseline runs.
        with contextlib.ExitStack() as stack:
            client = stack.enter_context(self.client or ModelProcess())
            stack.enter_context(preloaded(LOOP_MODULES))
            if not self.request.endpoint.local:
                client.connect(**self._client_options(self.request.endpoint.base_url))
            prepared = self.prepare_sandbox()
            session = stack.enter_context(self.open_session(prepared))
            tests = TestRunCache(box=session.box, workspace=session.workspace)
            baseline = self.run_baseline(prepared, session, tests)
            if baseline.passed:
                return NOTHING_TO_FIX
            self.clock.cap(None, what="the model was started")  # a baseline that took it all
            model = self.open_model(stack, client)
            result = self.run_loop(prepared, session, model, baseline, tests)
            self.deliver(result.patch)
            return result.reason

    def prepare_sandbox(self) -> Prepared:
        """The daemon, the image (for the Python the project asks for) and the set-up image
        (given, or inferred from the repository's files), before the model or the copy. Set-up
        has a limit of its own and the image's first build is a one-off: their time is left out
        of the run's clock."""
        req, config = self.request, self.request.config
        started = time.monotonic()
        self.ecosystem = ecosystem = ecosystem_for(req.repo, config.test_cmd)
        choice = choose_setup(req.repo, config, ecosystem)
        self.setup_said = choice.said()
        self.report.setup = setup = choice.to_dict()
        setup["ecosystem"] = ecosystem.name if ecosystem else None
        setup["python_choice"] = setup["toolchain"] = None
        toolchain = (
            ecosystem.toolchain(req.repo, image=config.image, backend=req.backend)
            if ecosystem
            else None
        )
        if toolchain is not None:
            setup["toolchain"] = toolchain.to_dict()
            setup |= _filled(toolchain.report_fields())

        def check_image(client: docker.DockerClient | None, image: str) -> None:
            setup.update(before_setup(choice, client, image, say=self.progress.say))

        try:
            prepared = prepare(
                backend=req.backend,
                isolation=config.isolation,
                placement=config.placement,
                repo=req.repo,
                image=config.image,
                setup=choice.spec,
                limits=config.limits,
                progress=self.progress.say,
                toolchain=toolchain,
                before_setup=check_image,
                secrets=req.secrets,
            )
        except SetupFailed as exc:
            setup["error"] = str(exc)
            setup["log"] = self._keep_setup_log(exc.log)
            for line in exc.tail.splitlines()[-15:]:
                self.progress.say(f"  | {line}")
            if setup["log"]:
                self.progress.say(f"set-up log: {req.out / SETUP_LOG}")
            raise
        if toolchain is not None:  # what was built (or found) for it
            setup["toolchain"] = toolchain.to_dict(built_s=prepared.image_built_s)
            setup |= _filled(toolchain.report_fields(built_s=prepared.image_built_s))
        if prepared.image_built_s is not None:
            self.clock.leave_out(prepared.image_built_s)
        if prepared.setup is not None:
            done = prepared.setup
            setup |= {"image": done.image, "cached": done.cached, "duration_s": done.duration_s}
            setup["allowed_hosts"] = list(done.allowed_hosts)
            setup["version"] = done.version
            setup["log"] = self._keep_setup_log(done.log)
            if not done.cached:
                self.clock.leave_out(done.duration_s)
        weakened = config.isolation.weakened() if req.backend == "docker" else []
        self.report.sandbox = req.backend + (
            f" (weakened: {', '.join(weakened)})" if weakened else ""
        )
        self.report.durations["setup"] = round(time.monotonic() - started, 3)
        return prepared

    def _keep_setup_log(self, log: Path | None) -> str | None:
        """The set-up's whole output copied into the run's folder; its name there, or None."""
        if log is None:
            return None
        try:
            self.request.out.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(log, self.request.out / SETUP_LOG)
        except OSError:
            return None
        return SETUP_LOG

    def open_model(self, stack: contextlib.ExitStack, client: ModelProcess) -> ModelProcess:
        """The model client; for the bundled model, its server too (stopped with the stack),
        and how long that took (the weights checked, llama-server up) as `model_start`."""
        if self.request.endpoint.local:
            started = time.monotonic()
            client.connect(**self._client_options(stack.enter_context(self._local_server())))
            self.report.durations["model_start"] = round(time.monotonic() - started, 3)
        return client

    def _client_options(self, base_url: str | None) -> dict[str, Any]:
        """The keyword arguments of the `OpenAIModel` the client's process builds."""
        config, profile = self.request.config, self.profile
        return {
            "model": self.request.endpoint.model,
            "base_url": base_url,
            "temperature": config.temperature,
            "timeout_s": profile.call_timeout_s,
            "max_completion_tokens": answer_cap(config.budgets, bundled=profile.bundled),
            "tool_mode": profile.tool_mode if config.tool_mode == "auto" else config.tool_mode,
        }

    @contextlib.contextmanager
    def _local_server(self) -> Iterator[str]:
        from worker.llm import bundled

        shared = os.environ.get(bundled.SERVED_AT_ENV)
        if shared:  # a cluster node's one server, shared by its tasks (docs/scale.md)
            self.progress.say(f"using the bundled local model already served at {shared}")
            yield shared
            return
        self.progress.say(
            "using the bundled local model (Qwen2.5-Coder-1.5B, llama.cpp on this machine); "
            "for a hosted model pass --base-url URL --model NAME"
        )
        path = bundled.pull(progress=self.progress.say)
        log = self.request.out / "llama-server.log"
        with bundled.LocalServer(model_path=path, log_path=log) as server:
            yield server.base_url

    def open_session(self, prepared: Prepared) -> contextlib.AbstractContextManager[SandboxSession]:
        """The working copy and its sandbox (removed, both, when the run ends)."""
        req, config = self.request, self.request.config
        return open_session(
            req.repo,
            spec=prepared.spec(limits=config.limits, protect=config.paths.protection),
            run_dir=req.out / "run",
            output_bytes=config.truncation.max_bytes,
            exclude=req.out,  # --out may lie inside the repository: never copy our outputs
        )

    def run_baseline(
        self, prepared: Prepared, session: SandboxSession, tests: TestRunCache
    ) -> TestRun:
        """Set-up if pending, then the tests before any change: what is there to fix?"""
        config = self.request.config
        run_pending_setup(prepared, session, timeout_s=config.limits.command_timeout_s)
        test_cmd = config.test_cmd or detect_test_command(
            session.workspace.path, shown=self.request.repo
        )
        started = time.monotonic()
        timeout_s = self.clock.cap(self.request.test_timeout_s, what="the tests before any change")
        baseline = tests.run(test_cmd=test_cmd, timeout_s=timeout_s)
        self.report.test_cmd = baseline.command  # what really ran, flags and all
        if self.request.backend == "docker":
            cap = self.request.config.limits.workspace_mb
            copied = session.box.placement == "copied"
            exact = session.workspace.capped and not copied
            how = "exact: a filesystem of its own" if exact else "counted: what its files take"
            where = "copied into the container" if copied else "mounted from this machine"
            self.report.sandbox = (
                f"{self.report.sandbox}; working copy {where}; workspace write cap {cap} MB ({how})"
            )
        self.report.durations["tests_before"] = round(time.monotonic() - started, 3)
        self.report.tests_before = tests_dict(baseline)
        self.trace.event("tests_before", command=baseline.command, headline=baseline.headline())
        self.progress.say(f"tests before: {baseline.headline()}")
        _check_baseline(baseline)
        if not baseline.passed:
            check_environment(baseline, session.workspace.path, self.setup_said, self.ecosystem)
        return baseline

    def run_loop(
        self,
        prepared: Prepared,
        session: SandboxSession,
        model: ModelProcess,
        baseline: TestRun,
        tests: TestRunCache,
    ) -> LoopResult:
        """The agent over the real tools; whatever its ending, the report records it."""
        from tools.registry import ToolRegistry, default_tools
        from worker.loop.agent import Agent
        from worker.run.environment import SandboxEnvironment

        req, config, profile = self.request, self.request.config, self.profile
        context = self._tool_context(session, baseline, tests)
        registry = ToolRegistry(tools=default_tools(config.edit_tools))
        env = SandboxEnvironment(
            session=session, registry=registry, context=context, prepared=prepared,
            limits=config.limits, run_dir=req.out / "run",
            edited_timeout_s=edited_test_timeout(baseline.result.duration_s, req.test_timeout_s),
        )  # fmt: skip
        listing = registry.call("list_dir", {}, context).text
        opening, sources = self._opening(session, baseline, registry, context)
        price = req.price
        agent = Agent(
            model=MaskedModel(model=model, secrets=req.secrets),
            env=env,
            budgets=config.budgets,
            trace=self.trace,
            cost_of=(lambda u: pricing.cost(price, u)) if price else (lambda u: None),
            on_step=self.progress.step,
            max_context_chars=profile.context_chars,
            undo_worse_edits=profile.undo_worse_edits,
            verify_ahead=profile.verify_ahead,
            shown_failures=profile.shown_failures,
            opening=opening,
            started_at=self.clock.started,
        )
        closing: OnThread | None = None
        with env:  # the clean re-check's sandbox starts now, while the model works
            try:
                result = agent.run(req.goal, baseline, listing, sources)
                # Nothing runs in the working sandbox any more: its container goes now, on a
                # thread beside the record and the clean check's removal, not after them
                # (0.06-0.14 s a run off the path to the exit; the session's end finds it gone).
                closing = OnThread(lambda: session.box.__exit__(None, None, None), name="close")
                closing.begin()
            finally:
                try:
                    self.record(agent, env, model, baseline)
                finally:
                    if closing is not None:
                        closing.wait()
            return result

    def _tool_context(
        self, session: SandboxSession, baseline: TestRun, tests: TestRunCache
    ) -> ToolContext:
        from tools.base import ToolContext

        config = self.request.config
        return ToolContext(
            workspace=session.workspace.path,
            box=session.box,
            paths=config.paths,
            truncation=config.truncation,
            test_cmd=baseline.test_cmd,
            test_timeout_s=self.request.test_timeout_s,
            tests=tests,
            known_tests=_known_tests(baseline),
        )

    def _opening(
        self,
        session: SandboxSession,
        baseline: TestRun,
        registry: ToolRegistry,
        context: ToolContext,
    ) -> tuple[FirstEdits, str]:
        """The search's opening (worker/search/sampling.py) as the profile sets it, and the
        source code the first message shows (grounded by the language's own parser: Python's
        `ast`, tree-sitter for JS, TS and Go)."""
        from sandbox.source.grounding import Grounding
        from worker.search.moves import small_functions, with_endings
        from worker.search.sampling import FirstEdits
        from worker.search.split import RETRIED

        profile, paths = self.profile, self.request.config.paths
        suspects = self.locate(session, baseline) if profile.locate else []
        ecosystem = self.ecosystem
        grounding = (
            ecosystem.grounding(baseline, workspace=context.workspace, paths=paths)
            if ecosystem is not None
            else Grounding()
        )
        if not suspects and profile.locate and grounding.functions:
            suspects = self.reached(grounding.functions, context.workspace)
        if suspects and ecosystem is not None:  # which top lines are part of a `return`
            suspects = with_endings(
                suspects, workspace=context.workspace, top=RETRIED,
                ending_of=ecosystem.ending_statement,
            )  # fmt: skip
        edits = tuple(name for name in ("replace", "apply_patch") if name in registry.names)
        # The code the failing tests reach is in the first message, or suspect lines are known
        # (each pointed sample shows its line's neighbours): with first_edit, the first reply
        # must be an edit (where the endpoint's mode can enforce that).
        shown = grounding.shows_code or bool(suspects)
        opening = FirstEdits(
            first_tools=edits if shown and profile.first_edit else None,
            edit_samples=profile.edit_samples,
            suspects=suspects,
            converse=profile.converse,
            moves=profile.moves,
            # The client reads them from a json_schema-mode answer only, and sends none otherwise.
            second_choices=profile.second_choices,
            functions=small_functions(
                grounding.functions,
                workspace=context.workspace,
                allowed=lambda rel: paths.check(rel, write=True).allowed,
            ),
        )
        sources = grounding.text
        if not sources and ecosystem is not None:  # the start of the files the failures name
            sources = "\n\n".join(
                registry.call("read_file", {"path": rel, "end_line": 120}, context).text
                for rel in ecosystem.implicated_files(
                    baseline, workspace=context.workspace, paths=paths, limit=2
                )
            )
        return opening, sources

    def locate(self, session: SandboxSession, baseline: TestRun) -> list[Suspect]:
        """The search's suspect lines (worker/search/locate.py: the lines the failing tests
        point at, as their language reads them), within the run's clock."""
        from worker.search.locate import locate, locate_timeout

        if self.ecosystem is None or baseline.failing() in (0, float("inf")):
            return []
        started = time.monotonic()
        timeout = self.clock.cap(
            locate_timeout(self.request.test_timeout_s), what="the line ranking"
        )
        suspects = locate(
            self.ecosystem, session.box, baseline, workspace=session.workspace.path,
            paths=self.request.config.paths, timeout_s=timeout, trace=self.trace,
        )  # fmt: skip
        self.report.durations["locate"] = round(time.monotonic() - started, 3)
        if suspects:
            self.progress.say(f"suspect lines: {suspects[0].where()} first of {len(suspects)}")
        return suspects

    def reached(
        self, functions: tuple[tuple[str, int, int], ...], workspace: Path
    ) -> list[Suspect]:
        """Where no failure named a line: the lines of the functions the failing tests call
        (worker/search/reached.py), said as the located ones are."""
        from worker.search.reached import reached_suspects

        paths = self.request.config.paths
        suspects = reached_suspects(
            functions, workspace=workspace, allowed=lambda rel: paths.check(rel, write=True).allowed
        )
        self.trace.event(
            "suspects",
            source="the functions the failing tests call",
            lines=[{"where": s.where(), "text": s.text} for s in suspects],
        )
        if suspects:
            self.progress.say(
                f"suspect lines: {suspects[0].where()} first of {len(suspects)}, in the functions "
                "the failing tests call"
            )
        return suspects

    def record(
        self, agent: Agent, env: SandboxEnvironment, model: ModelProcess, baseline: TestRun
    ) -> None:
        """What the loop did, once, from the agent and the sandbox: usage, tests, the patch."""
        report, usage = self.report, agent.usage
        report.steps, report.tokens_in, report.tokens_out = (
            usage.steps, usage.tokens_in, usage.tokens_out,
        )  # fmt: skip
        report.cost_usd = usage.cost_usd if self.request.price is not None else None
        report.durations["model"] = round(agent.model_seconds, 3)
        report.tool_mode = model.mode
        rerun = agent.last_tests is not None and agent.last_tests is not baseline
        report.tests_after = tests_dict(agent.last_tests) if rerun else NOT_RERUN
        verification = agent.verification
        report.verification = tests_dict(verification.run if verification else None)
        patch = env.diff()
        in_patch, report.files_left_out = env.changes()
        if patch.strip():
            patch_path = RunFolder(self.request.out).patch_path
            patch_path.write_text(patch, encoding="utf-8")
            report.patch = str(patch_path)
            report.files_changed = in_patch
        if verification is not None:  # judged once, when it was made
            report.verdict = {**verification.verdict.to_dict(), "of": "verification"}
        elif rerun and agent.last_tests is not None:  # never verified: the working copy's run
            # A run of the failing tests alone, by id (worker/loop/failing_first.py), is judged
            # on its own: against the baseline, every other test would be "missing".
            against = None if agent.last_tests.test_ids else baseline
            verdict = judge(agent.last_tests, baseline=against, patch=patch)
            report.verdict = {**verdict.to_dict(), "of": "tests_after"}

    def deliver(self, patch: str) -> None:
        """--apply or --branch: only ever a verified patch reaches the user's repository."""
        req = self.request
        if req.apply:
            self.report.delivered = apply_to_worktree(req.repo, patch)
        elif req.branch:
            message = f"worker: {req.goal}"[:72]
            self.report.delivered = commit_on_branch(req.repo, req.branch, patch, message)


def _check_baseline(baseline: TestRun) -> None:
    """A test command that runs no test, or does not exist, is the user's to fix (exit 2)."""
    result = baseline.result
    if result.exit_code == 127 and not result.timed_out:
        raise UsageError(
            f"the test command was not found in the sandbox: {baseline.test_cmd}; "
            "pass --test-cmd (and --setup for its dependencies)"
        )
    if baseline.summary is not None and baseline.summary.total == 0 and result.exit_code == 5:
        raise UsageError("the test command collected no tests: pass --test-cmd")


def check_environment(
    baseline: TestRun, tree: Path, setup_said: str, ecosystem: Ecosystem | None
) -> None:
    """Tests that cannot import or run what they need are no bug of the code: stop before any
    model call, naming the package or program, and the set-up that ran where set-up mends it
    (a package: the ecosystem's reading of the failures; a program: any ecosystem's)."""
    if ecosystem is not None:
        if problem := ecosystem.environment_problem(baseline, tree, setup_said=setup_said):
            raise ProjectEnvironment(f"{problem}; no model call made")
    if programs := missing_programs(baseline, tree):
        more = ", ".join(p.program for p in programs[1:4])
        said = f"; {setup_said}" if programs[0].declared_in else ""
        raise ProjectEnvironment(
            f"{programs[0].describe()}{_and_more(len(programs), more)}{said}; no model call made"
        )


def _and_more(count: int, named: str) -> str:
    return f" (and {count - 1} more: {named})" if count > 1 else ""


def _known_tests(baseline: TestRun) -> tuple[str, ...]:
    """The baseline's test ids, the failing ones first (run_tests shows them as examples)."""
    if baseline.summary is None:
        return ()
    failing = baseline.summary.failing_ids()
    return tuple(dict.fromkeys([*failing, *baseline.summary.outcomes]))


def _filled(fields: dict[str, Any]) -> dict[str, Any]:
    """The fields a toolchain fills: those it has a value for."""
    return {k: v for k, v in fields.items() if v is not None}
