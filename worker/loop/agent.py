"""The agent loop: ask the model, run its tool calls, let the harness decide when it is done."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from policies.budgets import Budgets, BudgetUsage, check
from sandbox.testrun import TestRun
from sandbox.verdict import Verdict, judge
from tools.base import Observation
from tools.replace import loosened
from worker.llm.types import (
    CallOutOfTime,
    ContextTooLong,
    ModelReply,
    Pins,
    ToolCall,
    ToolSpec,
    Usage,
    plain_pins,
)
from worker.loop import prompts
from worker.loop.endings import BudgetExhausted, GaveUp, RunEnded, SamplesSpent, Stuck
from worker.loop.history import compact, history_chars
from worker.loop.second import worth_trying
from worker.loop.stuck import StuckDetector
from worker.loop.suspects import MAX_TEXT as MAX_SUSPECT_TEXT
from worker.loop.suspects import Suspect
from worker.loop.suspects import render as render_suspects
from worker.loop.trace import Trace

__all__ = [
    "Agent",
    "BudgetExhausted",
    "GaveUp",
    "LoopResult",
    "RunEnded",
    "SamplesSpent",
    "StepInfo",
    "Stuck",
]

REPEAT_TEMPERATURE = 0.7
# A top suspect's second pointed sample: the same prompt, hotter. Pointed at the bug's line of
# 15 dev tasks, 2 answers each (bench/lines.py): 28 of 30 differed from the greedy answer at
# 1.0, 21 at 0.7, and 13 when shown the greedy answer as tried (it copied it); a fix came in
# 4, 4 and 1 of the tasks (docs/evaluation.md, arm T).
RETRY_TEMPERATURE = 1.0
SAMPLE_ANSWERS = 2  # answers asked for, at most, per first edit sampled
# The top suspects a second pointed sample goes to (warmer) before lower ones get their first:
# on the 24 planted tasks of subset-2 and holdout-2 the bug's line ranked in the top 3 in 18,
# and 4th to 7th in 1 (bench/locate.py).
RETRIED = 3
# Then their warmer retries (RETRY_TEMPERATURE), in this order (indices of the ranked suspects):
# the likelier a line, the more answers. Pointed at the bug's own line of 15 dev tasks, any of
# 8 answers (4 variants x 2) wrote the fix in 9 where any one variant's 2 did in 4, and 1.0's
# answers differed from each other in 28 of 30 (bench/lines.py); the bug's line ranked first in
# 22 of 46 planted tasks, second in 11, third in 2 (bench/locate.py).
HOT_RETRIES = (0, 1, 0, 2, 0, 1)
CUT_OFF_SHOWN = 200  # characters of a cut-off answer kept in the history


class Model(Protocol):
    """Anything that answers a conversation with text or tool calls."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: Sequence[ToolSpec],
        *,
        temperature: float | None = None,
        timeout_s: float | None = None,
        only: Sequence[str] | None = None,
        pins: Pins | None = None,
        second_choices: bool = False,
    ) -> ModelReply: ...


class Environment(Protocol):
    """What the loop needs of the sandbox: tools, tests, the diff, and a clean re-check."""

    def tool_specs(self) -> list[ToolSpec]: ...
    def call_tool(self, call: ToolCall) -> Observation: ...
    def run_tests(self) -> TestRun: ...
    def diff(self) -> str: ...
    def verify(self, patch: str) -> TestRun: ...
    def verify_ahead(self, patch: str) -> None: ...
    def undo_last_edit(self) -> bool: ...
    def undo_all_edits(self) -> bool: ...
    def end_by(self, at: float) -> None: ...


@dataclass(frozen=True, kw_only=True)
class StepInfo:
    """One line of progress: what the model did in a step and how it went."""

    step: int
    tool: str
    target: str
    outcome: str
    tokens: int
    elapsed_s: float


@dataclass(kw_only=True)
class LoopResult:
    """How the loop ended: a verified fix, or not, and what was measured on the way."""

    fixed: bool
    reason: str
    patch: str = ""
    tests_after: TestRun | None = None
    verification: TestRun | None = None
    verdict: Verdict | None = None  # the clean re-run judged against the baseline


