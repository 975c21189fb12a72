"""Real JavaScript test runners' reports, and the projects they ran, for the in-process tests of
the search's aids on JavaScript and TypeScript (tests/test_js_suspects.py,
tests/test_js_grounding.py).

tests/js_stacks/ holds small projects (vitest with TypeScript, jest with CommonJS, ts-jest,
mocha with ES modules, `node --test` with ES modules and with CommonJS) and what their runner
wrote when they ran with their bugs: vitest 4.1.12, jest 30.5.2 (jest-junit 17.0.0), ts-jest
29.4.15, mocha 12.0.3 and Node 20.20.2's `node --test`, each run on the host with the
project's folder replaced by /workspace (the sandbox's mount) and the runners' folder by
/workspace/node_modules; nothing else of the text is changed (vitest's colours included).
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from sandbox.container.results import CommandResult
from sandbox.testrun.junit import TestFailure, TestSummary
from sandbox.testrun.run import TestRun

STACKS = Path(__file__).resolve().parent / "js_stacks"
JS = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts")


def project(name: str, root: Path) -> Path:
    """A copy of the project tests/js_stacks/`name` at root/workspace."""
    return Path(shutil.copytree(STACKS / name, root / "workspace"))


def report(name: str) -> str:
    """A report's text, as the runner wrote it."""
    return (STACKS / name).read_text(encoding="utf-8")


def xml_failures(name: str) -> list[TestFailure]:
    """The failing test cases of a JUnit-like report (vitest's, jest-junit's, mocha's xunit,
    node's junit), each with the id `file::title` where the report names the file."""
    failures = []
    for case in ET.parse(STACKS / name).getroot().iter("testcase"):
        failed = case.find("failure")
        failed = failed if failed is not None else case.find("error")
        if failed is None:
            continue
        file = case.get("file") or case.get("classname") or ""
        file = file.removeprefix("/workspace/") if file.endswith(JS) else ""
        title = (case.get("name") or "").strip()
        failures.append(
            TestFailure(
                test_id=f"{file}::{title}" if file else title,
                kind="failure",
                message=failed.get("message") or "",
                traceback=failed.text or "",
            )
        )
    return failures


def text_failures(name: str, head: str) -> list[TestFailure]:
    """A console report cut into one failure per block: each block starts at a line matching
    `head` (its test's title in group 1) and ends where the next begins."""
    text = report(name)
    starts = list(re.finditer(head, text, re.M))
    ends = [m.start() for m in starts[1:]] + [len(text)]
    return [
        TestFailure(
            test_id=match[1].strip(),
            kind="failure",
            message="",
            traceback=text[match.start() : end],
        )  # fmt: skip
        for match, end in zip(starts, ends, strict=True)
    ]


def run_of(failures: Sequence[TestFailure], *, passed: int = 0, output: str = "") -> TestRun:
    """A baseline whose report names `failures` (and `passed` passing tests)."""
    summary = TestSummary(
        passed=passed, failed=len(failures), errors=0, skipped=0, failures=tuple(failures),
        outcomes={f.test_id: "failed" for f in failures},
    )  # fmt: skip
    result = CommandResult(
        command="npm test", exit_code=1, duration_s=0.5, timed_out=False, oom_killed=False,
        output=output, output_bytes=len(output), truncated=False,
    )  # fmt: skip
    return TestRun(command="npm test", result=result, summary=summary, test_cmd="npm test")
