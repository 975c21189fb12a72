"""The search for a small model's first edit: sampled edits on the original tree, pointed at the
suspect lines, their warmer retries and their second choices, before any conversation.

A small model's greedy edit is often the right function but the wrong line, and llama.cpp's
prompt cache makes each further sample cost its answer alone. So the run opens with up to
`edit_samples` first edits, each tried on the original tree: the greedy one, then one pointed
at each top suspect line (a `replace` of that line, pinned, which the model only completes),
then warmer retries of those lines. Two more moves (moves.py) take a few of those samples: a
small function rewritten whole where the ranking cannot tell its lines apart (warmer again where
that did not fix), and a line added after a suspect line or before its `return`; how many each
gets is chosen per run from the evidence (split.py). After each pinned sample that did not
fix, its second choices (the edit again with one token swapped for the model's runner-up there)
are tried by the tests alone.
The first that the tests say fixes is verified and kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from sandbox.testrun.run import TestRun
from sandbox.worktree.diff import removed_lines
from tools.replace import loosened
from worker.llm.types import CallSettings, ModelReply, Pins, ToolCall, ToolSpec, Usage
from worker.loop.agent import REPEAT_TEMPERATURE
from worker.loop.endings import SamplesSpent
from worker.loop.opening import Conversation, Moves
from worker.loop.turns import LoopResult, StepInfo, Turn, compared, failing
from worker.search import moves as more
from worker.search import prompts
from worker.search.moves import Function
from worker.search.second import worth_trying
from worker.search.settings import defaults
from worker.search.split import RETRIED, split
from worker.search.suspects import MAX_TEXT, Suspect, render

# A top suspect's second pointed sample: the same prompt, hotter. Pointed at the bug's line of
# 15 dev tasks, 2 answers each (bench/lines.py): 28 of 30 differed from the greedy answer at
# 1.0, 21 at 0.7, and 13 when shown the greedy answer as tried (it copied it); a fix came in
# 4, 4 and 1 of the tasks (docs/evaluation.md, arm T).
RETRY_TEMPERATURE = 1.0
SAMPLE_ANSWERS = 2  # answers asked for, at most, per first edit sampled
# Then their warmer retries (RETRY_TEMPERATURE), in this order (indices of the ranked suspects):
# the likelier a line, the more answers. Pointed at the bug's own line of 15 dev tasks, any of
# 8 answers (4 variants x 2) wrote the fix in 9 where any one variant's 2 did in 4, and 1.0's
# answers differed from each other in 28 of 30 (bench/lines.py); the bug's line ranked first in
# 22 of 46 planted tasks, second in 11, third in 2 (bench/locate.py).
HOT_RETRIES = (0, 1, 0, 2, 0, 1)
# How many samples go to each move (a whole function's rewrite and its warmer retry, a line
# added, the pointed lines) is chosen per run from the ranking's spread and the function's
# size: worker/search/split.py, its rules and their evidence. With the bundled model's 5
# samples: greedy, line 1, line 2, insertion, line 1 warmer; on a flat ranking over a small
# function: greedy, whole function, whole function warmer, line 1, line 2.
MoveKind = Literal["greedy", "free", "line", "insert", "whole"]
# The settings' defaults when none is given: a hosted model's (worker/search/settings.py).
_GIVEN = defaults(bundled=False)


@dataclass(frozen=True, kw_only=True)
class FirstEdits:
    """The opening (worker/loop/opening.Opening) of a run that searches for its first edit."""

    # The tools the first reply may call (json_schema mode enforces it): the edit tools when the
    # first message already shows the code the failing tests reach. None: any tool.
    first_tools: tuple[str, ...] | None = None
    # With first_tools: first edits tried, each on the original tree (see the module's text).
    edit_samples: int = _GIVEN["edit_samples"]
    # The lines the failing tests run, most suspicious first (worker/search/suspects.py): each
    # sample after the first is pointed at one of them; without samples, the first message
    # names them.
    suspects: Sequence[Suspect] = ()
    # After samples none of which fixed: go on as a conversation, or end the run.
    converse: bool = _GIVEN["converse"]
    # After a pinned sample that did not fix, up to this many of its second choices are tried
    # by the tests alone: no model call, so no tokens, and not one of `edit_samples`.
    second_choices: int = _GIVEN["second_choices"]
    # The functions the first message shows whole that a rewrite fits (moves.small_functions):
    # where the ranking is flat, one sample rewrites the top line's function.
    functions: Sequence[Function] = ()
    # The moves beyond the pointed line (moves.py): off, the split before them (an ablation).
    moves: bool = _GIVEN["moves"]

    @property
    def samples(self) -> bool:
        return bool(self.first_tools) and self.edit_samples > 1

    def describe(self, specs: Sequence[ToolSpec]) -> list[ToolSpec]:
        """Samples only: no reply can call another tool, so no other one is described (a
        shorter prompt, re-sent with every sample)."""
        if self.samples and not self.converse:
            return [spec for spec in specs if spec.name in (self.first_tools or ())]
        return list(specs)

    def hint(self, baseline: TestRun) -> str:
        """With samples to point, the list stays out of the first message: there it drew the
        bundled model's greedy edit to the first suspect, wrong more often than not (arm M0)."""
        if self.edit_samples > 1:
            return ""
        failed = baseline.failing()
        return render(self.suspects, failed=int(failed) if failed < float("inf") else 0)

    def play(self, moves: Moves, messages: Conversation) -> Turn:
        if not self.samples:  # the first reply must be an edit, where first_tools say so
            return Turn(then=CallSettings(only=self.first_tools))
        done = self._search(moves, messages).run()
        if done is not None:
            return Turn(done=done)
        if not self.converse:
            raise SamplesSpent(
                f"no sampled first edit fixed the failing tests ({moves.steps} answers); "
                "the run does not go on as a conversation (converse is off)"
            )
        return Turn()

    def _search(self, moves: Moves, messages: Conversation) -> _Search:
        """The samples' plan (split.py): whether a function is rewritten whole, and where a line
        may be added; both need the pinned `replace`. The trace records it and why."""
        suspects, pinned = self.suspects, "replace" in (self.first_tools or ())
        function = more.function_of(suspects, self.functions) if pinned else None
        insertion = more.insertion(suspects, top=RETRIED) if pinned else None
        plan = split(
            suspects, samples=self.edit_samples, function=function, insertion=insertion,
            moves=self.moves,
        )  # fmt: skip
        moves.trace.event("sample_split", **plan.to_dict())
        return _Search(
            opening=self, moves=moves, messages=messages, head=len(messages),
            whole=function if plan.whole else None, whole_tries=plan.whole,
            insertion=insertion if plan.insert else None, cold=plan.cold,
        )  # fmt: skip


