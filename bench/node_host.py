"""JavaScript and TypeScript test runs on the host, for bench/ (the corpus's references, the task
set's baselines): a project's own install command, then its test command, with the outcome of
each test read from its runner's own report.

The test command is written twice in a bench list: `test`, what its maintainers run (`npm
test`), and `report`, the same commands with the runner's report asked for in the place
`{report_flags}` marks (`npx vitest run {report_flags} && npm run test-types`). Both run; the
exit codes must agree, or the run says so.

Test ids are those sandbox/ecosystems/node gives: the test file relative to the repository's
root, `::`, then the names of the suites around the test and its own, joined by ` > `
(`tests/colord.test.ts::Colord > parses hex`); a test file that fails outside any test is its path
alone.

    >>> outcomes, counts = read_report(
    ...     "jest", '{"testResults": [{"name": "/r/t/a.test.ts", "assertionResults": ['
    ...     '{"ancestorTitles": ["A"], "title": "b", "status": "failed"}]}]}', root="/r")
    >>> outcomes
    {'t/a.test.ts::A > b': 'failed'}
"""

from __future__ import annotations

import json
import os
import posixpath
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPORTERS = HERE / "node_reporters"
RUNNERS = ("node-test", "jest", "vitest", "mocha")
COUNTED = ("passed", "failed", "errors", "skipped")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# A CI runner has CI=true: jest and vitest then neither watch nor write new snapshots.
CI_ENV = {"CI": "true", "NO_COLOR": "1", "FORCE_COLOR": "0", "npm_config_fund": "false",
          "npm_config_audit": "false", "npm_config_update_notifier": "false"}  # fmt: skip
# The host's npm, yarn and corepack settings would make a run no CI has.
DROPPED_ENV = ("npm_config_", "NPM_CONFIG_", "YARN_", "COREPACK_", "NODE_OPTIONS", "NODE_PATH",
               "PNPM_")  # fmt: skip
COREPACK = "corepack@0.36.0"  # Node 20's own corepack cannot verify today's pnpm signatures


def report_flags(runner: str, report: Path) -> tuple[str, dict[str, str]]:
    """The flags that make `runner` write its per-test report to `report`, and the environment
    they need."""
    if runner == "node-test":
        flags = (f"--test-reporter=spec --test-reporter-destination=stdout "
                 f"--test-reporter={REPORTERS / 'node-test.mjs'} "
                 f"--test-reporter-destination={report}")  # fmt: skip
        return flags, {}
    if runner == "jest":
        return f"--json --outputFile={report}", {}
    if runner == "vitest":
        return f"--reporter=default --reporter=json --outputFile.json={report}", {}
    if runner == "mocha":
        return f"--reporter {REPORTERS / 'mocha.cjs'}", {"BENCH_MOCHA_REPORT": str(report)}
    raise ValueError(f"unknown runner {runner!r}: one of {', '.join(RUNNERS)}")


def read_report(runner: str, text: str, *, root: str) -> tuple[dict[str, str], dict[str, int]]:
    """Outcome by test id, and counts by outcome (a repeated id counts each time it ran)."""
    outcomes: dict[str, str] = {}
    counts = dict.fromkeys(COUNTED, 0)

    def add(test_id: str, outcome: str) -> None:
        if "::" not in test_id and outcome == "failed":
            outcome = "errors"  # a whole file failed, outside any test
        counts[outcome] += 1
        if outcomes.get(test_id) != "failed":  # the same name twice: one failure is the id's
            outcomes[test_id] = outcome

    if runner in ("node-test", "mocha"):
        for line in text.splitlines():
            if line.strip():
                item = json.loads(line)
                add(item["id"], item["outcome"])
        return outcomes, counts
    data = json.loads(text)
    for result in data.get("testResults", []):
        file = posixpath.relpath(result["name"], root) if result["name"].startswith("/") else (
            result["name"])  # fmt: skip
        tests = result.get("assertionResults") or []
        if not tests and result.get("status") == "failed":
            add(file, "errors")  # the file failed before any test ran (an import, a syntax error)
            continue
        for test in tests:
            names = [*test.get("ancestorTitles", []), test["title"]]
            status = test.get("status")
            outcome = {"passed": "passed", "failed": "failed"}.get(status, "skipped")
            add(f"{file}::{' > '.join(names)}", outcome)
    return outcomes, counts


@dataclass(frozen=True, kw_only=True)
class HostRun:
    """One install and test run: exit codes, outcomes by id, counts, seconds, or the problem."""

    install_s: float | None = None
    test_s: float | None = None
    exit_code: int | None = None  # of `report`, the instrumented command
    plain_exit_code: int | None = None  # of `test`, the command as its maintainers run it
    outcomes: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] | None = None
    problem: str | None = None

    def failing(self) -> list[str]:
        return sorted(t for t, o in self.outcomes.items() if o in ("failed", "errors"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "install_s": self.install_s, "test_s": self.test_s, "exit_code": self.exit_code,
            "plain_exit_code": self.plain_exit_code, "counts": self.counts,
            "failing": self.failing(), "outcomes": self.outcomes, "problem": self.problem,
        }  # fmt: skip


def tools(work: Path) -> Path:
    """A folder holding pnpm and yarn shims of a current corepack (installed on first use)."""
    prefix, links = work / "tools", work / "tools" / "bin"
    corepack = prefix / "node_modules" / ".bin" / "corepack"
    if not corepack.exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix),
                        COREPACK], check=True, capture_output=True)  # fmt: skip
    if not (links / "pnpm").exists():
        links.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(corepack), "enable", "--install-directory", str(links)], check=True)
    return links


