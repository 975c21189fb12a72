"""The layer contracts in pyproject.toml hold, and they catch an upward import when one appears."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("worker", "sandbox", "tools", "policies")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["lint-imports", "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(tree)},
        check=False,
    )


def copy_project(dest: Path) -> Path:
    for name in PACKAGES:
        shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_the_contracts_hold_on_the_project(tmp_path):
    proc = lint_imports(copy_project(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BROKEN" not in proc.stdout


def test_a_sandbox_module_importing_worker_breaks_the_layers(tmp_path):
    tree = copy_project(tmp_path)
    (tree / "sandbox" / "upward.py").write_text("from worker.errors import UsageError\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0
    assert "sandbox.upward -> worker.errors" in proc.stdout


def test_the_loop_importing_the_command_line_is_refused(tmp_path):
    tree = copy_project(tmp_path)
    agent = tree / "worker" / "loop" / "agent.py"
    agent.write_text(agent.read_text() + "\nfrom worker.cli import progress  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0 and "Nothing imports the command line BROKEN" in proc.stdout


def test_the_loop_importing_the_search_is_refused(tmp_path):
    # The rule of docs/architecture.md: a line that exists because a small model makes mistakes
    # belongs to worker/search/, which opens a run through worker/loop/opening.py.
    tree = copy_project(tmp_path)
    agent = tree / "worker" / "loop" / "agent.py"
    agent.write_text(agent.read_text() + "\nfrom worker.search import sampling  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0 and "The loop does not import the search" in proc.stdout
    assert "worker.loop.agent -> worker.search.sampling" in proc.stdout


def test_the_run_record_importing_a_reader_of_it_is_refused(tmp_path):
    # worker/record/ is what every reader of a run's folder imports: it imports none of them.
    tree = copy_project(tmp_path)
    header = tree / "worker" / "record" / "header.py"
    header.write_text(header.read_text() + "\nfrom worker.evaluate import outcome  # noqa\n")
    proc = lint_imports(tree)
    assert proc.returncode != 0 and "A run's record is the bottom of worker/" in proc.stdout
    assert "worker.record.header -> worker.evaluate.outcome" in proc.stdout


def test_the_command_line_starts_without_the_model_client_the_loop_or_rich():
    # `worker fix` loads the openai SDK in a process of its own and the loop and the tools on a
    # thread while the sandbox starts (worker/run/fix.py): a module that imports them at the top
    # would put them back on the path to the first container. rich is for terminals only.
    code = (
        "import sys, io; from worker.cli.main import build_parser; build_parser();"
        "import worker.cli.fix, worker.run.fix;"
        "from worker.cli.progress import ProgressPrinter;"
        "out = io.StringIO(); ProgressPrinter(stream=out).say('[b]x[/b] :smile:');"
        "late = ('openai', 'rich', 'worker.loop.agent', 'worker.search.sampling',"
        " 'tools.registry');"
        "print(sorted(m for m in late if m in sys.modules), repr(out.getvalue()))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert proc.stdout.strip() == "[] '[b]x[/b] :smile:\\n'"


def test_the_model_client_starts_before_the_heavy_imports():
    # `worker fix` starts the model client's process first thing in main (worker/cli/main.py),
    # so that the openai SDK loads on the other core while this one imports the rest. What
    # worker.cli.main imports at its top comes before that start: the docker SDK, jsonschema
    # and the set-up there (through an error class) put 0.25 s in front of it.
    code = (
        "import sys; import worker.cli.main;"
        "heavy = ('docker', 'jsonschema', 'requests', 'sandbox.setup.cache', 'policies.config');"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert proc.stdout.strip() == "[]"
