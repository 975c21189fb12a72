"""What every tool shares: the context it runs in, the observation it returns, and its shape.

A tool is its JSON Schema plus a function. The registry validates arguments against the schema
before `execute` runs and passes every observation through the truncation policy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.paths import Decision, PathPolicy
from policies.truncation import Truncation
from sandbox.container.base import Sandbox
from sandbox.testrun.cache import TestRunCache
from sandbox.testrun.run import TestRun
from sandbox.worktree.workspace import NOISE_DIRS


@dataclass(frozen=True, kw_only=True)
class ToolContext:
    """Everything a tool may touch: the workspace copy, its sandbox, and the policies."""

    workspace: Path  # host path of the copy mounted at /workspace
    box: Sandbox
    paths: PathPolicy
    truncation: Truncation
    test_cmd: str
    test_timeout_s: float | None = None
    # Where the tests run: with a cache, a run on the same tree and command is not repeated.
    tests: TestRunCache | None = None
    # The test ids the baseline run reported, failing ones first: run_tests matches ids to them.
    known_tests: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Observation:
    """What a tool call produced: `text` for the model, `data` and `refusals` for the trace.

    `ok` says the call did what was asked (a test run that ran is ok, failing tests or not).
    """

    ok: bool
    text: str
    refusals: tuple[Decision, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    changed_files: tuple[str, ...] = ()
    tests: TestRun | None = None  # a test run the tool made, for the loop to judge
    target: str = ""  # what the call was about, in a few words (a path, a pattern, test ids)


Execute = Callable[[dict[str, Any], ToolContext], Observation]


@dataclass(frozen=True, kw_only=True)
class Tool:
    """A tool: its name, a short description, a JSON Schema for its arguments, and `execute`."""

    name: str
    description: str
    parameters: dict[str, Any]
    execute: Execute
    target: Callable[[dict[str, Any]], str] = lambda _args: ""  # for progress lines


def refused(path: str, decision: Decision, *, hint: str = "") -> Observation:
    """The observation for a path the policy refuses."""
    text = f"refused: {path!r}: {decision.reason}"
    return Observation(
        ok=False,
        text=f"{text}\n{hint}" if hint else text,
        refusals=(decision,),
        data={"refused": path, "rule": decision.rule},
    )


def argument(key: str) -> Callable[[dict[str, Any]], str]:
    """A `Tool.target` that shows one argument, cut short."""
    return lambda args: str(args.get(key, ""))[:60]


def failed(text: str, **data: Any) -> Observation:
    """An observation for a call that could not do its job, with `text` saying what to do."""
    return Observation(ok=False, text=text, data=data)


def is_noise(name: str) -> bool:
    """Whether a directory entry is noise (caches, virtualenvs, VCS, build output)."""
    return name in NOISE_DIRS or name.endswith((".egg-info", ".pyc", ".pyo")) or name == ".DS_Store"


def looks_binary(data: bytes) -> bool:
    """NUL bytes, or not UTF-8, in the first 8 KiB."""
    head = data[:8192]
    if b"\0" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 4  # a character cut at the 8 KiB edge is fine
    return False
