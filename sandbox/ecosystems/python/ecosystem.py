"""Python's projects behind the ecosystem seam (sandbox/ecosystems/base.py): pytest with a
stamped JUnit report (`python -m unittest` through a runner of ours that writes one), pip set-up
inferred from pyproject.toml and its kin, the Debian release that ships the Python asked for,
a module not installed as the environment's problem."""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policies.paths import PathPolicy
from sandbox.container.base import Sandbox
from sandbox.container.suites import SUITES
from sandbox.ecosystems.base import FailedRun, Instrumented, Places, Stage
from sandbox.ecosystems.python.choice import PythonChoice, python_for
from sandbox.ecosystems.python.missing_modules import missing_modules
from sandbox.ecosystems.python.nox_session import nox_test_command
from sandbox.ecosystems.python.pytest_command import (
    DEFAULT_TEST_CMD,
    PYTEST_FLAGS,
    STAMP_MODULE,
    is_pytest,
    narrowed,
)
from sandbox.ecosystems.python.setup_infer import infer_setup
from sandbox.ecosystems.python.tox_command import ci_test_command, tox_test_command
from sandbox.ecosystems.python.unittest_command import (
    instrument_unittest,
    is_unittest,
    with_deselected,
)
from sandbox.setup.plan import SetupPlan
from sandbox.source.grounding import Grounding
from sandbox.source.places import LineCounts
from sandbox.testrun.junit import TestSummary, parse_junit
from sandbox.worktree.repo_files import RepoFiles

if TYPE_CHECKING:
    import docker

#: Files at the root that make a repository a Python project.
MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py")
_FRAME = re.compile(r"([\w./-]+\.py)\"?, line (\d+)|([\w./-]+\.py):(\d+)")


