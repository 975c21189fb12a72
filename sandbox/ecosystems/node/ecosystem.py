"""Node's projects (JavaScript and TypeScript) behind the ecosystem seam
(sandbox/ecosystems/base.py): recognised by package.json; tested by its `test` script, run so
that its runner writes one outcome per test; set up from its lockfile the way its maintainers
install; in an image of the Node major version the project asks for."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policies.paths import PathPolicy
from sandbox.container.base import Sandbox
from sandbox.ecosystems.base import FailedRun, Instrumented, NoTestCommand, Places, Stage
from sandbox.ecosystems.node import reports
from sandbox.ecosystems.node.choice import NodeChoice, choose_node
from sandbox.ecosystems.node.image import NodeImage, ensure_node_image
from sandbox.ecosystems.node.missing import missing_packages
from sandbox.ecosystems.node.runners import (
    NodeTestCommand,
    installed_versions,
    node_invocation,
    package_scripts,
)
from sandbox.ecosystems.node.setup_infer import infer_node_setup
from sandbox.setup.plan import SetupPlan
from sandbox.source.grounding import Grounding
from sandbox.source.places import LineCounts
from sandbox.testrun.junit import TestSummary
from sandbox.worktree.repo_files import RepoFiles

if TYPE_CHECKING:
    import docker


MARKERS = ("package.json",)
#: The first word of a test command that is Node's (after any `VAR=value` words).
RUNNERS = frozenset(
    {"npm", "npx", "yarn", "pnpm", "node", "vitest", "jest", "mocha", "ava", "tap", "tape", "uvu"}
)
#: The commands that run package.json's `test` script.
_RUNS_TEST_SCRIPT = re.compile(r"(npm|yarn|pnpm)(\s+run)?\s+test|npm\s+t")
#: A report format's name in the user's words, after its runner's ("vitest JUnit").
_FORMAT_NAMES = {
    "vitest-junit": "vitest JUnit", "node-junit": "node --test JUnit",
    "node-test-junit": "node --test JUnit", "jest-json": "jest JSON", "mocha-json": "mocha JSON",
    "mocha-xunit": "mocha xunit", "tap": "TAP", "ava-tap": "ava TAP", "tape": "tape TAP",
    "tape-junit": "tape JUnit", "uvu-junit": "uvu JUnit",
}  # fmt: skip
#: npm's own placeholder for a project with no tests.
NPM_PLACEHOLDER = re.compile(r"echo\s+[\"']?Error: no test specified")


def package_json(repo: Path) -> dict[str, Any] | None:
    """package.json read as hostile input: None when absent, refused or not a JSON object."""
    files = RepoFiles(repo)
    text = files.read("package.json")
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def test_script(repo: Path) -> str | None:
    """The `test` script of package.json; None when there is none (or npm's placeholder)."""
    data = package_json(repo) or {}
    scripts = data.get("scripts")
    script = scripts.get("test") if isinstance(scripts, dict) else None
    if not isinstance(script, str) or not script.strip() or NPM_PLACEHOLDER.search(script):
        return None
    return script


@dataclass(kw_only=True)
class NodeToolchain:
    """The Node chosen for a project as the seam's `Toolchain`: its image, built once."""

    choice: NodeChoice
    built: NodeImage | None = None

    @property
    def image(self) -> str:
        return self.built.name if self.built is not None else self.choice.image

    def ensure(
        self, client: docker.DockerClient, *, progress: Callable[[str], None]
    ) -> float | None:
        self.built = ensure_node_image(
            client,
            version=self.choice.image_version,
            engines=self.choice.engines,
            progress=progress,
        )
        return self.built.built_s

    def describe(self, built_s: float | None = None) -> str:
        return self.choice.describe(self.built)

    def report_fields(self, *, built_s: float | None = None) -> dict[str, Any]:
        return {}

    def to_dict(self, *, built_s: float | None = None) -> dict[str, Any]:
        return self.choice.to_dict(image=self.built)


class Node:
    """The Node ecosystem (see the module docstring)."""

    name = "node"
    markers: tuple[str, ...] = MARKERS
    failing_first = False

    def recognises(self, repo: Path) -> bool:
        return RepoFiles(repo).exists("package.json")

    def runs(self, test_cmd: str) -> bool:
        try:
            words = shlex.split(test_cmd)
        except ValueError:
            return False
        words = [w for w in words if not re.match(r"[A-Za-z_]\w*=", w)]
        return bool(words) and Path(words[0]).name in RUNNERS

    def test_command(self, repo: Path) -> str | None:
        if not self.recognises(repo):
            return None
        if test_script(repo) is None:
            raise NoTestCommand('package.json has no "test" script')
        return "npm test"

    def instrument(
        self, test_cmd: str, ids: Sequence[str], *, workspace: Path, stage: Stage, root: str
    ) -> Instrumented:
        """`npm test` (and yarn's, pnpm's) is package.json's `test` script; any other command
        is taken as a script itself. Either way its runner writes its own report of one
        outcome per test (sandbox/ecosystems/node/runners.py), read with ids relative to
        `root`, where the sandbox's commands see the working copy."""
        files = RepoFiles(workspace)
        assigned, rest = _assignments(test_cmd)
        if _RUNS_TEST_SCRIPT.fullmatch(rest):
            # `TZ=UTC npm test` (CI's environment, sandbox/worktree/ci_test_env.py): the script
            # runs with the variables in its environment.
            how = NodeTestCommand.of(files).invocation(ids)
            how = replace(how, env={**assigned, **how.env})
        else:
            how = node_invocation(
                test_cmd,
                report_path=f"/tmp/worker-report-{secrets.token_hex(8)}",
                test_ids=ids,
                scripts=package_scripts(files),
                versions=installed_versions(files),
            )
        env = dict(how.env)
        for name, data in how.staged.items():
            env["WORKER_STAGE"] = stage(name, data).rsplit("/", 1)[0]
        return Instrumented(
            command=how.command,
            env=env,
            report_path=how.report_path,
            token=how.token,
            read_report=(lambda data: how.parse(data, root=root)) if how.report_path else None,
            report_kind=_FORMAT_NAMES.get(how.report_format, "runner's"),
        )

    def infer_setup(self, repo: Path) -> SetupPlan:
        return infer_node_setup(repo, os.environ)

    def toolchain(self, repo: Path, *, image: str | None, backend: str) -> NodeToolchain | None:
        """The Node the project asks for (sandbox/ecosystems/node/choice.py); None when an
        image is named or the backend is the host's own."""
        if image or backend != "docker":
            return None
        return NodeToolchain(choice=choose_node(repo))

    def build_image(
        self,
        client: docker.DockerClient,
        version: str,
        *,
        name: str | None,
        progress: Callable[[str], None],
    ) -> str | None:
        """A Node image from the npm registry's tarballs (image.py)."""
        if not re.fullmatch(r"\d+(\.\d+\.\d+)?", version):
            raise ValueError(f"--node takes a major (22) or a release (22.12.0), not {version!r}")
        image = ensure_node_image(client, version=version, progress=progress, name=name)
        if image.built_s is not None:
            return None
        return f"image {image.name} is up to date (Node {image.node}, npm {image.npm})"

    def syntax_error(self, data: bytes, name: str) -> str | None:
        """tree-sitter's JavaScript, TypeScript or TSX grammar, as the file's suffix says."""
        from sandbox.ecosystems.node.source import parse_bytes
        from sandbox.source.syntax import syntax_error_of

        return syntax_error_of(parse_bytes(name, data), name=name)

    def ending_statement(self, data: bytes, name: str, line: int) -> int | None:
        """tree-sitter's JavaScript, TypeScript or TSX grammar: a `return` or a `throw`."""
        from sandbox.ecosystems.node.source import ending_statement

        return ending_statement(name, data, line)

    def same_code(self, before: bytes, after: bytes, name: str) -> bool:
        from sandbox.ecosystems.node.source import parse_bytes
        from sandbox.source.syntax import same_code_of

        return same_code_of(parse_bytes(name, before), parse_bytes(name, after))

    def check_image(
        self, client: docker.DockerClient | None, image: str, *, plan: SetupPlan | None
    ) -> dict[str, Any]:
        return {}  # the toolchain's choice checked the version before the image was made

    def environment_problem(self, run: FailedRun, tree: Path, *, setup_said: str) -> str | None:
        if packages := missing_packages(run, tree):
            more = ", ".join(p.package for p in packages[1:4])
            extra = f" (and {len(packages) - 1} more: {more})" if len(packages) > 1 else ""
            said = "" if packages[0].builtin else f"; {setup_said}"
            return f"{packages[0].describe()}{extra}{said}"
        return None

    def grounding(self, run: FailedRun, *, workspace: Path, paths: PathPolicy) -> Grounding:
        """The definitions the failing tests reach, by tree-sitter (grounding.py)."""
        from sandbox.ecosystems.node.grounding import implicated_code

        return implicated_code(run, workspace=workspace, paths=paths)

    def implicated_files(
        self, run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int
    ) -> list[str]:
        from sandbox.ecosystems.node.grounding import implicated_files

        return implicated_files(run, workspace=workspace, paths=paths, limit=limit)

    def failure_places(
        self, run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]
    ) -> Places | None:
        """The lines the failing tests' stacks pass through (places.py)."""
        from sandbox.ecosystems.node.places import read_places

        return read_places(run, workspace=workspace, allowed=allowed)

    def line_counts(self, box: Sandbox, run: FailedRun, *, timeout_s: float) -> LineCounts:
        return LineCounts(why_empty="no traced run for JavaScript: its stacks name the lines")

    def read_ci_report(self, data: bytes, repo: Path) -> TestSummary:
        """vitest's, mocha's xunit and Node's own JUnit, told apart by their marks; test files
        named by CI's absolute paths are taken back to the repository's own."""
        head = data[:4096]
        kind = (
            "vitest-junit"
            if b'name="vitest tests"' in head
            else "mocha-xunit"
            if b'name="Mocha Tests"' in head
            else "node-junit"
        )
        return ci_ids(reports.parse_report(kind, data, root=""), repo)

    def deselect(self, test_cmd: str, ids: Sequence[str]) -> str | None:
        return None  # the runners behind `npm test` take no common flag for it

    def has_test(self, repo: Path, test_id: str) -> bool:
        """The id's test file is in the repository (an id with no file, `::title`, as Node's
        own JUnit writes them, is found by its title in the runs)."""
        return test_id.startswith("::") or RepoFiles(repo).exists(test_id.partition("::")[0])


