"""Regenerate the reports in this folder with real test runners (see README.md).

    PYTHONPATH=. python3 tests/data/node_reports/make_reports.py SCRATCH \
        [--node 18=/path/to/node18/bin --node 22=... --node 24=...]

Each suite of suites/ is copied to SCRATCH (a folder outside the repository), its runner
installed there with npm at the version below, and its `test` script run through
`NodeTestCommand(...).invocation()`, the command the sandbox runs; the report is copied here
with the scratch folder's path written as /workspace, where the sandbox has the project.
A few reports are made by the runner's own flags, as a CI job would (node's and mocha's JUnit).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sandbox.ecosystems.node.runners import NodeTestCommand
from sandbox.worktree.repo_files import RepoFiles

HERE = Path(__file__).resolve().parent
# (fixture name, suite, devDependencies): the versions the fixtures were made with.
RUNS = [
    ("vitest-1", "vitest", {"vitest": "1.6.1"}),
    ("vitest-3", "vitest", {"vitest": "3.2.7"}),
    ("vitest-4", "vitest", {"vitest": "4.1.12"}),
    ("jest-29", "jest", {"jest": "29.7.0"}),
    ("jest-30", "jest", {"jest": "30.5.2"}),
    ("mocha-10", "mocha", {"mocha": "10.8.2"}),
    ("mocha-11", "mocha", {"mocha": "11.8.0"}),
    ("ava-6", "ava", {"ava": "6.4.1"}),
    ("tape-5", "tape", {"tape": "5.10.2"}),
    ("tap-21", "tap", {"tap": "21.8.0"}),
]
EXTENSION = {"vitest-junit": "xml", "node-test-junit": "xml", "jest-json": "json"}
EXTENSION |= {"mocha-json": "json", "tap": "tap", "ava-tap": "tap", "tape": "tap"}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scratch", type=Path)
    parser.add_argument("--node", action="append", default=[], help="MAJOR=BIN_DIR")
    args = parser.parse_args()
    scratch: Path = args.scratch.resolve()
    if scratch.is_relative_to(HERE.parents[2]):
        parser.error("the scratch folder must be outside the repository")
    for name, suite, deps in RUNS:
        project = prepare(scratch / name, suite, deps)
        run_invocation(project, name, scratch)
    project = prepare(scratch / "mocha-11", "mocha", {"mocha": "11.8.0"})
    own(project, "mocha-11-xunit.xml", "mocha --reporter xunit --reporter-option output=R")
    # mocha dies of a test file that cannot load its imports, before any report: its output.
    broken = project / "test" / "broken.test.js"
    broken.write_text("require('left-pad-not-installed')\n")
    run_invocation(project, "mocha-11-missing", scratch, output=True)
    broken.unlink()
    nodes = dict(n.split("=", 1) for n in args.node)
    for major, bin_dir in sorted(nodes.items()) or [("host", "")]:
        project = prepare(scratch / f"node-test-{major}", "node-test", {})
        label = f"node-test-{major}"
        run_invocation(project, label, scratch, bin_dir=bin_dir)
        if major not in ("18", "host"):
            own(
                project,
                f"node-junit-{major}.xml",
                "node --test --test-reporter=junit --test-reporter-destination=R",
                bin_dir=bin_dir,
            )
    return 0


def prepare(project: Path, suite: str, deps: dict[str, str]) -> Path:
    if project.exists():
        shutil.rmtree(project / "test", ignore_errors=True)
        shutil.rmtree(project / "__tests__", ignore_errors=True)
    shutil.copytree(HERE / "suites" / suite, project, dirs_exist_ok=True)
    if deps:
        manifest = json.loads((project / "package.json").read_text())
        manifest["devDependencies"] = deps
        (project / "package.json").write_text(json.dumps(manifest, indent=2))
        if not (project / "node_modules").is_dir():
            subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=project, check=True)
    return project


def run_invocation(
    project: Path, label: str, scratch: Path, *, bin_dir: str = "", output: bool = False
) -> None:
    inv = NodeTestCommand.of(RepoFiles(project)).invocation()
    stage = scratch / "stage"
    stage.mkdir(exist_ok=True)
    for staged, data in inv.staged.items():
        (stage / staged).write_bytes(data)
    env = {**os.environ, **inv.env, "CI": "1", "WORKER_STAGE": str(stage)}
    if bin_dir:
        env["PATH"] = f"{bin_dir}:{env['PATH']}"
    done = subprocess.run(
        ["sh", "-c", inv.command], cwd=project, env=env, capture_output=True, timeout=600
    )
    print(f"{label}: {inv.runner}, exit {done.returncode}: {inv.command}", file=sys.stderr)
    assert inv.report_path is not None
    if output:  # what the command printed, not its report (there is none)
        text = (done.stdout + done.stderr).replace(str(project).encode(), b"/workspace")
        (HERE / f"{label}.out").write_bytes(text)
        assert not Path(inv.report_path).exists()
        return
    keep(Path(inv.report_path), project, f"{label}.{EXTENSION[inv.report_format]}")
    if label.startswith("node-test"):  # the token is the run's own: say which it was
        (HERE / f"{label}.token").write_text(inv.token or "")


def own(project: Path, name: str, command: str, *, bin_dir: str = "") -> None:
    report = project.parent / f"own-{name}"
    report.unlink(missing_ok=True)
    env = {**os.environ, "CI": "1"}
    env["PATH"] = f"{bin_dir + ':' if bin_dir else ''}{project}/node_modules/.bin:{env['PATH']}"
    shell = f"{command.replace('=R', '=' + str(report))}"
    subprocess.run(["sh", "-c", shell], cwd=project, env=env, capture_output=True, timeout=600)
    keep(report, project, name)


def keep(report: Path, project: Path, name: str) -> None:
    data = report.read_bytes().replace(str(project).encode(), b"/workspace")
    (HERE / name).write_bytes(data)
    report.unlink()


if __name__ == "__main__":
    raise SystemExit(main())
