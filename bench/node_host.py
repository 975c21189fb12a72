"""JavaScript and TypeScript test runs on the host, for bench/ (the corpus's references, the task
set's baselines): a project's own install command, then its test command, with the outcome of
each test read from its runner's own report.

The test command is written twice in a bench list: `test`, what its maintainers run (`npm
test`), and `report`, the same commands with the runner's report asked for in the place
`{report_flags}` marks (`npx vitest run {report_flags} && npm run test-types`). Both run; the
exit codes must agree, or the run says so.

Each runner writes the report the sandbox asks it for (sandbox/ecosystems/node/runners.py:
vitest's JUnit, jest's JSON, mocha's JSON or, before mocha 9.1, its xunit, and for `node --test`
the sandbox's own reporter; ava's TAP on stdout; for uvu and tape the sandbox's reporter,
preloaded, its `{report_flags}` before the command), read by the sandbox's parsers
(sandbox/ecosystems/node/reports.py):
the ids are those a sandbox run gives, `tests/colord.test.ts::Colord > parses hex` (mocha's:
the full title, its titles joined by spaces); a test file that fails outside any test is its
path alone, an error.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sandbox.ecosystems.node.reports import parse_report  # noqa: E402
from sandbox.ecosystems.node.runners import (  # noqa: E402
    NODE_REPORTER,
    TAPE_REPORT_VARIABLE,
    TAPE_REPORTER,
    TOKEN_VARIABLE,
    UVU_REPORT_VARIABLE,
    UVU_REPORTER,
)

NODE_TEST_REPORTER = ROOT / "sandbox" / "ecosystems" / "node" / NODE_REPORTER
UVU_PRELOAD = ROOT / "sandbox" / "ecosystems" / "node" / UVU_REPORTER
TAPE_PRELOAD = ROOT / "sandbox" / "ecosystems" / "node" / TAPE_REPORTER
RUNNERS = ("node-test", "jest", "vitest", "mocha", "ava", "tape", "uvu")
COUNTED = ("passed", "failed", "errors", "skipped")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# A CI runner has CI=true: jest and vitest then neither watch nor write new snapshots.
CI_ENV = {"CI": "true", "NO_COLOR": "1", "FORCE_COLOR": "0", "npm_config_fund": "false",
          "npm_config_audit": "false", "npm_config_update_notifier": "false"}  # fmt: skip
# The host's npm, yarn and corepack settings would make a run no CI has.
DROPPED_ENV = ("npm_config_", "NPM_CONFIG_", "YARN_", "COREPACK_", "NODE_OPTIONS", "NODE_PATH",
               "PNPM_")  # fmt: skip
COREPACK = "corepack@0.36.0"  # Node 20's own corepack cannot verify today's pnpm signatures


def report_flags(runner: str, report: Path, *, tree: Path) -> tuple[str, str]:
    """The flags that make `runner` write its per-test report to `report` (as the sandbox adds
    them), and the report's format (a key of reports.PARSERS)."""
    if runner == "node-test":
        flags = (f"--test-reporter=spec --test-reporter-destination=stdout "
                 f"--test-reporter={NODE_TEST_REPORTER} "
                 f"--test-reporter-destination={report}")  # fmt: skip
        return flags, "node-test-junit"
    if runner == "jest":
        return f"--json --outputFile={report}", "jest-json"
    if runner == "vitest":
        return f"--reporter=default --reporter=junit --outputFile.junit={report}", "vitest-junit"
    if runner == "mocha":
        kind = "xunit" if _mocha_before(tree, (9, 1)) else "json"
        return f"--reporter {kind} --reporter-option output={report}", f"mocha-{kind}"
    if runner == "ava":  # its TAP on stdout is the report
        return f"--tap > {report}", "ava-tap"
    if runner in ("uvu", "tape"):
        # No reporter of its own (uvu), TAP that names no file (tape): the sandbox's, preloaded
        # into the runner CLI's process. Its {report_flags} stands before the command
        # (variables of that command).
        preload, variable = {"uvu": (UVU_PRELOAD, UVU_REPORT_VARIABLE),
                             "tape": (TAPE_PRELOAD, TAPE_REPORT_VARIABLE)}[runner]  # fmt: skip
        flags = (f'NODE_OPTIONS="--require={preload}" {TOKEN_VARIABLE}={secrets.token_hex(16)} '
                 f'{variable}={report} WORKER_TEST_ROOT="$PWD"')  # fmt: skip
        return flags, f"{runner}-junit"
    raise ValueError(f"unknown runner {runner!r}: one of {', '.join(RUNNERS)}")


def _mocha_before(tree: Path, version: tuple[int, int]) -> bool:
    """True when the tree's installed mocha is older than `version` (its JSON reporter writes
    to a file from 9.1 on)."""
    try:
        data = json.loads((tree / "node_modules" / "mocha" / "package.json").read_text())
        major, minor = (int(x) for x in str(data["version"]).split(".")[:2])
    except (OSError, ValueError, KeyError):
        return False
    return (major, minor) < version


