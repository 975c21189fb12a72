"""The eval's own judgement of a patch, independent of the run that made it: the patch on a
clean copy of the task's repository, the tests in a fresh sandbox, and the SWE-bench rule.

Resolved means: the patch applies, touches no test file (nor test or CI configuration), reaches
not into the test runner, and then every `fail_to_pass` test passes and every `pass_to_pass` test
still passes (by id, in this run's own JUnit report); with neither list given, the whole suite
passes.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.config import load_config
from policies.secrets import run_secrets
from sandbox.ecosystems import detect_test_command, ecosystem_for, language_paths
from sandbox.errors import SandboxError
from sandbox.prepare import prepare
from sandbox.session import workspace_owner
from sandbox.setup.choice import choose_setup
from sandbox.testrun.run import TestRun
from sandbox.testrun.verdict import TOKEN_PROPERTY, tampering
from sandbox.testrun.verify import verify_patch
from sandbox.worktree.diff import HEADERS, file_paths
from sandbox.worktree.workspace import remove_dir, snapshot
from worker.evaluate.tasks import EvalTask
from worker.search.settings import config_fragment

MAX_REASONS = 8
_RUST_DOC = re.compile(r"(?:^| )\(line \d+\)$")  # a crate's own docs: `src/lib.rs::(line 37)`


@dataclass(frozen=True, kw_only=True)
class Recheck:
    """The independent verdict on one patch, with what it rests on."""

    resolved: bool
    reasons: tuple[str, ...] = ()
    headline: str = ""
    outcomes: dict[str, str] = field(default_factory=dict)  # of the named tests only

    def to_dict(self) -> dict[str, Any]:
        return {
            "resolved": self.resolved,
            "reasons": list(self.reasons),
            "headline": self.headline,
            "outcomes": self.outcomes,
        }


def touched_tests(patch: str, task: EvalTask) -> list[str]:
    """Files of the patch that are tests or test configuration: a patch touching one is never
    resolved, whatever the repository's own configuration allows its runs to edit."""
    policy = language_paths()
    ids = (*task.fail_to_pass, *task.pass_to_pass)
    named = {t.split("::", 1)[0] for t in ids if not is_doc_test(t)}
    paths = sorted(file_paths(patch, kinds=HEADERS))  # old and new sides, renames, copies
    return [p for p in paths if p in named or not policy.is_writable(p)]


def is_doc_test(test_id: str) -> bool:
    """An example in a source file's documentation, run as a test: its file is the code under
    test, not a test file. Rust's doc-tests (`src/lib.rs::Type::f (line 42)`) and pytest's
    doctests (`pkg/mod.py::pkg.mod.f`: the name after `::` starts with the module's own).

    >>> [is_doc_test(t) for t in ("src/lib.rs::f (line 3)", "src/lib.rs::(line 37)",
    ...     "tz/dicttoolz.py::tz.dicttoolz.merge", "src/pkg/m.py::pkg.m", "tests/test_m.py::test_f",
    ...     "test_parse.py::test_parse")]
    [True, True, True, True, False, False]
    """
    path, sep, rest = test_id.partition("::")
    if not sep:
        return False
    if path.endswith(".rs") and _RUST_DOC.search(rest):
        return True
    if not path.endswith(".py"):
        return False
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    # A module's own docstring is the module's dotted name alone; a test named as its file
    # (`test_parse.py::test_parse`) is not one: the name must have a dot.
    prefixes = [".".join(parts[k:]) for k in range(len(parts))]
    return any(rest.startswith(p + ".") or (rest == p and "." in p) for p in prefixes)


def recheck(task: EvalTask, repo: Path, patch: str, *, work_dir: Path) -> Recheck:
    """Judge `patch` for `task` on a clean copy of `repo` in a fresh sandbox (logs in work_dir)."""
    if not patch.strip():
        return Recheck(resolved=False, reasons=("no patch",))
    reasons = [f"the patch touches a test file: {p}" for p in touched_tests(patch, task)]
    reasons += tampering(patch)
    if reasons:
        return Recheck(resolved=False, reasons=tuple(reasons[:MAX_REASONS]))
    config = load_config(
        repo,
        overrides={"test_cmd": task.test_cmd, "setup": task.setup},
        search=config_fragment(),  # a task's worker.toml may set them: they are valid keys
        paths=language_paths(),
    )
    ecosystem = ecosystem_for(repo, config.test_cmd)  # as the run chose it, and below
    prepared = prepare(
        backend="docker",
        repo=repo,
        image=config.image,
        toolchain=ecosystem.toolchain(repo, image=config.image, backend="docker")
        if ecosystem
        else None,
        setup=choose_setup(repo, config, ecosystem).spec,
        limits=config.limits,
        progress=lambda _line: None,
        isolation=config.isolation,
        placement=config.placement,
        secrets=run_secrets(config.setup_env, os.environ),  # masked in its command logs
    )
    copy = Path(tempfile.mkdtemp(prefix="worker-eval-copy-"))
    try:
        workspace = snapshot(
            repo, copy, owner_uid=workspace_owner("docker"), overlay=prepared.tree_overlay
        )
        test_cmd = config.test_cmd or detect_test_command(workspace.path, shown=repo)
        try:
            run = verify_patch(
                # Tests locked, fixtures watched, as in the run itself (sandbox/fixture_guard).
                spec=prepared.spec(limits=config.limits, protect=language_paths().protection),
                workspace=workspace,
                patch=patch,
                test_cmd=test_cmd,
                work_dir=work_dir,
            )
        except SandboxError as exc:
            return Recheck(resolved=False, reasons=(str(exc).splitlines()[0],))
    finally:
        remove_dir(copy)
    return judge_task(task, run)


def judge_task(task: EvalTask, run: TestRun) -> Recheck:
    """The SWE-bench rule on one test run (the whole suite when the task names no tests)."""
    if not task.fail_to_pass and not task.pass_to_pass:
        verdict = run.verdict
        return Recheck(resolved=verdict.passed, reasons=verdict.reasons, headline=run.headline())
    summary = run.summary
    if summary is None:
        return Recheck(
            resolved=False, reasons=("the tests wrote no JUnit report",), headline=run.headline()
        )
    reasons: list[str] = []
    if run.token is not None and summary.properties.get(TOKEN_PROPERTY) != run.token:
        reasons.append("the JUnit report was not written by this run's pytest")
    if run.result.fixtures_put_back:
        changed = ", ".join(run.result.fixtures_put_back[:3])
        reasons.append(f"the run changed test fixtures (put back): {changed}")
    wanted = (*task.fail_to_pass, *task.pass_to_pass)
    named = {t: summary.outcomes.get(t, "missing") for t in wanted}
    for test_id in task.fail_to_pass:
        if named[test_id] != "passed":
            reasons.append(f"fail_to_pass {test_id} is {named[test_id]}")
    for test_id in task.pass_to_pass:
        if named[test_id] != "passed":
            reasons.append(f"pass_to_pass {test_id} is {named[test_id]}")
    return Recheck(
        resolved=not reasons,
        reasons=tuple(reasons[:MAX_REASONS]),
        headline=run.headline(),
        outcomes=named,
    )