def ci_ids(summary: TestSummary, repo: Path) -> TestSummary:
    """`summary` with each id's file as a path of `repo`: the shortest tail of CI's path (its
    checkout's `/home/runner/work/x/x/test/a.test.js`) that is a file of the repository."""
    files = RepoFiles(repo)
    known: dict[str, str] = {}

    def local(test_id: str) -> str:
        path, sep, rest = test_id.partition("::")
        if not path or path in known:
            return f"{known.get(path, path)}{sep}{rest}"
        parts = path.strip("/").split("/")
        tails = ("/".join(parts[i:]) for i in range(len(parts) - 1, -1, -1))
        known[path] = next((t for t in tails if files.exists(t)), path)
        return f"{known[path]}{sep}{rest}"

    return replace(
        summary,
        outcomes={local(k): v for k, v in summary.outcomes.items()},
        failures=tuple(replace(f, test_id=local(f.test_id)) for f in summary.failures),
    )


NODE = Node()


def _assignments(test_cmd: str) -> tuple[dict[str, str], str]:
    """The `NAME=value` words before a command, and the rest of it as written (the command
    as it is when it does not split as shell words).

    >>> _assignments("TZ=UTC A='b c' npm test")
    ({'TZ': 'UTC', 'A': 'b c'}, 'npm test')
    """
    try:
        words = shlex.split(test_cmd)
    except ValueError:
        return {}, test_cmd.strip()
    assigned: dict[str, str] = {}
    while words and re.match(r"[A-Za-z_]\w*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        assigned[name] = value
    return assigned, shlex.join(words) if assigned else test_cmd.strip()