@dataclass(kw_only=True)
class Agent:
    """Runs one repair: `Agent(...).run(goal, baseline, listing)`; usage stays readable after."""

    model: Model
    env: Environment
    budgets: Budgets
    trace: Trace
    cost_of: Callable[[Usage], float | None] = lambda _u: None
    on_step: Callable[[StepInfo], None] = lambda _s: None
    max_context_chars: int = 60_000
    # The tools the first reply may call (json_schema mode enforces it): the edit tools when the
    # first message already shows the code the failing tests reach. None: any tool.
    first_tools: Sequence[str] | None = None
    # An edit after which more tests fail than before it is undone, and the model told.
    undo_worse_edits: bool = False
    # With first_tools: first edits tried, each on the original tree (the first at temperature
    # 0, the others warmer); the first that the tests say fixes is kept.
    edit_samples: int = 1
    # After each edit the clean re-run of the patch starts beside the working copy's run, so a
    # fix is verified after one test run's wait, not two; an unused one costs a run's CPU.
    verify_ahead: bool = False
    # The lines the failing tests run, most suspicious first (worker/loop/suspects.py): each
    # first-edit sample after the first is pointed at one of them; without samples, the first
    # message names them.
    suspects: Sequence[Suspect] = ()
    # After first-edit samples none of which fixed: go on as a conversation, or end the run.
    converse: bool = True
    shown_failures: int = 10  # failing tests shown in the first message
    # After a pinned sample that did not fix, up to this many of its second choices (the
    # edit again with one token swapped for the model's runner-up there) are tried by the
    # tests alone: no model call, so no tokens, and not one of `edit_samples`.
    second_choices: int = 0
    usage: BudgetUsage = field(default_factory=BudgetUsage)
    model_seconds: float = 0.0
    # When the run's clock started (time.monotonic()): the wiring passes the run's own start,
    # so the baseline and the line ranking count against max_wall_s as the loop does.
    started_at: float = field(default_factory=time.monotonic)
    _claims: int = 0
    _stuck: StuckDetector = field(default_factory=StuckDetector)
    _warmer: float | None = None  # the next call's temperature; None: the configured one
    _only: Sequence[str] | None = None  # the tools the next reply may call; None: any
    _pins: Pins | None = None  # arguments the next reply's calls must carry (json_schema mode)
    _second: bool = False  # the next reply brings its second choices (json_schema mode)
    _names: tuple[str, ...] = ()
    _suite_run: TestRun | None = None  # the model's own run_tests of the whole suite, this step
    _undone: set[str] = field(default_factory=set)  # edits undone: sent again, they are refused
    # The sample (and second choice) the next trace events belong to, for `worker show`.
    _group: dict[str, int] = field(default_factory=dict)
    baseline: TestRun | None = None
    last_tests: TestRun | None = None
    last_verification: TestRun | None = None
    last_verdict: Verdict | None = None

    def run(self, goal: str, baseline: TestRun, listing: str, sources: str = "") -> LoopResult:
        """Loop until the harness verifies a fix, or a budget, repeat or give-up ends it."""
        specs = self.env.tool_specs()
        if self.budgets.max_wall_s is not None:  # test runs too end within the time budget
            self.env.end_by(self.started_at + self.budgets.max_wall_s)
        if self.first_tools and self.edit_samples > 1 and not self.converse:
            # Samples only: no reply can call another tool, so no other one is described (a
            # shorter prompt, re-sent with every sample).
            specs = [spec for spec in specs if spec.name in self.first_tools]
        self._names = tuple(spec.name for spec in specs)
        self._only = self.first_tools
        self.baseline = self.last_tests = baseline
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompts.system_prompt([s.name for s in specs])},
            {
                "role": "user",
                "content": prompts.task_message(
                    goal=goal,
                    tests=baseline.render(max_failures=self.shown_failures),
                    listing=listing,
                    sources=sources,
                    # With samples to point, the list stays out of the first message: there
                    # it drew the bundled model's greedy edit to the first suspect, wrong more
                    # often than not (arm M0, docs/evaluation.md).
                    suspects=""
                    if self.edit_samples > 1
                    else render_suspects(self.suspects, failed=_failing_count(baseline)),
                ),
            },
        ]
        self.trace.event(
            "prompt",
            system=messages[0]["content"],
            task=messages[1]["content"],
            tools=[spec.name for spec in specs],
        )
        if self.first_tools and self.edit_samples > 1:
            done = self._sample_first_edits(messages, specs)
            if done is not None:
                return done
            if not self.converse:
                raise SamplesSpent(
                    f"no sampled first edit fixed the failing tests ({self.usage.steps} answers); "
                    "the run does not go on as a conversation (converse is off)"
                )
        while True:
            self._check_budgets()
            reply = self._ask(messages, specs)
            if not reply.tool_calls:
                messages.append(reply.assistant_message())
                done = self._on_claim(messages, reply)
            else:
                done = self._run_calls(messages, reply)
            if done is not None:
                return done

    def _sample_first_edits(
        self, messages: list[dict[str, Any]], specs: list[ToolSpec]
    ) -> LoopResult | None:
        """Up to `edit_samples` first edits, each tried on the original tree, the first at
        temperature 0 and the others warmer: the first that the tests say fixes is verified
        and kept. An answer the tools refused (old not in the file) or a duplicate does not
        count, within SAMPLE_ANSWERS answers per edit. A small model's greedy edit is often
        the right function but the wrong line, and llama.cpp's prompt cache makes each further
        sample cost its answer alone.

        When none fixes: the sample that left the fewest tests failing, if fewer than before,
        is made again and its turn kept (progress on a bug in two places); else the tree is
        as it was and the history holds the first sample's turn, marked undone."""
        head, tried, samples = len(messages), set[str](), list[_Sample]()
        pointed: list[tuple[int, bool]] = []  # (suspect, warm) of each pointed sample
        changed: set[str] = set()  # lines earlier samples changed
        for n in range(self.edit_samples * SAMPLE_ANSWERS):
            if sum(s.undone and not s.second for s in samples) >= self.edit_samples:
                break  # enough edits tried; an answer the tools refused did not count
            self._check_budgets()
            focus, warm = _next_focus(self.suspects, pointed, changed) if n > 0 else (None, False)
            self._only = self.first_tools
            if warm or (n > 0 and focus is None):
                self._warmer = RETRY_TEMPERATURE if warm else REPEAT_TEMPERATURE
            if focus is not None:  # a different prompt: at temperature 0, a different answer
                pointed.append((focus, warm))
                suspect = self.suspects[focus]
                self._only, self._pins = self._pin(suspect)
                around = suspect.around + "\n" if suspect.around else ""
                hint = prompts.FOCUS.format(where=suspect.where(), text=suspect.text, around=around)
                messages.append({"role": "user", "content": hint})
                self.trace.event("sample_focus", sample=n + 1, line=suspect.where(), warm=warm)
            # A pinned answer comes with what the model nearly wrote (second choices).
            self._second = bool(self.second_choices and self._pins)
            self._group = {"sample": n + 1}
            reply = self._ask(messages, specs)
            if focus is not None:  # an `old` found in several places: the one pointed at
                calls = tuple(_at_line(c, self.suspects[focus]) for c in reply.tool_calls)
                reply = replace(reply, tool_calls=calls)
            asked = len(messages)
            done = self._try_sample(head, messages, reply, n + 1, samples, tried, changed)
            # The likeliest not tried yet: a later answer often nearly wrote what an earlier did.
            untried = [c for c in reply.second_choices if _calls_key((c.call,)) not in tried]
            for k, choice in enumerate(worth_trying(untried, self.second_choices), start=1):
                if done is not None:
                    break
                self._group = {"sample": n + 1, "second": k}
                self._check_budgets()
                del messages[asked:]  # the same prompt, answered with the nearly-written edit
                self.trace.event(
                    "second_choice", sample=n + 1, was=choice.was, token=choice.token,
                    probability=round(choice.probability, 4),
                )  # fmt: skip
                nearly = replace(reply, content=None, tool_calls=(choice.call,), usage=Usage())
                done = self._try_sample(
                    head, messages, nearly, n + 1, samples, tried, changed, True
                )
            self._group = {}
            if done is not None:
                return done
            del messages[head:]
        best = min(samples, key=lambda x: x.failing, default=None)
        if best is not None and best.failing < _failing(self.baseline):
            for call in best.calls:  # the same edit on the same tree: the same result
                self._undone.discard(_call_key(call))
                self.env.call_tool(call)
            self.last_tests = self.env.run_tests()
            self.trace.event("sample_kept", step=self.usage.steps, tests=self.last_tests.headline())
            messages.extend(best.turn)
        elif samples:
            messages.extend(samples[0].turn)
            if samples[0].undone:
                note = messages[-1]["content"] + "\n\n" + prompts.SAMPLE_UNDONE
                messages[-1] = {**messages[-1], "content": note}
        return None

    def _try_sample(
        self,
        head: int,
        messages: list[dict[str, Any]],
        reply: ModelReply,
        sample: int,
        samples: list[_Sample],
        tried: set[str],
        changed: set[str],
        second: bool = False,
    ) -> LoopResult | None:
        """One sampled edit on the original tree: run (a call already tried is not), checked,
        then undone and recorded in `samples` (its turn: messages from `head`) unless it
        fixed."""
        changed.update(line for c in reply.tool_calls for line in _changed_lines(c))
        key = _calls_key(reply.tool_calls)
        if not reply.tool_calls or key in tried:
            return None
        tried.add(key)
        # A second choice is no step of the model's: it never counts as one without progress.
        done = self._run_calls(messages, reply, idle=not second)
        if done is not None:
            return done
        undone = self.env.undo_all_edits()
        if undone:
            self._undone.update(_call_key(c) for c in reply.tool_calls)
            self.trace.event("sample_undone", step=self.usage.steps, sample=sample, second=second)
        failing = _failing(self.last_tests) if undone else float("inf")
        samples.append(_Sample(failing, messages[head:], reply.tool_calls, undone, second))
        self.last_tests = self.baseline
        return None

    def _pin(self, suspect: Suspect) -> tuple[Sequence[str] | None, Pins | None]:
        """The tools and pinned arguments of a sample pointed at `suspect`: a `replace` of that
        line (old is the line, whole), so the model writes only what it becomes; a line cut
        short in the list cannot be pinned."""
        if "replace" not in (self.first_tools or ()) or len(suspect.text) >= MAX_SUSPECT_TEXT:
            return self.first_tools, None
        pin = {"path": suspect.path, "old": suspect.text, "line": suspect.line}
        return ("replace",), {"replace": pin}

    # -- the parts of one step -----------------------------------------------------------------

    def _run_calls(
        self, messages: list[dict[str, Any]], reply: ModelReply, *, idle: bool = True
    ) -> LoopResult | None:
        """A reply's tool calls run, its turn in the history, then: fixed and verified yet?
        `idle`: a step without progress counts towards stuck detection's idle steps."""
        messages.append(reply.assistant_message())
        for call in reply.tool_calls:
            observation = self._act(call)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": observation.text})
        return self._check_done(messages, idle=idle)

    def _check_budgets(self) -> None:
        self.usage = replace(self.usage, elapsed_s=time.monotonic() - self.started_at)
        reason = check(self.budgets, self.usage)
        if reason:
            raise BudgetExhausted(reason)

    def _time_left(self) -> float | None:
        if self.budgets.max_wall_s is None:
            return None
        return self.budgets.max_wall_s - (time.monotonic() - self.started_at)

    def _ask(self, messages: list[dict[str, Any]], specs: list[ToolSpec]) -> ModelReply:
        """One model answer the loop can use; an answer cut off by length is not one.

        A cut-off answer (a runaway string, a half-written tool call) is not run: the model is
        told, and asked again, within the same budgets.
        """
        reply = self._ask_once(messages, specs)
        while reply.finish_reason == "length" and not _complete_calls(reply):
            self.trace.event("cut_off", step=self.usage.steps, tokens=reply.usage.completion_tokens)
            calls = reply.tool_calls
            head = (reply.content or (calls[0].raw_arguments if calls else ""))[:CUT_OFF_SHOWN]
            messages.append({"role": "assistant", "content": f"{head}... [cut off]"})
            tokens = reply.usage.completion_tokens or "the maximum number of"
            messages.append({"role": "user", "content": prompts.CUT_OFF.format(tokens=tokens)})
            self._warmer = REPEAT_TEMPERATURE  # the same prompt at temperature 0 runs away again
            self._check_budgets()
            reply = self._ask_once(messages, specs)
        return reply

    def _ask_once(self, messages: list[dict[str, Any]], specs: list[ToolSpec]) -> ModelReply:
        started = time.monotonic()
        sent = compact(messages, max_chars=self.max_context_chars)
        # After a repeat, one warmer call: at temperature 0 a small model repeats itself forever.
        warmer, self._warmer = self._warmer, None
        while True:
            try:
                reply = self.model.complete(
                    sent,
                    specs,
                    temperature=warmer,
                    timeout_s=self._time_left(),
                    only=self._only,
                    pins=self._pins,
                    second_choices=self._second,
                )
                break
            except CallOutOfTime as exc:
                self.model_seconds += time.monotonic() - started
                self.usage = replace(self.usage, elapsed_s=time.monotonic() - self.started_at)
                raise BudgetExhausted(
                    f"time budget exhausted during a model call: {self.usage.elapsed_s:.0f}s of "
                    f"{self.budgets.max_wall_s:.0f}s elapsed (max_wall_s); {exc}"
                ) from exc
            except ContextTooLong as exc:
                sent = self._shrink(messages, sent, exc)
        took = time.monotonic() - started
        self.model_seconds += took
        only, self._only = self._only, None
        pins, self._pins = self._pins, None
        self._second = False
        cost = self.cost_of(reply.usage)
        self.usage = replace(
            self.usage,
            steps=self.usage.steps + 1,
            tokens_in=self.usage.tokens_in + reply.usage.prompt_tokens,
            tokens_out=self.usage.tokens_out + reply.usage.completion_tokens,
            cost_usd=None
            if cost is None or self.usage.cost_usd is None
            else self.usage.cost_usd + cost,
        )
        self.trace.event(
            "model_call",
            step=self.usage.steps,
            messages=len(sent),
            request_bytes=reply.request_bytes,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            duration_s=round(took, 3),
            mode=reply.mode,
            only=list(only) if only is not None else None,
            pins=plain_pins(pins),
            finish_reason=reply.finish_reason,
            attempts=reply.attempts,
            content=reply.content,
            tool_calls=[c.to_openai() for c in reply.tool_calls],
            **self._group,
            **_replayed(reply),
        )
        return reply

    def _shrink(
        self, messages: list[dict[str, Any]], sent: list[dict[str, Any]], exc: ContextTooLong
    ) -> list[dict[str, Any]]:
        """The endpoint said the request is too long: halve the history's size for this call
        and the next ones, or end the run when compacting cannot make it smaller."""
        size = history_chars(sent)
        self.max_context_chars = max(1, min(self.max_context_chars, size) // 2)
        smaller = compact(messages, max_chars=self.max_context_chars, keep_recent=2)
        self.trace.event("context_too_long", chars=size, shrunk_to=history_chars(smaller))
        if history_chars(smaller) >= size:
            raise BudgetExhausted(
                f"context budget exhausted: the conversation ({size} characters) does not fit "
                f"the model's window even compacted; {exc}"
            ) from exc
        return smaller

    def _act(self, call: ToolCall) -> Observation:
        started = time.monotonic()
        before = self.last_tests
        if _call_key(call) in self._undone:  # the same result again, at the cost of a test run
            observation = Observation(ok=False, text=prompts.ALREADY_UNDONE, target=call.name)
        else:
            observation = self.env.call_tool(call)
        if observation.changed_files:
            # After each applied patch the harness runs the tests: one step saved, facts given.
            if self.verify_ahead:
                self.env.verify_ahead(self.env.diff())
            self.last_tests = self.env.run_tests()
            text = observation.text + "\n\nTests after this patch:\n" + self.last_tests.render()
            if (
                self.undo_worse_edits
                and _failing(self.last_tests) > _failing(before)
                and self.env.undo_last_edit()
            ):
                text += "\n\n" + prompts.UNDONE.format(
                    after=_count(self.last_tests), before=_count(before)
                )
                self._undone.add(_call_key(call))
                self.trace.event("undone", step=self.usage.steps, files=observation.changed_files)
                self.last_tests = before
            observation = replace(observation, text=text)
        elif observation.tests is not None and not observation.tests.test_ids:
            self._suite_run = observation.tests
        verdict = self._stuck.observe(
            call.name, call.arguments or call.raw_arguments, observation.text
        )
        took = time.monotonic() - started
        self.trace.event(
            "tool_call",
            step=self.usage.steps,
            id=call.id,
            name=call.name,
            arguments=call.arguments if call.arguments is not None else call.raw_arguments,
            ok=observation.ok,
            observation=observation.text,
            duration_s=round(took, 3),
            refusals=[{"rule": d.rule, "reason": d.reason} for d in observation.refusals],
            changed_files=list(observation.changed_files),
            data=observation.data,
            **self._group,
        )
        self.on_step(
            StepInfo(
                step=self.usage.steps,
                tool=call.name,
                target=observation.target,
                outcome=_outcome(
                    observation, self.last_tests if observation.changed_files else None
                ),
                tokens=self.usage.tokens,
                elapsed_s=time.monotonic() - self.started_at,
            )
        )
        if verdict == "stop":
            raise Stuck(f"the model repeated the same {call.name} call with the same result")
        if verdict == "nudge":
            self._warmer = REPEAT_TEMPERATURE
            # A small model repeats a call even when told not to: the next reply may not call
            # that tool (where the endpoint's mode can enforce it).
            self._only = [name for name in self._names if name != call.name] or None
            observation = replace(
                observation,
                text=observation.text + "\n\n" + prompts.NUDGE.format(n=self._stuck.nudge_at),
            )
        return observation

    def _check_done(
        self, messages: list[dict[str, Any]], *, idle: bool = True
    ) -> LoopResult | None:
        tests = self.last_tests
        patch = self.env.diff()
        suite, self._suite_run = self._suite_run, None
        fresh = tests is not self.last_verification  # a failed re-run is not re-verified
        if patch.strip() and (self._fixes(suite) or (fresh and self._fixes(tests))):
            done = self._verify(patch, tests_after=suite if self._fixes(suite) else tests)
            if done is not None:
                return done
            messages.append({"role": "user", "content": self._verify_failed()})
        failing = None if tests is None or tests.summary is None else len(tests.summary.failures)
        if idle and self._stuck.step_done(failing=failing, diff_size=len(patch)):
            raise Stuck(f"no progress in the last {self._stuck.idle_steps} steps")
        return None

    def _on_claim(self, messages: list[dict[str, Any]], reply: ModelReply) -> LoopResult | None:
        """The model answered without a tool call: it thinks it is done. The harness checks."""
        tests = self.env.run_tests()
        self.last_tests = tests
        self.trace.event(
            "claim", step=self.usage.steps, content=reply.content, tests=tests.headline()
        )
        self.on_step(
            StepInfo(
                step=self.usage.steps,
                tool="(done?)",
                target="",
                outcome=tests.headline(),
                tokens=self.usage.tokens,
                elapsed_s=time.monotonic() - self.started_at,
            )
        )
        patch = self.env.diff()
        text = prompts.FALSE_CLAIM.format(tests=tests.render())
        if patch.strip() and self._fixes(tests):
            done = self._verify(patch, tests_after=tests)
            if done is not None:
                return done
            text = self._verify_failed()
        self._claims += 1
        if self._claims >= 2:
            raise GaveUp("the model said it was done twice while the tests still failed")
        messages.append({"role": "user", "content": text})
        return None

    def _fixes(self, tests: TestRun | None) -> bool:
        """The sandbox's own run (whole suite) says fixed, by the same rules as the re-run."""
        return tests is not None and judge(tests, baseline=self.baseline).passed

    def _verify(self, patch: str, *, tests_after: TestRun | None) -> LoopResult | None:
        """The harness's clean re-run, judged against the baseline: the fix, or None."""
        started = time.monotonic()
        verified = self.env.verify(patch)
        verdict = judge(verified, baseline=self.baseline, patch=patch)
        self.last_verification, self.last_verdict = verified, verdict
        self.trace.event(
            "verification",
            passed=verdict.passed,
            rule=verdict.rule,
            reasons=list(verdict.reasons),
            tests=verified.headline(),
            duration_s=round(time.monotonic() - started, 3),
        )
        if not verdict.passed:
            self.last_tests = verified
            return None
        return LoopResult(
            fixed=True,
            reason=f"tests pass, verified on a clean copy ({verdict.describe()})",
            patch=patch,
            tests_after=tests_after,
            verification=verified,
            verdict=verdict,
        )

    def _verify_failed(self) -> str:
        assert self.last_verification is not None and self.last_verdict is not None
        return prompts.VERIFY_FAILED.format(
            verdict=self.last_verdict.describe(), tests=self.last_verification.render()
        )


def _failing_count(tests: TestRun) -> int:
    return 0 if tests.summary is None else len(tests.summary.failures)


def _next_focus(
    suspects: Sequence[Suspect], pointed: Sequence[tuple[int, bool]], changed: set[str]
) -> tuple[int | None, bool]:
    """The suspect the next sample is pointed at, and whether it is asked warmer: the top
    RETRIED suspects once each at temperature 0 (a line an earlier sample changed is left out),
    then the warmer retries of HOT_RETRIES in order, then the rest once each at temperature 0.
    (None, False) when none is left."""
    top = range(min(RETRIED, len(suspects)))

    def fresh(i: int) -> bool:
        text = loosened(suspects[i].text)
        return (i, False) not in pointed and not any(part in text for part in changed)

    cold = next((i for i in top if fresh(i)), None)
    if cold is not None:
        return cold, False
    retries = [i for i in HOT_RETRIES if i < len(top)]
    done = sum(warm for _, warm in pointed)
    if done < len(retries):
        return retries[done], True
    rest = next((i for i in range(len(top), len(suspects)) if fresh(i)), None)
    return rest, False


def _at_line(call: ToolCall, suspect: Suspect) -> ToolCall:
    """A `replace` of the pointed file, given the pointed line: used only where its `old`
    fits several places (tools/replace.py), to pick the one that holds that line."""
    args = call.arguments
    if call.name != "replace" or not isinstance(args, dict) or "line" in args:
        return call
    if str(args.get("path", "")).removeprefix("./") != suspect.path:
        return call
    return replace(call, arguments={**args, "line": suspect.line})


def _changed_lines(call: ToolCall) -> set[str]:
    """The lines (or parts of lines) an edit call takes out, stripped: `old` lines not kept in
    `new`, a diff's `-` lines; parts shorter than 3 characters are left out."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    old, new, patch = (str(args.get(k) or "") for k in ("old", "new", "patch"))
    if patch:
        lines = patch.splitlines()
        out = {ln[1:].strip() for ln in lines if ln.startswith("-") and not ln.startswith("---")}
    else:
        out = {ln.strip() for ln in old.splitlines()} - {ln.strip() for ln in new.splitlines()}
    return {loosened(part) for part in out if len(part) >= 3}


def _failing(tests: TestRun | None) -> float:
    """Failing tests of a run; a run without a readable report counts as worst."""
    if tests is None or tests.summary is None:
        return float("inf")
    return float(len(tests.summary.failures))


def _count(tests: TestRun | None) -> str:
    failing = _failing(tests)
    return "the suite no longer runs" if failing == float("inf") else f"{failing:.0f}"


@dataclass(frozen=True)
class _Sample:
    """One sampled first edit: the tests failing after it, its turn, its calls."""

    failing: float
    turn: list[dict[str, Any]]
    calls: Sequence[ToolCall]
    undone: bool
    second: bool = False  # a second choice: no model answer, so not one of `edit_samples`


def _call_key(call: ToolCall) -> str:
    """A call's tool and arguments, as one comparable string."""
    args = call.arguments if call.arguments is not None else call.raw_arguments
    return json.dumps([call.name, args], sort_keys=True, default=str)


def _calls_key(calls: Sequence[ToolCall]) -> str:
    return "\n".join(_call_key(c) for c in calls)


def _complete_calls(reply: ModelReply) -> bool:
    """Whether a reply carries tool calls that all parsed (a cut after them does no harm)."""
    return bool(reply.tool_calls) and all(call.error is None for call in reply.tool_calls)


def _outcome(observation: Observation, tests: TestRun | None) -> str:
    if observation.refusals:
        return "refused: " + observation.refusals[0].rule
    if not observation.ok:
        return "error: " + (observation.text.splitlines() or [""])[0][:70]
    if tests is not None:
        return "patched; " + tests.headline()
    return (observation.text.splitlines() or ["ok"])[0][:70]


def _replayed(reply: ModelReply) -> dict[str, Any]:
    """What `worker replay` needs beyond the parsed reply: the answer's text when the tool calls
    were parsed out of it, the tokens and runner-ups its second choices came from."""
    kept: dict[str, Any] = {}
    if reply.answer != reply.content:
        kept["answer"] = reply.answer
    if reply.logprobs:
        kept["logprobs"] = [[token, [list(o) for o in others]] for token, others in reply.logprobs]
    return kept