@dataclass(frozen=True)
class _Move:
    """What one sample asks: the greedy edit, an edit with no line left to point at, a suspect
    line replaced (`focus`, warmer or not), a line added after one, or a function rewritten."""

    kind: MoveKind
    focus: int | None = None
    warm: bool = False


@dataclass(frozen=True)
class _Sample:
    """One sampled first edit: the tests after it, its turn, its calls."""

    tests: TestRun | None
    turn: Conversation
    calls: Sequence[ToolCall]
    undone: bool
    second: bool = False  # a second choice: no model answer, so not one of `edit_samples`


@dataclass(kw_only=True)
class _Search:
    """One opening's samples: what was tried, what each left failing, which lines it changed."""

    opening: FirstEdits
    moves: Moves
    messages: Conversation
    head: int  # the messages before the first sample: every sample is asked after them
    whole: Function | None = None  # the function a sample rewrites whole, if any
    whole_tries: int = 0  # its rewrites: the second warmer, once the first changed it, unfixed
    whole_edited: bool = False  # a rewrite ran on the tree and did not fix
    insertion: more.Insertion | None = None  # where a sample adds a line, if anywhere
    cold: int = RETRIED  # the top suspects each pointed at once, at temperature 0
    asked: list[MoveKind] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)
    samples: list[_Sample] = field(default_factory=list)
    pointed: list[tuple[int, bool]] = field(default_factory=list)  # (suspect, warm) each
    changed: set[str] = field(default_factory=set)  # lines earlier samples changed

    def run(self) -> LoopResult | None:
        """Samples until one fixes, or `edit_samples` edits were tried (an answer the tools
        refused or a duplicate does not count, within SAMPLE_ANSWERS answers per edit). When
        none fixes: the sample that left the fewest tests failing, if fewer than before, is
        made again and its turn kept (progress on a bug in two places); else the tree is as it
        was and the history holds the first sample's turn, marked undone."""
        wanted = self.opening.edit_samples
        for n in range(1, wanted * SAMPLE_ANSWERS + 1):
            if sum(s.undone and not s.second for s in self.samples) >= wanted:
                break
            self.moves.check_budgets()
            done = self._sample(n)
            if done is not None:
                return done
            del self.messages[self.head :]
        self._settle()
        return None

    def _sample(self, n: int) -> LoopResult | None:
        """Sample `n`: asked (as its move says: pointed, pinned, warmer), tried, then its second
        choices; its progress is one line, the second choices counted on it."""
        move = self._next_move(n)
        self.asked.append(move.kind)
        only, pins, temperature = self._ask(move, n)
        # A pinned answer comes with what the model nearly wrote (second choices).
        seconds = bool(self.opening.second_choices and pins)
        lines: list[StepInfo] = []
        own: int | None = None  # the sample's own lines, once its second choices begin
        done = None
        try:
            with self.moves.held(lines):
                with self.moves.grouped(sample=n):
                    reply = self.moves.ask(
                        self.messages, CallSettings(temperature, only, pins, seconds)
                    )
                    reply = self._as_edit(reply, move)
                    asked = len(self.messages)
                    done = self._try(reply, n, move=move.kind)
                own = len(lines)
                if done is None:
                    done = self._second_choices(reply, n, asked, move=move.kind)
        finally:
            self._say(lines, own, done)
        return done

    def _next_move(self, n: int) -> _Move:
        """The greedy edit first, then the function rewritten whole (where planned), then the
        pointed lines (_next_focus), the insertion in the first slot past the cold ones."""
        if n == 1:
            return _Move("greedy")
        if self.whole is not None:
            rewrites = self.asked.count("whole")
            if rewrites == 0:
                return _Move("whole")
            # Warmer, where the greedy rewrite ran and did not fix: one that repeated an answer
            # or gave the function back unchanged (the tool refuses it, no test run) is not
            # asked again (seen: scopeguard's rewrite returned the function unchanged).
            if rewrites == 1 and self.whole_tries > 1 and self.whole_edited:
                return _Move("whole", warm=True)
        suspects = self.opening.suspects
        focus, warm = _next_focus(suspects, self.pointed, self.changed, cold=self.cold)
        insertion = self.insertion
        if (focus is None or warm) and insertion is not None and "insert" not in self.asked:
            return _Move("insert", insertion.suspect)
        return _Move("free") if focus is None else _Move("line", focus, warm)

    def _ask(self, move: _Move, n: int) -> tuple[tuple[str, ...] | None, Pins | None, float | None]:
        """The sample's prompt (appended to the messages), tools, pins and temperature: a
        pointed prompt is a different prompt, so at temperature 0 a different answer."""
        only, pins, temperature = self.opening.first_tools, None, None
        if move.warm:
            temperature = RETRY_TEMPERATURE
        elif move.kind == "free":
            temperature = REPEAT_TEMPERATURE
        insertion = self.insertion
        if move.kind == "whole" and self.whole is not None:
            only, pins = ("replace",), more.whole_pins(self.whole)
            hint = more.whole_prompt(self.whole, self.moves.baseline)
            self._hint(hint, n, line=self.whole.where(), warm=move.warm, move="whole")
        elif move.kind == "insert" and move.focus is not None and insertion is not None:
            only, pins = ("replace",), insertion.pins()
            hint = more.insert_prompt(self.opening.suspects[move.focus], insertion)
            self._hint(hint, n, line=insertion.where(), warm=False, move="insert")
        elif move.focus is not None:
            suspect = self.opening.suspects[move.focus]
            only, pins = self._pin(suspect)
            self.pointed.append((move.focus, move.warm))
            around = suspect.around + "\n" if suspect.around else ""
            hint = prompts.FOCUS.format(where=suspect.where(), text=suspect.text, around=around)
            self._hint(hint, n, line=suspect.where(), warm=move.warm, move=move.kind)
        return only, pins, temperature

    def _as_edit(self, reply: ModelReply, move: _Move) -> ModelReply:
        """A pointed answer as the edit it stands for: a `replace` whose `old` fits several
        places, given the pointed line; an insertion's lines put before or after its line."""
        if move.focus is None:
            return reply
        suspect, insertion = self.opening.suspects[move.focus], self.insertion

        def edit(call: ToolCall) -> ToolCall:
            call = _at_line(call, suspect)
            if move.kind == "insert" and insertion is not None:
                return more.inserted(call, insertion)
            return call

        seconds = tuple(replace(c, call=edit(c.call)) for c in reply.alternatives)
        return replace(reply, tool_calls=tuple(map(edit, reply.tool_calls)), alternatives=seconds)

    def _hint(self, hint: str, n: int, *, line: str, warm: bool, move: str) -> None:
        self.messages.append({"role": "user", "content": hint})
        self.moves.trace.event("sample_focus", sample=n, line=line, warm=warm, move=move)

    def _second_choices(
        self, reply: ModelReply, n: int, asked: int, *, move: MoveKind
    ) -> LoopResult | None:
        """The likeliest not tried yet: a later answer often nearly wrote what an earlier did."""
        untried = [c for c in reply.alternatives if _calls_key((c.call,)) not in self.tried]
        for k, choice in enumerate(worth_trying(untried, self.opening.second_choices), start=1):
            with self.moves.grouped(sample=n, second=k):
                self.moves.check_budgets()
                del self.messages[asked:]  # the same prompt, answered with the nearly-written edit
                self.moves.trace.event(
                    "second_choice", sample=n, was=choice.was, token=choice.token,
                    probability=round(choice.probability, 4),
                )  # fmt: skip
                nearly = replace(reply, content=None, tool_calls=(choice.call,), usage=Usage())
                done = self._try(nearly, n, second=True, move=move)
            if done is not None:
                return done
        return None

    def _try(
        self, reply: ModelReply, n: int, *, second: bool = False, move: MoveKind
    ) -> LoopResult | None:
        """One sampled edit on the original tree: run (a call already tried is not: no test
        run, and not one of `edit_samples`), checked, then undone and recorded in `samples`
        (its turn: messages from `head`) unless it fixed. The lines it took out are not pointed
        at cold again, unless a whole function's rewrite took them (it may touch any line)."""
        if move != "whole":
            self.changed.update(line for c in reply.tool_calls for line in _changed_lines(c))
        key = _calls_key(reply.tool_calls)
        if not reply.tool_calls or key in self.tried:
            return None
        self.tried.add(key)
        # A second choice is no step of the model's: it never counts as one without progress.
        turn = self.moves.run_calls(self.messages, reply, idle=not second)
        if turn.done is not None:
            return turn.done
        tests = self.moves.last_tests
        undone = self.moves.undo_edits(reply.tool_calls)
        if undone:
            self.moves.trace.event("sample_undone", step=self.moves.steps, sample=n, second=second)
        turn_messages = self.messages[self.head :]
        self.samples.append(_Sample(tests, turn_messages, reply.tool_calls, undone, second))
        self.whole_edited = self.whole_edited or (move == "whole" and undone)
        return None

    def _settle(self) -> None:
        """After samples none of which fixed: the best one made again, or the first shown undone."""
        # Fewer failing than at the start, on the same tests: a sample whose failing tests ran
        # alone, by id, and all still failed (worker/loop/failing_first.py) never is.
        baseline = self.moves.baseline
        better = [x for x in self.samples if x.undone and _fewer(x.tests, baseline)]
        best = min(better, key=lambda x: failing(x.tests), default=None)
        if best is not None:
            self.moves.redo_edits(best.calls)  # the same edit on the same tree: the same result
            tests = self.moves.last_tests
            headline = tests.headline() if tests is not None else ""
            self.moves.trace.event("sample_kept", step=self.moves.steps, tests=headline)
            self.messages.extend(best.turn)
        elif self.samples:
            self.messages.extend(self.samples[0].turn)
            if self.samples[0].undone:
                note = self.messages[-1]["content"] + "\n\n" + prompts.SAMPLE_UNDONE
                self.messages[-1] = {**self.messages[-1], "content": note}

    def _pin(self, suspect: Suspect) -> tuple[tuple[str, ...] | None, Pins | None]:
        """The tools and pinned arguments of a sample pointed at `suspect`: a `replace` of that
        line (old is the line, whole), so the model writes only what it becomes; a line cut
        short in the list cannot be pinned."""
        first_tools = self.opening.first_tools
        if "replace" not in (first_tools or ()) or len(suspect.text) >= MAX_TEXT:
            return first_tools, None
        return ("replace",), {
            "replace": {"path": suspect.path, "old": suspect.text, "line": suspect.line}
        }

    def _say(self, lines: list[StepInfo], own: int | None, done: LoopResult | None) -> None:
        """A sample's progress lines as they were, but its second choices counted on its last
        line instead of a line each (every one of them is in the trace). `own` is None when the
        sample itself ended the run (a budget, a stop): its lines are said as they were."""
        tried = 0 if own is None else len(lines) - own
        if own is None or not tried:
            for info in lines:
                self.moves.tell(info)
            return
        for info in lines[: max(own - 1, 0)]:  # own 0: the answer was tried before
            self.moves.tell(info)
        last = lines[own - 1] if own else replace(lines[0], outcome="answer tried before")
        ended = "the last fixed" if done is not None else "none fixed"
        choices = f"{tried} second choice{'s' if tried != 1 else ''} tried, {ended}"
        self.moves.tell(
            replace(
                last,
                outcome=f"{last.outcome}; {choices}",
                tokens=lines[-1].tokens,
                elapsed_s=lines[-1].elapsed_s,
            )
        )


