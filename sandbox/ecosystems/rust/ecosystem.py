"""Rust (cargo) projects behind the ecosystem seam (sandbox/ecosystems/base.py): recognised by
Cargo.toml; tested by `cargo test --no-fail-fast` (with the CI workflow's features), run so
that libtest itself writes one outcome per test to a log file of each test binary's own in a
folder the tests cannot predict (command.py, report.py); in an image of the Rust the project
asks for (choice.py, image.py). See docs/rust-tests.md."""

from __future__ import annotations

import os
import re
import secrets
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from policies.paths import PathPolicy
from sandbox.container.base import Sandbox
from sandbox.ecosystems.base import FailedRun, Instrumented, Places, Stage
from sandbox.ecosystems.rust.choice import RustChoice, choose_rust, read_manifest, source_for
from sandbox.ecosystems.rust.cireport import deselect_args, has_rust_test, read_rust_ci_report
from sandbox.ecosystems.rust.command import CargoTest, instrumented
from sandbox.ecosystems.rust.dist import DistToolchain, dist_server, server_toolchain
from sandbox.ecosystems.rust.dist_image import ensure_dist_image
from sandbox.ecosystems.rust.errors import WrongRust
from sandbox.ecosystems.rust.image import RustImage, ensure_rust_image
from sandbox.ecosystems.rust.report import RUNNER, RUSTDOC, parse_cargo_report
from sandbox.ecosystems.rust.setup_infer import infer_rust_setup
from sandbox.setup.plan import SetupPlan
from sandbox.source.grounding import Grounding
from sandbox.source.places import LineCounts
from sandbox.testrun.junit import TestSummary
from sandbox.worktree.repo_files import RepoFiles

if TYPE_CHECKING:
    import docker

MARKERS = ("Cargo.toml",)
TEST_COMMAND = "cargo test --no-fail-fast"
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
#: The flags of a CI workflow's `cargo test` line that say what is built: kept. A package
#: `--exclude`d from the workspace too (thiserror's CI leaves out its no_std member).
_CI_FLAGS = re.compile(
    r"(--all-features|--no-default-features|--workspace|--all(?=\s|$)|"
    r"(?:--features|-F)(?:=|\s+)(?:\"[^\"]*\"|'[^']*'|[\w,:/-]+)|"
    r"--exclude(?:=|\s+)[\w*?.-]+)"
)
#: What cargo or rustc says of a crate the project's environment cannot have.
#: What the OS says when a write finds the disk full, as rustc, the linker and cargo print it.
_NO_ROOM = re.compile(r"No space left on device|os error 28")
_MISSING = (
    (re.compile(r"no matching package named `([^`]+)` found"),
     "the crate registry has no crate named {}"),
    (re.compile(r"failed to get `([^`]+)` as a dependency"),
     "the crate {} is not fetched (set-up did not fetch it; tests run offline)"),
    (re.compile(r"can't find crate for `([^`]+)`"),
     "no Cargo.toml declares the crate {}"),
    (re.compile(r"use of unresolved module or unlinked crate `([^`]+)`"),
     "no Cargo.toml declares the crate {} (the tests use it)"),
)  # fmt: skip


@dataclass(kw_only=True)
class RustToolchain:
    """The Rust chosen for a project as the seam's `Toolchain`: its image, built once."""

    choice: RustChoice
    built: RustImage | None = None

    @property
    def image(self) -> str:
        return self.built.name if self.built is not None else self.choice.image

    def ensure(
        self, client: docker.DockerClient, *, progress: Callable[[str], None]
    ) -> float | None:
        source = self.choice.source
        if isinstance(source, DistToolchain):
            self.built = ensure_dist_image(client, source, progress=progress)
        else:
            self.built = ensure_rust_image(client, line=self.choice.line, progress=progress)
        return self.built.built_s

    def describe(self, built_s: float | None = None) -> str:
        built = self.built
        return self.choice.describe(built.rust if built else None, built.built_s if built else None)

    def report_fields(self, *, built_s: float | None = None) -> dict[str, Any]:
        return {}

    def to_dict(self, *, built_s: float | None = None) -> dict[str, Any]:
        built = self.built
        return self.choice.to_dict(
            built=built.rust if built else None, built_s=built.built_s if built else None
        )


def _from_server(
    client: docker.DockerClient,
    version: str,
    *,
    missing: WrongRust,
    name: str | None,
    progress: Callable[[str], None],
) -> RustImage:
    """`version`'s image from the user's rustup dist server; WrongRust naming both sources."""
    server = dist_server(os.environ)
    if server is None:
        raise missing
    toolchain, why = server_toolchain(server, version, pin=True)
    if toolchain is None:
        raise WrongRust(f"{missing}; {why}")
    return ensure_dist_image(client, toolchain, progress=progress, name=name)


