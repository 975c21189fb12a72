"""The doubles the in-process loop and search tests share: a scripted model that answers only
what a json_schema endpoint could send, and the sandbox as a dict of files whose tests run as
real Python. No Docker, no HTTP; the real-part tests of the same behaviour are test_fix_cli.py
and test_search_aids.py."""

from __future__ import annotations

import ast
import builtins
import difflib
import posixpath
import types
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from policies.budgets import Budgets
from sandbox.container.results import CommandResult
from sandbox.ecosystems import language_paths
from sandbox.ecosystems.python.same_code import same_code
from sandbox.source.numbered import numbered
from sandbox.testrun.junit import TestFailure, TestSummary
from sandbox.testrun.run import TestRun
from sandbox.testrun.verdict import TOKEN_PROPERTY
from tools import apply_patch, read_file
from tools import replace as replace_tool
from tools.apply_patch import NO_CODE_CHANGE
from tools.base import Observation, failed, refused
from tools.replace import loosened
from tools.spec import ToolSpec
from worker.llm.types import PLAIN, CallSettings, Messages, ModelReply, ToolCall, Usage
from worker.loop.agent import Agent
from worker.loop.trace import Trace
from worker.loop.turns import LoopResult

BUGGY = "def mean(v):\n    return sum(v) / (len(v) - 1)\n"
FIXED = "def mean(v):\n    return sum(v) / len(v)\n"
WRONG = "def mean(v):\n    return 1.0 * sum(v) / (len(v) - 1)\n"
LINE = "    return sum(v) / (len(v) - 1)"  # the line that differs, as each file has it
FIXED_LINE = "    return sum(v) / len(v)"
WRONG_LINE = "    return 1.0 * sum(v) / (len(v) - 1)"
TESTS = """\
from calc import mean


def test_mean():
    assert mean([1, 2, 3]) == 2


def test_mean_of_zeros():
    assert mean([0, 0]) == 0
"""
TEST_FILE = "tests/test_calc.py"
Reply = ModelReply | BaseException


def repo(calc: str = BUGGY, tests: str = TESTS, **others: str) -> dict[str, str]:
    """The files of a repository: calc.py, its tests, and `others` (name: text)."""
    return {"calc.py": calc, TEST_FILE: tests, **others}


def call(name: str, **arguments: Any) -> ModelReply:
    """A reply that calls one tool, as json_schema mode parses it."""
    tool_call = ToolCall(
        id=f"c{uuid.uuid4().hex[:8]}", name=name, arguments=arguments, raw_arguments=""
    )
    return ModelReply(
        content=None, tool_calls=(tool_call,), usage=Usage(prompt_tokens=50, completion_tokens=10),
        finish_reason="stop", mode="json_schema",
    )  # fmt: skip


def edit(old: str, new: str, path: str = "calc.py", **more: Any) -> ModelReply:
    """A reply that calls `replace`."""
    return call("replace", path=path, old=old, new=new, **more)


def say(text: str) -> ModelReply:
    """A reply without a tool call: a final answer."""
    return ModelReply(
        content=text, tool_calls=(), usage=Usage(prompt_tokens=50, completion_tokens=10),
        finish_reason="stop", mode="json_schema",
    )  # fmt: skip


