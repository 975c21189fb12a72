"""The agent loop: ask the model, run its tool calls, let the harness decide when it is done.

What any model gets lives here; what a small model needs besides (sampled first edits, suspect
lines, second choices) is a search that opens the run through worker/loop/opening.py.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from policies.budgets import Budgets, BudgetUsage, check
from sandbox.testrun.run import TestRun
from tools.base import Observation
from worker.llm.types import (
    PLAIN,
    CallOutOfTime,
    CallSettings,
    ContextTooLong,
    ModelReply,
    ToolCall,
    ToolSpec,
    Usage,
)
from worker.loop import prompts
from worker.loop.endings import BudgetExhausted, GaveUp, Stuck
from worker.loop.failing_first import FailingFirst, accounted
from worker.loop.history import compact, shrink
from worker.loop.interfaces import Environment, Model
from worker.loop.opening import Conversation, Opening, Plain
from worker.loop.stuck import StuckDetector
from worker.loop.trace import Trace, replay_fields
from worker.loop.turns import LoopResult, StepInfo, Turn, compared, failing, outcome
from worker.loop.verify import Verification, says_fixed, verify

# After a repeat or a cut-off answer, one warmer call: at temperature 0 a model that repeated
# itself (or ran away) does it again.
REPEAT_TEMPERATURE = 0.7
CUT_OFF_SHOWN = 200  # characters of a cut-off answer kept in the history


@dataclass(kw_only=True)
class Agent:
    """Runs one repair: `Agent(...).run(goal, baseline, listing)`; usage stays readable after.
    Its public methods besides `run` are the moves an opening may make (worker/loop/opening)."""

    model: Model
    env: Environment
    budgets: Budgets
    trace: Trace
    cost_of: Callable[[Usage], float | None] = lambda _u: None
    on_step: Callable[[StepInfo], None] = lambda _s: None
    max_context_chars: int = 60_000
    # An edit after which more tests fail than before it is undone, and the model told.
    undo_worse_edits: bool = False
    # Each edit's clean re-run starts beside the working copy's: a fix waits one run, not two.
    verify_ahead: bool = False
    shown_failures: int = 10  # failing tests shown in the first message
    opening: Opening = field(default_factory=Plain)  # what the run does before its conversation
    usage: BudgetUsage = field(default_factory=BudgetUsage)
    model_seconds: float = 0.0
    # The run's start (monotonic): the baseline and line ranking count against max_wall_s too.
    started_at: float = field(default_factory=time.monotonic)
    baseline: TestRun | None = None
    last_tests: TestRun | None = None
    verification: Verification | None = None  # the last one made (the fix's, when fixed)
    _claims: int = 0
    _stuck: StuckDetector = field(default_factory=StuckDetector)
    _specs: list[ToolSpec] = field(default_factory=list)
    _suite_run: TestRun | None = None  # the model's own run_tests of the whole suite, this step
    _first: FailingFirst = field(default_factory=FailingFirst)  # the tests run first after an edit
    _undone: set[str] = field(default_factory=set)  # edits undone: sent again, they are refused
    _group: dict[str, int] = field(default_factory=dict)  # an opening's sample, for the trace
    _held: list[StepInfo] | None = None  # progress lines an opening says one line for

    def run(self, goal: str, baseline: TestRun, listing: str, sources: str = "") -> LoopResult:
        """Loop until the harness verifies a fix, or a budget, repeat or give-up ends it."""
        messages = self._start(goal, baseline, listing, sources)
        turn = self.opening.play(self, messages)
        while turn.done is None:
            self.check_budgets()
            reply = self.ask(messages, turn.then)
            if reply.tool_calls:
                turn = self.run_calls(messages, reply)
            else:
                messages.append(reply.assistant_message())
                turn = self._on_claim(messages, reply)
        return turn.done

    def _start(self, goal: str, baseline: TestRun, listing: str, sources: str) -> Conversation:
        """The tools, the clocks and the first two messages (the prefix every request keeps)."""
        if self.budgets.max_wall_s is not None:  # test runs too end within the time budget
            self.env.end_by(self.started_at + self.budgets.max_wall_s)
        self._specs = self.opening.describe(self.env.tool_specs())
        self.baseline = self.last_tests = baseline
        self._first = FailingFirst(baseline=baseline)
        names = [spec.name for spec in self._specs]
        task = prompts.task_message(
            goal=goal, tests=baseline.render(max_failures=self.shown_failures), listing=listing,
            sources=sources, suspects=self.opening.hint(baseline),
        )  # fmt: skip
        messages: Conversation = [
            {"role": "system", "content": prompts.system_prompt(names)},
            {"role": "user", "content": task},
        ]
        self.trace.event(
            "prompt", system=messages[0]["content"], task=messages[1]["content"], tools=names
        )
        return messages

    # -- the moves an opening may make (worker/loop/opening.Moves) -------------------------------

    @property
    def steps(self) -> int:
        return self.usage.steps

    def check_budgets(self) -> None:
        self.usage = replace(self.usage, elapsed_s=time.monotonic() - self.started_at)
        reason = check(self.budgets, self.usage)
        if reason:
            raise BudgetExhausted(reason)

    def ask(self, messages: Conversation, settings: CallSettings = PLAIN) -> ModelReply:
        """One model answer the loop can use; an answer cut off by length is not one.

        A cut-off answer (a runaway string, a half-written tool call) is not run: the model is
        told, and asked again, warmer, with the same allowed tools and pins, within the same
        budgets.
        """
        reply = self._ask_once(messages, settings)
        while reply.finish_reason == "length" and not reply.calls_complete:
            self.trace.event("cut_off", step=self.usage.steps, tokens=reply.usage.completion_tokens)
            calls = reply.tool_calls
            head = (reply.content or (calls[0].raw_arguments if calls else ""))[:CUT_OFF_SHOWN]
            messages.append({"role": "assistant", "content": f"{head}... [cut off]"})
            tokens = reply.usage.completion_tokens or "the maximum number of"
            messages.append({"role": "user", "content": prompts.CUT_OFF.format(tokens=tokens)})
            self.check_budgets()
            reply = self._ask_once(messages, replace(settings, temperature=REPEAT_TEMPERATURE))
        return reply

    def run_calls(self, messages: Conversation, reply: ModelReply, *, idle: bool = True) -> Turn:
        """A reply's tool calls run, its turn in the history, then: fixed and verified yet?
        `idle`: a step without progress counts towards stuck detection's idle steps."""
        messages.append(reply.assistant_message())
        then = PLAIN
        for call in reply.tool_calls:
            observation, nudged = self._act(call)
            then = nudged or then
            messages.append({"role": "tool", "tool_call_id": call.id, "content": observation.text})
        return Turn(done=self._check_done(messages, idle=idle), then=then)

    def undo_edits(self, calls: Sequence[ToolCall]) -> bool:
        """The tree back to the original; `calls`, sent again, are refused (same result)."""
        undone = self.env.undo_all_edits()
        if undone:
            self._undone.update(c.key() for c in calls)
        self.last_tests = self.baseline
        return undone

    def redo_edits(self, calls: Sequence[ToolCall]) -> None:
        """Edits undone before, made again on the same tree (the same result), then the tests."""
        for call in calls:
            self._undone.discard(call.key())
            self.env.call_tool(call)
        self.last_tests = self.env.run_tests()

    @contextlib.contextmanager
    def grouped(self, **ids: int) -> Iterator[None]:
        """Trace events of the block carry `ids` (a sample, its second choice: worker show)."""
        self._group = dict(ids)
        try:
            yield
        finally:
            self._group = {}

    @contextlib.contextmanager
    def held(self, lines: list[StepInfo]) -> Iterator[None]:
        """Progress lines of the block go to `lines`, for the caller to say one line of them."""
        self._held = lines
        try:
            yield
        finally:
            self._held = None

    def tell(self, info: StepInfo) -> None:
        if self._held is not None:
            self._held.append(info)
        else:
            self.on_step(info)

    # -- the parts of one step -----------------------------------------------------------------

    def _ask_once(self, messages: Conversation, settings: CallSettings) -> ModelReply:
        started = time.monotonic()
        sent = compact(messages, max_chars=self.max_context_chars)
        while True:
            try:
                timed = replace(
                    settings, timeout_s=self.budgets.time_left(time.monotonic() - self.started_at)
                )
                reply = self.model.complete(sent, self._specs, timed)
                break
            except CallOutOfTime as exc:
                self.model_seconds += time.monotonic() - started
                self.usage = replace(self.usage, elapsed_s=time.monotonic() - self.started_at)
                raise BudgetExhausted(
                    f"time budget exhausted during a model call: {self.usage.elapsed_s:.0f}s of "
                    f"{self.budgets.max_wall_s:.0f}s elapsed (max_wall_s); {exc}"
                ) from exc
            except ContextTooLong as exc:
                sent, self.max_context_chars = shrink(
                    messages, sent, self.max_context_chars, exc, self.trace
                )
        took = time.monotonic() - started
        self.model_seconds += took
        used = reply.usage
        self.usage = self.usage.add(used.prompt_tokens, used.completion_tokens, self.cost_of(used))
        asked = settings.to_dict()
        self.trace.event(
            "model_call", step=self.usage.steps, messages=len(sent),
            request_bytes=reply.request_bytes, prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens, duration_s=round(took, 3),
            mode=reply.mode, only=asked["only"], pins=asked["pins"],
            finish_reason=reply.finish_reason, attempts=reply.attempts, content=reply.content,
            tool_calls=[c.to_openai() for c in reply.tool_calls], **self._group,
            **replay_fields(reply),
        )  # fmt: skip
        return reply

    def _act(self, call: ToolCall) -> tuple[Observation, CallSettings | None]:
        """One tool call, the tests after an edit; with a repeat, the next call's settings."""
        started = time.monotonic()
        before = self.last_tests
        if call.key() in self._undone:  # the same result again, at the cost of a test run
            observation = Observation(ok=False, text=prompts.ALREADY_UNDONE, target=call.name)
        else:
            observation = self.env.call_tool(call)
        if observation.changed_files:
            observation = self._after_edit(observation, before, call)
        elif observation.tests is not None and not observation.tests.test_ids:
            self._suite_run = observation.tests
        verdict = self._stuck.observe(
            call.name, call.arguments or call.raw_arguments, observation.text
        )
        self.trace.event(
            "tool_call", step=self.usage.steps, id=call.id, name=call.name,
            arguments=call.arguments if call.arguments is not None else call.raw_arguments,
            ok=observation.ok, observation=observation.text,
            duration_s=round(time.monotonic() - started, 3),
            refusals=[{"rule": d.rule, "reason": d.reason} for d in observation.refusals],
            changed_files=list(observation.changed_files), data=observation.data, **self._group,
        )  # fmt: skip
        tests = self.last_tests if observation.changed_files else None
        self.tell(self._step_info(call.name, observation.target, outcome(observation, tests)))
        if verdict == "stop":
            raise Stuck(f"the model repeated the same {call.name} call with the same result")
        if verdict != "nudge":
            return observation, None
        # A model repeats a call even when told not to: the next reply may not call that tool
        # (where the endpoint's mode can enforce it), and is asked warmer.
        others = tuple(spec.name for spec in self._specs if spec.name != call.name) or None
        text = observation.text + "\n\n" + prompts.NUDGE.format(n=self._stuck.nudge_at)
        return replace(observation, text=text), CallSettings(REPEAT_TEMPERATURE, others)

    def _after_edit(self, observation: Observation, before: TestRun | None, call: ToolCall):
        """After each applied patch the harness runs the tests (one step saved, facts given);
        with undo_worse_edits, an edit after which more of the tests that ran fail than before
        it is undone and the model told."""
        after, first = self._tests_after_edit()
        self.last_tests = after
        heading = prompts.tests_after(first=first, whole=not after.test_ids)
        text = observation.text + "\n\n" + heading + after.render()
        now, then = compared(after, before)
        if self.undo_worse_edits and now > then and self.env.undo_last_edit():
            text += "\n\n" + prompts.undone(after=now, before=then)
            self._undone.add(call.key())
            self.trace.event("undone", step=self.usage.steps, files=observation.changed_files)
            self.last_tests = before
        return replace(observation, text=text)

    def _tests_after_edit(self) -> tuple[TestRun, int]:
        """The tests that failed at the start, by id (seconds); the whole suite once one of them
        passes, or where running them first is no gain (worker/loop/failing_first.py). With
        the run, how many tests ran first."""
        ids = self._first.ids
        if ids:
            first = self.env.run_tests(ids)
            if self._first.stands(first):
                return first, len(ids)
            if not accounted(first):
                ids = ()  # what it says cannot be trusted: as if it had not run
        if self.verify_ahead:
            self.env.verify_ahead(self.env.diff())
        return self.env.run_tests(), len(ids)

    def _step_info(self, tool: str, target: str, outcome: str) -> StepInfo:
        return StepInfo(
            step=self.usage.steps, tool=tool, target=target, outcome=outcome,
            tokens=self.usage.tokens, elapsed_s=time.monotonic() - self.started_at,
        )  # fmt: skip

    def _check_done(self, messages: Conversation, *, idle: bool = True) -> LoopResult | None:
        tests = self.last_tests
        patch = self.env.diff()
        suite, self._suite_run = self._suite_run, None
        verified = self.verification.run if self.verification is not None else None
        fresh = tests is not verified  # a failed clean re-check's run is not verified again
        if patch.strip() and (
            says_fixed(suite, self.baseline) or (fresh and says_fixed(tests, self.baseline))
        ):
            done = self._verify(patch)
            if isinstance(done, LoopResult):
                return done
            messages.append({"role": "user", "content": done})
        if idle and self._stuck.step_done(failing=failing(tests), diff_size=len(patch)):
            raise Stuck(f"no progress in the last {self._stuck.idle_steps} steps")
        return None

    def _on_claim(self, messages: Conversation, reply: ModelReply) -> Turn:
        """The model answered without a tool call: it thinks it is done. The harness checks."""
        self.last_tests = tests = self.env.run_tests()
        headline = tests.headline()
        self.trace.event("claim", step=self.usage.steps, content=reply.content, tests=headline)
        self.tell(self._step_info("(done?)", "", headline))
        patch = self.env.diff()
        text = prompts.FALSE_CLAIM.format(tests=tests.render())
        if patch.strip() and says_fixed(tests, self.baseline):
            done = self._verify(patch)
            if isinstance(done, LoopResult):
                return Turn(done=done)
            text = done
        self._claims += 1
        if self._claims >= 2:
            raise GaveUp("the model said it was done twice while the tests still failed")
        messages.append({"role": "user", "content": text})
        return Turn()

    def _verify(self, patch: str) -> LoopResult | str:
        """Verify `patch` (worker/loop/verify.py): the fix, or what the model is told."""
        self.verification = verified = verify(
            self.env, self.trace, baseline=self.baseline, patch=patch
        )
        if verified.passed:
            return LoopResult(reason=verified.reason, verification=verified)
        self.last_tests = verified.run
        return verified.told()