def ci_test_flags(files: RepoFiles) -> list[str]:
    """The flags of the first `cargo test` line of the CI workflows that say what is built
    (features, the workspace, the packages it excludes, each `--exclude NAME`); none where a
    line names a matrix variable there."""
    for name in sorted(files.listed(".github/workflows")):
        if not name.endswith((".yml", ".yaml")):
            continue
        for line in (files.read(f".github/workflows/{name}") or "").splitlines():
            at = line.find("cargo test")
            if at < 0:
                continue
            rest = f"{line[at + len('cargo test') :]} ".split(" -- ", 1)[0]  # not the tests' args
            flags = [m.group(1) for m in _CI_FLAGS.finditer(rest) if "${{" not in m.group(1)]
            flags = ["--workspace" if f == "--all" else f for f in flags]
            flags = [_exclude_spaced(f) for f in flags]
            if any(f.startswith("--exclude") for f in flags) and "--workspace" not in flags:
                flags.insert(0, "--workspace")  # cargo takes --exclude with it alone
            return flags
    return []


def _exclude_spaced(flag: str) -> str:
    """`--exclude=NAME` as `--exclude NAME` (one flag of the command's, each once)."""
    if not flag.startswith("--exclude"):
        return flag
    return "--exclude " + re.split(r"[=\s]+", flag, maxsplit=1)[1]