class ScriptedModel:
    """Replays replies (or raises them) and records every request. Like a json_schema endpoint,
    it answers only what the request's schema allows (worker/llm/wire_text.action_schema): one
    call of a tool the request describes and `only` allows, with valid and pinned arguments; a
    final answer only where `only` is None; second choices only where asked for (an answer cut
    off at the token limit may be any start of one). A scripted reply that breaks a rule, or a
    call past the script's end, fails the test."""

    def __init__(self, script: Sequence[Reply]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []

    def complete(
        self, messages: Messages, tools: Sequence[ToolSpec], settings: CallSettings = PLAIN
    ) -> ModelReply:
        self.requests.append(
            {
                "messages": [dict(m) for m in messages],
                "temperature": settings.temperature,
                "timeout_s": settings.timeout_s,
                "only": settings.only,
                "pins": settings.pins,
                "ask_second_choices": settings.ask_second_choices,
                "tools": [tool.name for tool in tools],
            }
        )
        n = len(self.requests)
        assert self.script, f"request {n}: the loop asked the model more often than the script"
        reply = self.script.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        problem = refusal(reply, tools, settings)
        assert problem is None, (
            f"request {n} (only={settings.only}, pins={settings.pins}, ask_second_choices="
            f"{settings.ask_second_choices}): no json_schema endpoint sends this reply: {problem}"
        )
        return reply


def refusal(reply: ModelReply, tools: Sequence[ToolSpec], settings: CallSettings) -> str | None:
    """Why a json_schema endpoint could not have sent `reply` for a request with `tools` and
    `settings`, or None. The allowed tools are picked as the client picks them."""
    only = settings.only
    allowed = {t.name: t for t in tools if only is None or t.name in only} or {
        t.name: t for t in tools
    }
    cut = reply.finish_reason == "length" and reply.tool_calls
    if cut and all(c.error for c in reply.tool_calls):  # a legal answer's start, unparsed
        return None
    if not reply.tool_calls:
        return "a final answer, where `only` leaves no final-answer branch" if only else None
    if len(reply.tool_calls) != 1:
        return "more than one tool call (the schema is one action)"
    answer = reply.tool_calls[0]
    if answer.name not in allowed:
        return f"a call of {answer.name}, not one of {sorted(allowed)}"
    spec = allowed[answer.name]
    pinned = dict((settings.pins or {}).get(answer.name) or {})
    problem = _arguments(answer, spec, pinned)
    if problem:
        return problem
    if reply.alternatives and not settings.ask_second_choices:
        return "second choices, which the request did not ask for"
    seen = {answer.key()}
    for second in reply.alternatives:
        if second.call.name != answer.name:
            return f"a second choice calling {second.call.name}, not {answer.name}"
        args = second.call.arguments or {}
        if any(args.get(k) != v for k, v in pinned.items()):
            return f"a second choice without the pinned arguments {pinned}"
        if second.call.key() in seen:
            return "a second choice the same as the answer or another second choice"
        seen.add(second.call.key())
    return None


def _arguments(answer: ToolCall, spec: ToolSpec, pinned: Mapping[str, Any]) -> str | None:
    args = answer.arguments
    if args is None:
        return f"{answer.name} arguments that are not a JSON object"
    errors = sorted(Draft202012Validator(spec.parameters).iter_errors(args), key=str)
    if errors:
        return f"{answer.name} arguments {args} outside its schema: {errors[0].message}"
    missed = {k: v for k, v in pinned.items() if args.get(k) != v}
    if missed:
        return f"{answer.name} arguments {args} without the pinned {missed}"
    return None


class MemoryEnvironment:
    """The sandbox as a dict of files. It offers three of the product's tools (their specs):
    read_file, replace and apply_patch, with the real tools' semantics where the loop's tests
    meet them (tests are not writable; `old` must fit one place, or `line` picks one; an edit
    must leave Python that parses and compiles differently). The tests are run as real Python:
    each test module is executed against the repository's modules, each `test_*` called."""

    def __init__(
        self,
        files: Mapping[str, str],
        *,
        clean_copy_breaks: bool = False,
        suite_s: float = 0.1,
        by_id_s: float = 0.1,
    ) -> None:
        self.original = dict(files)
        self.suite_s, self.by_id_s = suite_s, by_id_s  # what a run says it took: whole, by id
        self.runs: list[tuple[str, ...]] = []  # each working-copy run's test ids; () the suite
        self.files = dict(files)
        self.clean_copy_breaks = clean_copy_breaks  # the clean re-run sees the original code
        self.calls: list[ToolCall] = []  # every tool call, as the loop ran it
        self.verifications = 0
        self.before_edit: dict[str, str] = {}
        self.ahead: list[str] = []  # the patches whose clean run was started ahead
        self.ends_at: float | None = None  # when the loop said test runs must end by
        self._paths = language_paths()

    def tool_specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(name=t.name, description=t.description, parameters=t.parameters)
            for t in (read_file.TOOL, replace_tool.TOOL, apply_patch.TOOL)
        ]

    def call_tool(self, call: ToolCall) -> Observation:
        self.calls.append(call)
        args = call.arguments or {}
        if call.name == "read_file":
            return self._read(_path(args["path"]), args.get("start_line", 1), args.get("end_line"))
        if call.name == "replace":
            return self._replace(_path(args["path"]), args["old"], args["new"], args.get("line"))
        if call.name == "apply_patch":
            changed = patched(self.files, args["patch"])
            return changed if isinstance(changed, Observation) else self._write(changed)
        raise AssertionError(f"the memory environment has no tool {call.name}")

    def _read(self, path: str, start: int, end: int | None) -> Observation:
        decision = self._paths.check(path)
        if not decision.allowed:
            return refused(path, decision)
        if path not in self.files:
            return failed(f"no such file: {path!r}. Use list_dir to see the files.")
        lines = self.files[path].splitlines()
        if not lines:
            return Observation(ok=True, text=f"{path}: the file is empty (0 lines).")
        last = min(len(lines), end or start + read_file.WINDOW - 1)
        more = f" (next: start_line={last + 1})" if last < len(lines) else ""
        header = f"{path}: lines {start}-{last} of {len(lines)}{more}"
        return Observation(
            ok=True, text=header + "\n" + numbered(lines, range(start, last + 1)), target=path
        )

    def _replace(self, path: str, old: str, new: str, line: int | None) -> Observation:
        decision = self._paths.check(path, write=True)
        if not decision.allowed:
            return refused(path, decision)
        if path not in self.files:
            return failed(f"no such file: {path!r}. replace changes an existing file.")
        if old == new:
            return failed("old and new are the same: nothing would change.")
        text = self.files[path]
        changed = replaced(text, old, new, line)
        if not isinstance(changed, str):
            return changed
        return self._write({path: changed})

    def _write(self, changes: Mapping[str, str]) -> Observation:
        """The changes made, as apply_patch makes them: all or nothing, Python still parsing
        and compiling to different code, else rolled back."""
        for path, text in changes.items():
            decision = self._paths.check(path, write=True)
            if not decision.allowed:
                return refused(path, decision)
            if path.endswith(".py"):
                try:
                    ast.parse(text)
                except SyntaxError as exc:
                    return failed(
                        "patch rolled back, nothing was changed: it breaks the file's syntax.\n"
                        f"{path}:{exc.lineno}: {exc.msg}"
                    )
        before = {path: self.files[path] for path in changes}
        if all(
            same_code(before[p].encode(), changes[p].encode()) if p.endswith(".py") else
            before[p] == changes[p] for p in changes
        ):  # fmt: skip
            return failed(NO_CODE_CHANGE)
        self.before_edit = before
        self.files.update(changes)
        listed = "\n".join(f"  M {path}" for path in changes)
        return Observation(
            ok=True,
            text=f"patch applied: {len(changes)} file(s) changed\n{listed}",
            changed_files=tuple(changes),
            target=", ".join(changes),
        )

    def undo_last_edit(self) -> bool:
        before, self.before_edit = self.before_edit, {}
        self.files.update(before)
        return bool(before)

    def undo_all_edits(self) -> bool:
        changed, self.files, self.before_edit = self.files != self.original, dict(self.original), {}
        return changed

    def end_by(self, at: float) -> None:
        self.ends_at = at

    def run_tests(self, test_ids: Sequence[str] = ()) -> TestRun:
        self.runs.append(tuple(test_ids))
        return run_suite(self.files, test_ids, suite_s=self.suite_s, by_id_s=self.by_id_s)

    def diff(self) -> str:
        return "".join(
            unified(path, self.original[path], self.files[path])
            for path in sorted(self.files)
            if self.files[path] != self.original.get(path)
        )

    def verify_ahead(self, patch: str) -> None:
        self.ahead.append(patch)

    def verify(self, patch: str) -> TestRun:
        """The tests on a clean copy: the original files with `patch` applied (which must
        apply), or the original code alone where `clean_copy_breaks`."""
        self.verifications += 1
        if self.clean_copy_breaks:
            return run_suite(self.original)
        changes = patched(self.original, patch)
        assert not isinstance(changes, Observation), f"the patch to verify does not apply: {patch}"
        return run_suite({**self.original, **changes})