class Python:
    """The Python ecosystem (see the module docstring)."""

    name = "python"
    #: What `worker sandbox build --python VERSION` takes.
    image_help = "a Python a Debian release here ships: " + ", ".join(s.describe() for s in SUITES)
    markers: tuple[str, ...] = MARKERS
    failing_first = True

    def recognises(self, repo: Path) -> bool:
        return any((repo / m).is_file() for m in MARKERS)

    def recognises_loosely(self, repo: Path) -> bool:
        """No marker, but Python files somewhere: a folder of scripts with their tests."""
        return any(repo.glob("**/*.py"))

    def runs(self, test_cmd: str) -> bool:
        try:
            return is_pytest(test_cmd) or is_unittest(test_cmd)
        except ValueError:  # unbalanced quotes: not a command we can take apart
            return False

    def test_command(self, repo: Path) -> str | None:
        """pytest, as tox.ini's [testenv] runs it when it says more, else as CI's test step
        does (tox_command.py), else as noxfile.py's test session does (nox_session.py)."""
        if self.recognises(repo) or self.recognises_loosely(repo):
            files = RepoFiles(repo)
            return (
                tox_test_command(files)
                or ci_test_command(files)
                or nox_test_command(files)
                or DEFAULT_TEST_CMD
            )
        return None

    def instrument(
        self, test_cmd: str, ids: Sequence[str], *, workspace: Path, stage: Stage, root: str
    ) -> Instrumented:
        if is_unittest(test_cmd):
            return instrument_unittest(test_cmd, ids, stage=stage)
        junit = f"/tmp/worker-junit-{secrets.token_hex(4)}.xml"
        token = secrets.token_hex(16)
        plugin = stage(STAMP_MODULE + ".py", _stamp_plugin())
        # PYTHONHASHSEED: a set or a dict of strings prints in the same order run after run,
        # so the model reads the same failure twice as the same text (sandbox/testrun/steady.py)
        # and a verdict does not turn on a hash seed.
        env = {
            "WORKER_RUN_TOKEN": token,
            "PYTHONPATH": plugin.rsplit("/", 1)[0],
            "PYTHONHASHSEED": "0",
        }
        command = f"{test_cmd} {PYTEST_FLAGS} -p {STAMP_MODULE} --junitxml={junit}"
        if ids:
            command = f"{narrowed(command, ids)} {' '.join(shlex.quote(t) for t in ids)}"
        return Instrumented(
            command=f"rm -f {junit}; {command}",
            env=env,
            report_path=junit,
            token=token,
            read_report=parse_junit,
        )

    def infer_setup(self, repo: Path) -> SetupPlan:
        return infer_setup(repo)

    def toolchain(self, repo: Path, *, image: str | None, backend: str) -> PythonChoice | None:
        return python_for(repo, image=image, backend=backend)

    def build_image(
        self,
        client: docker.DockerClient,
        version: str,
        *,
        name: str | None,
        progress: Callable[[str], None],
    ) -> str | None:
        """The image of the Debian release that ships Python `version` (`--python`: the
        sandbox's own base, sandbox/container/suites.py)."""
        from sandbox.container.image import ensure_image
        from sandbox.container.suites import suite_for

        suite = suite_for(version)
        image = name or suite.image
        state = ensure_image(client, name=image, suite=suite, progress=progress)
        return (
            None if state.built_s is not None else f"image {image} is up to date ({state.short_id})"
        )

    def syntax_error(self, data: bytes, name: str) -> str | None:
        """Python's own parser."""
        import ast

        try:
            ast.parse(data, filename=name)
        except SyntaxError as exc:
            where = f"{name}:{exc.lineno}" + (f":{exc.offset}" if exc.offset else "")
            code = f"\n    {exc.text.rstrip()}" if exc.text else ""
            return f"SyntaxError at {where}: {exc.msg}{code}"
        except (ValueError, RecursionError, MemoryError) as exc:
            return f"{name}: {exc}"
        return None

    def ending_statement(self, data: bytes, name: str, line: int) -> int | None:
        """Python's own parser: a `return` or a `raise`."""
        from sandbox.ecosystems.python.statements import ending_statement

        return ending_statement(data, line)

    def same_code(self, before: bytes, after: bytes, name: str) -> bool:
        """Both compile to the same code objects (same_code.py)."""
        from sandbox.ecosystems.python.same_code import same_code

        return same_code(before, after, name=name)

    def check_image(
        self, client: docker.DockerClient | None, image: str, *, plan: SetupPlan | None
    ) -> dict[str, Any]:
        """The image's Python (remembered by image id), refused in one line when the project's
        `requires-python` excludes it (image_python.py)."""
        from sandbox.ecosystems.python.image_python import check_python, image_python
        from sandbox.home import worker_home

        python = image_python(client, image, cache_dir=worker_home())
        check_python(plan.requires_python if plan else None, python, image=image or "(the host)")
        return {"python": ".".join(map(str, python)) if python else None}

    def environment_problem(self, run: FailedRun, tree: Path, *, setup_said: str) -> str | None:
        if modules := missing_modules(run, tree):
            more = ", ".join(m.module for m in modules[1:4])
            extra = f" (and {len(modules) - 1} more: {more})" if len(modules) > 1 else ""
            return f"{modules[0].describe()}{extra}; {setup_said}"
        return None

    def grounding(self, run: FailedRun, *, workspace: Path, paths: PathPolicy) -> Grounding:
        """The definitions the failing tests reach, by Python's `ast` (grounding.py)."""
        from sandbox.ecosystems.python.grounding import implicated_code

        return implicated_code(run, workspace=workspace, paths=paths)

    def implicated_files(
        self, run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int
    ) -> list[str]:
        from sandbox.ecosystems.python.grounding import implicated_files

        return implicated_files(run, workspace=workspace, paths=paths, limit=limit)

    def failure_places(
        self, run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]
    ) -> Places | None:
        """None: Python's suspects come from a traced run (`line_counts`)."""
        return None

    def line_counts(self, box: Sandbox, run: FailedRun, *, timeout_s: float) -> LineCounts:
        """One traced run of the failing tests' files (lines_run.py)."""
        from sandbox.ecosystems.python.lines_run import count_lines

        failures = run.summary.failures if run.summary is not None else []
        files = [f.test_id.split("::")[0] for f in failures]
        return count_lines(box, test_cmd=run.test_cmd, test_files=files, timeout_s=timeout_s)

    def read_ci_report(self, data: bytes, repo: Path) -> TestSummary:
        return parse_junit(data)

    def deselect(self, test_cmd: str, ids: Sequence[str]) -> str | None:
        """pytest's `--deselect` for each id; for unittest, which has none, the ids our staged
        runner leaves out (each reported skipped)."""
        if is_unittest(test_cmd):
            return with_deselected(test_cmd, ids)
        return test_cmd + "".join(f" --deselect {shlex.quote(t)}" for t in ids)

    def has_test(self, repo: Path, test_id: str) -> bool:
        """The pytest id's file, and each name after the file as a definition in it (a
        subclass's inherited test, a generated one: not found)."""
        parts = test_id.split("::")
        file = (repo / parts[0]).resolve()
        if not file.is_relative_to(repo.resolve()) or not file.is_file():
            return False
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        for name in parts[1:]:
            base = name.split("[", 1)[0]
            if not re.search(rf"^\s*(async\s+def|def|class)\s+{re.escape(base)}\b", text, re.M):
                return False
        return True


def _stamp_plugin() -> bytes:
    return resources.files("sandbox.ecosystems.python").joinpath("junit_stamp.py").read_bytes()


PYTHON = Python()