class Rust:
    """The Rust ecosystem (see the module docstring)."""

    name = "rust"
    markers: tuple[str, ...] = MARKERS
    failing_first = False

    def recognises(self, repo: Path) -> bool:
        return RepoFiles(repo).exists("Cargo.toml")

    def runs(self, test_cmd: str) -> bool:
        try:
            words = shlex.split(test_cmd)
        except ValueError:
            return False
        words = [w for w in words if not _ASSIGNMENT.match(w)]
        return words[:2] == ["cargo", "test"]

    def test_command(self, repo: Path) -> str | None:
        """`cargo test --no-fail-fast`, with the CI workflow's features and `--workspace`
        (a root package with members: plain `cargo test` there tests the root alone)."""
        files = RepoFiles(repo)
        root = read_manifest(files, "Cargo.toml")
        if root is None:
            return None
        flags = ci_test_flags(files)
        if "package" in root and isinstance(root.get("workspace"), dict):
            flags = ["--workspace", *(f for f in flags if f != "--workspace")]
        return " ".join([TEST_COMMAND, *dict.fromkeys(flags)])

    def instrument(
        self, test_cmd: str, ids: Sequence[str], *, workspace: Path, stage: Stage, root: str
    ) -> Instrumented | None:
        """The command with each test binary's libtest log in a fresh /tmp folder, packed
        into the report (command.py); offline."""
        parsed = CargoTest.parse(test_cmd)
        if parsed is None:
            return None
        token = secrets.token_hex(8)
        folder = f"/tmp/worker-cargo-{token}"
        report = f"/tmp/worker-report-{token}.tar"
        runner = stage(f"cargo-runner-{token}.sh", RUNNER.encode())
        rustdoc = stage(f"cargo-rustdoc-{token}.sh", RUSTDOC.encode())
        command = instrumented(
            parsed, ids, folder=folder, report=report, runner=runner, rustdoc=rustdoc
        )
        return Instrumented(
            command=command,
            # A panic's backtrace names the places (places.py); RUST_LIB_BACKTRACE=0 keeps
            # std's Backtrace::capture() as CI has it: off (anyhow's test_debug compares an
            # error's Debug text, which holds the backtrace when capture is on).
            env={"CARGO_NET_OFFLINE": "true", "RUST_BACKTRACE": "1", "RUST_LIB_BACKTRACE": "0"},
            report_path=report,
            read_report=lambda data: parse_cargo_report(data, root=root),
            report_kind="libtest logs",
        )

    def infer_setup(self, repo: Path) -> SetupPlan:
        return infer_rust_setup(repo, self.test_command(repo) or TEST_COMMAND)

    def toolchain(self, repo: Path, *, image: str | None, backend: str) -> RustToolchain | None:
        """The Rust the project asks for (choice.py); None when an image is named or the
        backend is the host's own."""
        if image or backend != "docker":
            return None
        return RustToolchain(choice=choose_rust(repo))

    def build_image(
        self,
        client: docker.DockerClient,
        version: str,
        *,
        name: str | None,
        progress: Callable[[str], None],
    ) -> str | None:
        """A Rust image from Debian's packages (image.py), else from the user's rustup dist
        server (dist_image.py) when they name one."""
        match = re.fullmatch(r"(1\.\d+)(\.\d+)?", version)
        if match is None:
            raise ValueError(f"--rust takes a release line (1.96) or a release, not {version!r}")
        try:
            source_for(match.group(1))  # WrongRust (exit 6) for a line no source has
        except WrongRust as exc:
            image = _from_server(client, version, missing=exc, name=name, progress=progress)
        else:
            image = ensure_rust_image(client, line=match.group(1), progress=progress, name=name)
        return (
            None
            if image.built_s is not None
            else f"image {image.name} is up to date (Rust {image.rust})"
        )

    def syntax_error(self, data: bytes, name: str) -> str | None:
        """tree-sitter's Rust grammar."""
        from sandbox.ecosystems.rust.source import parse_rust
        from sandbox.source.syntax import syntax_error_of

        return syntax_error_of(parse_rust(name, data), name=name)

    def ending_statement(self, data: bytes, name: str, line: int) -> int | None:
        """tree-sitter's Rust grammar: a `return`, a `panic!`, a function body's last expression."""
        from sandbox.ecosystems.rust.source import ending_statement

        return ending_statement(name, data, line)

    def same_code(self, before: bytes, after: bytes, name: str) -> bool:
        from sandbox.ecosystems.rust.source import parse_rust
        from sandbox.source.syntax import same_code_of

        return same_code_of(parse_rust(name, before), parse_rust(name, after))

    def weakened_tests(self, before: bytes, after: bytes, name: str) -> str | None:
        """A `#[test]` or `#[cfg(test)]` module removed, ignored or changed (guard.py)."""
        from sandbox.ecosystems.rust.guard import weakened_tests

        return weakened_tests(before, after, name)

    def check_image(
        self, client: docker.DockerClient | None, image: str, *, plan: SetupPlan | None
    ) -> dict[str, Any]:
        return {}  # the toolchain's choice checked the version before the image was made

    def environment_problem(self, run: FailedRun, tree: Path, *, setup_said: str) -> str | None:
        """A crate the project's environment cannot have, as cargo or rustc says it: one the
        registry lacks, one not fetched, one no Cargo.toml declares; or a test build that ran
        out of room (the machine's disk, under cargo's target folder, or /tmp)."""
        texts = [run.result.output, *(text for _, text in run.failure_texts())]
        if _NO_ROOM.search("\n".join(texts)):
            return (
                "the test build ran out of room (no space left on device): cargo's target "
                "folder is the sandbox's own copy on the Docker daemon's disk, and the build's "
                "temporary files are on /tmp, a tmpfs of [limits] tmp_mb (256 MB unless "
                "raised); free some of that disk, or raise tmp_mb (and memory_mb, which holds "
                "it) in worker.toml"
            )
        found: dict[str, str] = {}
        for pattern, said in _MISSING:
            for match in pattern.finditer("\n".join(texts)):
                found.setdefault(match.group(1), said.format(match.group(1)))
        if found:
            problems = list(found.values())
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return f"{problems[0]}{more}; {setup_said}"
        return None

    def grounding(self, run: FailedRun, *, workspace: Path, paths: PathPolicy) -> Grounding:
        from sandbox.ecosystems.rust.grounding import implicated_code

        return implicated_code(run, workspace=workspace, paths=paths)

    def implicated_files(
        self, run: FailedRun, *, workspace: Path, paths: PathPolicy, limit: int
    ) -> list[str]:
        from sandbox.ecosystems.rust.grounding import implicated_files

        return implicated_files(run, workspace=workspace, paths=paths, limit=limit)

    def failure_places(
        self, run: FailedRun, *, workspace: Path, allowed: Callable[[str], bool]
    ) -> Places | None:
        """The lines the failures name: a panic, a backtrace, a compiler error (places.py)."""
        from sandbox.ecosystems.rust.places import read_places

        return read_places(run, workspace=workspace, allowed=allowed)

    def line_counts(self, box: Sandbox, run: FailedRun, *, timeout_s: float) -> LineCounts:
        return LineCounts(why_empty="no traced run for Rust: its failures name the lines")

    def read_ci_report(self, data: bytes, repo: Path) -> TestSummary:
        """cargo nextest's JUnit (cireport.py); ValueError otherwise."""
        return read_rust_ci_report(data, repo)

    def deselect(self, test_cmd: str, ids: Sequence[str]) -> str | None:
        """The command with `--exact --skip NAME` per test; None where the command already
        filters by name or an id is not one libtest can skip exactly."""
        parsed = CargoTest.parse(test_cmd)
        args = deselect_args(ids)
        if parsed is None or args is None or any(not a.startswith("-") for a in parsed.test_args):
            return None
        return shlex.join(
            [*parsed.assignments, "cargo", "test", *parsed.flags, "--", *parsed.test_args, *args]
        )

    def has_test(self, repo: Path, test_id: str) -> bool:
        return has_rust_test(repo, test_id)


RUST = Rust()