def _path(path: str) -> str:
    return posixpath.normpath(path)


def unified(path: str, before: str, after: str) -> str:
    """A unified diff of one file, as `git diff` writes it (three lines of context)."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


def replaced(text: str, old: str, new: str, line: int | None) -> str | Observation:
    """`text` with `old` replaced as tools/replace.py replaces it: in the one place it occurs,
    or the one of several that holds `line`; else line by line with spaces and quote style set
    aside, in the one place that fits, indentation kept. Otherwise a failed observation."""
    starts, at = [], text.find(old)
    while at != -1:
        starts.append(at)
        at = text.find(old, at + 1)
    size = old.count("\n") + (0 if old.endswith("\n") else 1)
    if len(starts) > 1:
        first_lines = [text.count("\n", 0, s) + 1 for s in starts]
        held = [
            s
            for s, n in zip(starts, first_lines, strict=True)
            if line is not None and n <= line < n + size
        ]
        if len(held) != 1:
            where = ", ".join(map(str, first_lines))
            return failed(
                f"old appears {len(starts)} times in the file (lines {where}); nothing was "
                "changed. Add to old the line above or below it at the place you mean, so that "
                "it matches there only (or give line, the number of a line of that place)"
            )
        starts = held
    if starts:
        return text[: starts[0]] + new + text[starts[0] + len(old) :]
    lines, wanted = text.splitlines(), [loosened(x) for x in old.splitlines() if x.strip()]
    fits = [
        i
        for i in range(len(lines) - len(wanted) + 1)
        if [loosened(x) for x in lines[i : i + len(wanted)]] == wanted
    ]
    if len(fits) != 1 or not wanted:
        return failed(replace_tool.NOT_FOUND)
    first = next(x for x in old.splitlines() if x.strip())
    shift = _indent(lines[fits[0]]) - _indent(first)
    moved = [
        (" " * shift + x if shift > 0 else x[min(-shift, _indent(x)) :]) for x in new.splitlines()
    ]
    out = lines[: fits[0]] + moved + lines[fits[0] + len(wanted) :]
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def patched(files: Mapping[str, str], patch: str) -> dict[str, str] | Observation:
    """The files a unified diff changes, with their new text; or the failed observation of a
    patch that does not apply (each hunk must fit: at its line, else in one place). Existing
    files only: a patch that creates or deletes one fails the test."""
    hunks: dict[str, list[list[str]]] = {}  # by file: each hunk's lines, its @@ line first
    path = ""
    lines = patch.splitlines()
    for i, raw in enumerate(lines):
        if raw.startswith("--- ") and lines[i + 1 : i + 2] and lines[i + 1].startswith("+++ "):
            continue  # a file's first header line
        if raw.startswith("+++ "):
            name = raw[4:].split("\t")[0].strip()
            assert name != "/dev/null", "the memory environment patches existing files only"
            path = _path(name.removeprefix("b/"))
            hunks[path] = []
        elif raw.startswith("@@") and path:
            hunks[path].append([raw])
        elif path and hunks[path] and raw[:1] in (" ", "-", "+", ""):
            hunks[path][-1].append(raw or " ")
    if not any(hunks.values()):
        return failed("cannot read the patch: no '+++ b/PATH' and '@@' hunks")
    changes: dict[str, str] = {}
    for path, its in hunks.items():
        assert path in files, f"the memory environment patches existing files only: {path}"
        text, why = _hunks_applied(files[path], its)
        if text is None:
            return failed(f"patch not applied, nothing was changed: {path}: {why}")
        changes[path] = text
    return changes


def _hunks_applied(text: str, hunks: list[list[str]]) -> tuple[str | None, str]:
    """`text` with each hunk applied, or None and why one does not fit."""
    lines = text.splitlines()
    for number, hunk in enumerate(hunks, 1):
        old = [x[1:] for x in hunk[1:] if x[:1] in (" ", "-")]
        new = [x[1:] for x in hunk[1:] if x[:1] in (" ", "+")]
        if not old:
            return None, f"hunk {number} has no unchanged context lines"
        said = int(hunk[0].split()[1].lstrip("-").split(",")[0]) - 1
        fits = [i for i in range(len(lines) - len(old) + 1) if lines[i : i + len(old)] == old]
        at = said if said in fits else (fits[0] if len(fits) == 1 else None)
        if at is None:
            return None, f"hunk {number} does not fit the file"
        lines[at : at + len(old)] = new
    return "\n".join(lines) + "\n", ""


def run_suite(
    files: Mapping[str, str],
    test_ids: Sequence[str] = (),
    *,
    suite_s: float = 0.1,
    by_id_s: float = 0.1,
) -> TestRun:
    """The tests as pytest would run them: each `tests/test_*.py` executed against the
    repository's top-level modules, each `test_*` it defines called (or those `test_ids` name,
    as pytest selects them); a module that does not import is a collection error. Outcomes and
    failures in a stamped JUnit summary; the whole suite takes `suite_s`, a run by id `by_id_s`."""
    outcomes: dict[str, str] = {}
    failures: list[TestFailure] = []
    files_asked = {t.partition("::")[0] for t in test_ids}
    for name in sorted(p for p in files if posixpath.basename(p).startswith("test_")):
        if test_ids and name not in files_asked:
            continue
        try:
            found = _module(files, name, {})
        except Exception as exc:  # noqa: BLE001 - the code under test may raise anything
            outcomes[name] = "error"
            failures.append(
                TestFailure(test_id=name, kind="error", message=_said(exc), traceback="")
            )
            continue
        for test, function in list(vars(found).items()):
            if not test.startswith("test_") or not callable(function):
                continue
            test_id = f"{name}::{test}"
            if test_ids and test_id not in test_ids and name not in test_ids:
                continue
            try:
                function()
                outcomes[test_id] = "passed"
            except Exception as exc:  # noqa: BLE001
                outcomes[test_id] = "failed"
                failures.append(
                    TestFailure(test_id=test_id, kind="failure", message=_said(exc), traceback="")
                )
    passed = sum(o == "passed" for o in outcomes.values())
    failed_count = sum(o == "failed" for o in outcomes.values())
    summary = TestSummary(
        passed=passed, failed=failed_count, errors=len(failures) - failed_count, skipped=0,
        failures=tuple(failures), outcomes=outcomes, properties={TOKEN_PROPERTY: "tok"},
    )  # fmt: skip
    result = CommandResult(
        command="pytest", exit_code=1 if failures else 0,
        duration_s=by_id_s if test_ids else suite_s,
        timed_out=False, oom_killed=False, output="", output_bytes=0, truncated=False,
    )  # fmt: skip
    return TestRun(
        command="pytest", result=result, summary=summary, expects_junit=True, token="tok",
        test_ids=tuple(test_ids), test_cmd="pytest",
    )  # fmt: skip


def _module(
    files: Mapping[str, str], path: str, loaded: dict[str, types.ModuleType]
) -> types.ModuleType:
    """`path` executed as a fresh module whose imports of the repository's modules load them
    from `files` (each once); other imports are Python's."""

    def importer(
        name: str, globals_: Any = None, locals_: Any = None, fromlist: Any = (), level: int = 0
    ) -> types.ModuleType:
        if level == 0 and f"{name}.py" in files:
            if name not in loaded:
                _module(files, f"{name}.py", loaded)
            return loaded[name]
        return builtins.__import__(name, globals_, locals_, fromlist, level)

    name = posixpath.splitext(posixpath.basename(path))[0]
    module = types.ModuleType(name)
    module.__dict__["__builtins__"] = {**vars(builtins), "__import__": importer}
    loaded[name] = module
    exec(compile(files[path], path, "exec"), module.__dict__)  # the code under test
    return module


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def make_agent(
    model: ScriptedModel, env: MemoryEnvironment, tmp_path: Path, **budgets: Any
) -> Agent:
    """An Agent over the doubles, its trace in tmp_path/trace.jsonl."""
    trace = Trace(path=tmp_path / "trace.jsonl")
    return Agent(model=model, env=env, budgets=Budgets(**budgets), trace=trace)


def start(agent: Agent, env: MemoryEnvironment) -> LoopResult:
    """The run from the environment's baseline; a run that ends by itself used every reply."""
    result = agent.run("make the tests pass", env.run_tests(), listing="calc.py\ntests/")
    if isinstance(agent.model, ScriptedModel):
        assert not agent.model.script, f"replies left unused: {agent.model.script}"
    return result