def read_report(fmt: str, data: bytes, *, root: str) -> tuple[dict[str, str], dict[str, int]]:
    """Outcome by test id ("passed", "failed", "error", "skipped"), and counts by outcome, as
    the sandbox reads the same report (ValueError when it is not one of `fmt`). A name two
    tests share is failing when either fails, as the sandbox's `failing` list says."""
    summary = parse_report(fmt, data, root=root)
    counts = {"passed": summary.passed, "failed": summary.failed, "errors": summary.errors,
              "skipped": summary.skipped}  # fmt: skip
    outcomes = dict(summary.outcomes)
    for failure in summary.failures:
        outcomes[failure.test_id] = "error" if failure.kind == "error" else "failed"
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
        return sorted(t for t, o in self.outcomes.items() if o in ("failed", "error"))

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
        # The machine's own corepack setting, passed as the sandbox's set-up passes it
        # (sandbox/ecosystems/node/setup_infer.py: PASSED): where a registry serves packages
        # signed with keys this corepack does not know, COREPACK_INTEGRITY_KEYS=0.
        | {k: os.environ[k] for k in ("COREPACK_INTEGRITY_KEYS",) if k in os.environ}
    )


def run_shell(
    command: str, *, cwd: Path, env: Mapping[str, str], log: Any, timeout_s: float,
    user: Sequence[str] = (),
) -> int:  # fmt: skip
    """`command` with bash (as `user`: a prefix such as corpus.as_user's), its output appended
    to `log`; the exit code (124: timed out, and everything it started is ended).

    Each command gets a TMPDIR of its own, removed after it, as a fresh CI runner or sandbox
    has: jest and ts-jest keep their transform cache there, and a cache an earlier run of
    other sources left would skip a type check that a fresh run fails."""
    log.write(f"\n$ {command}\n")
    log.flush()
    tmp = tempfile.mkdtemp(prefix="bench-node-tmp-")
    os.chmod(tmp, 0o1777)  # the command may run as another user
    try:
        with subprocess.Popen([*user, "bash", "-c", command], cwd=cwd,
                              env={**env, "TMPDIR": tmp}, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True) as proc:  # fmt: skip
            try:
                return proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                log.write(f"\n[timed out after {timeout_s:.0f}s]\n")
                return 124
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_installs(
    steps: Sequence[str], *, cwd: Path, env: Mapping[str, str], log: Any, timeout_s: float,
    user: Sequence[str] = (),
) -> tuple[str, int] | None:  # fmt: skip
    """Each install step with run_shell, in order, up to the first that fails: that step and its
    exit code; None when every step passed."""
    for step in steps:
        code = run_shell(step, cwd=cwd, env=env, log=log, timeout_s=timeout_s, user=user)
        if code:
            return step, code
    return None


def instrument(
    report_cmd: str, runner: str, report: Path, *, tree: Path
) -> tuple[str, list[Path], str]:
    """`report_cmd` with each `{report_flags}` replaced by the flags of a report file of its own
    (a test script may run its runner twice: the tests, then the type tests); the report files
    and their format."""
    pieces = report_cmd.split("{report_flags}")
    command, files, fmt = pieces[0], [], ""
    for i, piece in enumerate(pieces[1:]):
        path = report.with_name(f"{report.stem}-{i}{report.suffix}")
        flags, fmt = report_flags(runner, path, tree=tree)
        command += flags + piece
        files.append(path)
    return command, files, fmt


def run_tests(
    tree: Path, *, runner: str, report_cmd: str, env: Mapping[str, str], log: Any,
    timeout_s: float, report: Path, plain_cmd: str | None = None, user: Sequence[str] = (),
) -> HostRun:  # fmt: skip
    """The instrumented test command (and first the plain one, when given) on an installed
    tree, as `user`."""
    plain = None
    if plain_cmd is not None:
        plain = run_shell(plain_cmd, cwd=tree, env=env, log=log, timeout_s=timeout_s, user=user)
    command, files, fmt = instrument(report_cmd, runner, report, tree=tree)
    for path in files:
        path.unlink(missing_ok=True)
    started = time.monotonic()
    code = run_shell(command, cwd=tree, env=env, log=log, timeout_s=timeout_s, user=user)
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
            more, tally = read_report(fmt, path.read_bytes(), root=str(tree))
            outcomes |= {t: o for t, o in more.items() if outcomes.get(t) != "failed"}
            counts = {k: counts[k] + tally[k] for k in COUNTED}
    except ValueError as exc:
        return HostRun(**base, problem=f"unreadable {runner} report: {exc}")
    problem = None
    if len(written) < len(files):
        problem = f"{len(files) - len(written)} of the runner's {len(files)} reports missing"
    if plain is not None and (plain == 0) != (code == 0):
        problem = f"`{plain_cmd}` exit {plain}, but the instrumented command's is {code}"
    return HostRun(**base, outcomes=outcomes, counts=counts, problem=problem)