def node_env(work: Path, home: Path) -> dict[str, str]:
    """The environment of a CI runner: node and npm from the host, pnpm and yarn by corepack,
    no host npm settings, its own HOME (npm's cache) and corepack folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_ENV)}
    node_bin = str(Path(shutil.which("node") or "/usr/bin/node").parent)
    home.mkdir(parents=True, exist_ok=True)
    return (
        env
        | CI_ENV
        | {
            "HOME": str(home),
            "PATH": f"{tools(work)}:{node_bin}:{SYSTEM_PATH}",
            "COREPACK_HOME": str(home / ".corepack"),
            "COREPACK_ENABLE_DOWNLOAD_PROMPT": "0",
            # Yarn 2+ from the npm registry (@yarnpkg/cli-dist), not repo.yarnpkg.com: the
            # registry is the one host set-up may reach, here as in the sandbox's fence.
            "COREPACK_NPM_REGISTRY": "https://registry.npmjs.org",
            # A project that names no version gets the one this corepack knows (yarn 1.22 for a
            # yarnPath project), not a "latest" looked up and refused for its signature.
            "COREPACK_DEFAULT_TO_LATEST": "0",
        }
    )


def run_shell(
    command: str, *, cwd: Path, env: Mapping[str, str], log: Any, timeout_s: float,
    user: Sequence[str] = (),
) -> int:  # fmt: skip
    """`command` with bash (as `user`: a prefix such as corpus.as_user's), its output appended
    to `log`; the exit code (124: timed out, and everything it started is ended)."""
    log.write(f"\n$ {command}\n")
    log.flush()
    with subprocess.Popen([*user, "bash", "-c", command], cwd=cwd, env=dict(env), stdout=log,
                          stderr=subprocess.STDOUT, start_new_session=True) as proc:  # fmt: skip
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            log.write(f"\n[timed out after {timeout_s:.0f}s]\n")
            return 124


def instrument(
    report_cmd: str, runner: str, report: Path
) -> tuple[str, dict[str, str], list[Path]]:
    """`report_cmd` with each `{report_flags}` replaced by the flags of a report file of its own
    (a test script may run its runner twice: the tests, then the type tests); the environment
    they need, and the report files."""
    pieces = report_cmd.split("{report_flags}")
    command, env, files = pieces[0], {}, []
    for i, piece in enumerate(pieces[1:]):
        path = report.with_name(f"{report.stem}-{i}{report.suffix}")
        flags, extra = report_flags(runner, path)
        if runner == "mocha":  # one file for every mocha run: its lines are appended
            path = Path(extra["BENCH_MOCHA_REPORT"] if not files else files[0])
            extra = {"BENCH_MOCHA_REPORT": str(path)}
        command += flags + piece
        env |= extra
        if path not in files:
            files.append(path)
    return command, env, files


def run_tests(
    tree: Path, *, runner: str, report_cmd: str, env: Mapping[str, str], log: Any,
    timeout_s: float, report: Path, plain_cmd: str | None = None, user: Sequence[str] = (),
) -> HostRun:  # fmt: skip
    """The instrumented test command (and first the plain one, when given) on an installed
    tree, as `user`."""
    plain = None
    if plain_cmd is not None:
        plain = run_shell(plain_cmd, cwd=tree, env=env, log=log, timeout_s=timeout_s, user=user)
    command, extra, files = instrument(report_cmd, runner, report)
    for path in files:
        path.unlink(missing_ok=True)
    started = time.monotonic()
    code = run_shell(command, cwd=tree, env={**env, **extra}, log=log, timeout_s=timeout_s,
                     user=user)  # fmt: skip
    seconds = round(time.monotonic() - started, 1)
    base: dict[str, Any] = {"test_s": seconds, "exit_code": code, "plain_exit_code": plain}
    if code == 124:
        return HostRun(**base, problem=f"timed out after {timeout_s:.0f}s")
    written = [p for p in files if p.is_file()]
    if not written:
        return HostRun(**base, problem=f"no {runner} report (exit {code})")
    outcomes: dict[str, str] = {}
    counts = dict.fromkeys(COUNTED, 0)
    try:
        for path in written:
            more, tally = read_report(runner, path.read_text(encoding="utf-8"), root=str(tree))
            outcomes |= {t: o for t, o in more.items() if outcomes.get(t) != "failed"}
            counts = {k: counts[k] + tally[k] for k in COUNTED}
    except (ValueError, KeyError) as exc:
        return HostRun(**base, problem=f"unreadable {runner} report: {exc}")
    problem = None
    if len(written) < len(files):
        problem = f"{len(files) - len(written)} of the runner's {len(files)} reports missing"
    if plain is not None and (plain == 0) != (code == 0):
        problem = f"`{plain_cmd}` exit {plain}, but the instrumented command's is {code}"
    return HostRun(**base, outcomes=outcomes, counts=counts, problem=problem)