def _next_focus(
    suspects: Sequence[Suspect],
    pointed: Sequence[tuple[int, bool]],
    changed: set[str],
    *,
    cold: int = RETRIED,
) -> tuple[int | None, bool]:
    """The suspect the next sample is pointed at, and whether it is asked warmer: the top
    `cold` suspects once each at temperature 0 (a line an earlier sample changed is left out),
    then the warmer retries of HOT_RETRIES (of the top RETRIED) in order, then the rest once
    each at temperature 0. (None, False) when none is left."""
    top = range(min(RETRIED, len(suspects)))

    def fresh(i: int) -> bool:
        text = loosened(suspects[i].text)
        return (i, False) not in pointed and not any(part in text for part in changed)

    first = next((i for i in top[:cold] if fresh(i)), None)
    if first is not None:
        return first, False
    retries = [i for i in HOT_RETRIES if i < len(top)]
    done = sum(warm for _, warm in pointed)
    if done < len(retries):
        return retries[done], True
    rest = next((i for i in range(len(top), len(suspects)) if fresh(i)), None)
    return rest, False


def _fewer(tests: TestRun | None, baseline: TestRun | None) -> bool:
    now, then = compared(tests, baseline)
    return now < then


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
        out = {line.strip() for line in removed_lines(patch)}
    else:
        out = {ln.strip() for ln in old.splitlines()} - {ln.strip() for ln in new.splitlines()}
    return {loosened(part) for part in out if len(part) >= 3}


def _calls_key(calls: Sequence[ToolCall]) -> str:
    return "\n".join(call.key() for call in calls)
