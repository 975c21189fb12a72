"""`worker sandbox build | run-tests | prune`: the sandbox on its own, for local debugging."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from policies.config import load_config
from sandbox.container.client import connect
from sandbox.container.image import ensure_image
from sandbox.container.prune import prune as prune_containers
from sandbox.container.suites import DEFAULT_SUITE
from sandbox.ecosystems import ECOSYSTEMS, detect_test_command, ecosystem_for, language_paths
from sandbox.prepare import prepare, run_pending_setup
from sandbox.session import open_session
from sandbox.setup.choice import before_setup, choose_setup
from sandbox.testrun.missing_programs import missing_programs
from sandbox.testrun.run import run_tests as run_test_cmd
from sandbox.worktree.workspace import make_run_dir, remove_dir
from worker.cli.setup_flags import add_setup_arguments, setup_overrides
from worker.errors import UsageError
from worker.search.settings import config_fragment


def _progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


def build(args: argparse.Namespace) -> int:
    """Build (or confirm) the sandbox image: the default, one for a language's toolchain
    (`--python 3.13`, `--node 22`, `--go 1.24`: the image a run chooses for a project that asks
    for it), or a named one on a named base."""
    asked = [(k, getattr(args, k.image_flag[0])) for k in ECOSYSTEMS if k.image_flag]
    asked = [(k, version) for k, version in asked if version]
    if len(asked) > 1:
        raise UsageError("build one toolchain's image at a time: " + ", ".join(
            f"--{k.image_flag[0]}" for k, _ in asked if k.image_flag
        ))  # fmt: skip
    client = connect(timeout_s=900)
    if asked:
        known, version = asked[0]
        if args.base:
            raise UsageError(f"--{known.image_flag and known.image_flag[0]} builds on the default "
                             "image: drop --base")  # fmt: skip
        try:
            said = known.load().build_image(client, version, name=args.image, progress=_progress)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        if said:
            _progress(said)
        return 0
    name = args.image or DEFAULT_SUITE.image
    state = ensure_image(client, name=name, base=args.base, suite=DEFAULT_SUITE, progress=_progress)
    if state.built_s is None:
        _progress(f"image {name} is up to date ({state.short_id})")
    return 0


def prune(args: argparse.Namespace) -> int:
    """Remove leftover sandbox containers."""
    removed = prune_containers(connect(), everything=args.all, pid=args.pid)
    print(f"removed {len(removed)} container(s)" + (": " + ", ".join(removed) if removed else ""))
    return 0


def add_sandbox_arguments(sandbox: argparse.ArgumentParser) -> None:
    """The sub-commands of `worker sandbox` and their flags."""
    from worker.cli.fix_flags import add_backend_argument

    sbox = sandbox.add_subparsers(dest="sandbox_command", required=True, parser_class=type(sandbox))
    build = sbox.add_parser("build", help="build the sandbox image (offline if need be)")
    build.add_argument("--image", default=None, help="image name (default worker-sandbox:latest)")
    build.add_argument("--base", default=None, help="base image to build on")
    for known in ECOSYSTEMS:
        if known.image_flag:
            flag, what = known.image_flag
            build.add_argument(
                f"--{flag}", default=None,
                help=f"the image a run picks for a project on this {flag}: {what}",
            )  # fmt: skip
    run = sbox.add_parser("run-tests", help="run a repository's tests in the sandbox")
    run.add_argument("--repo", type=Path, required=True)
    run.add_argument("--test-cmd", default=None)
    add_setup_arguments(run)
    run.add_argument("--image", default=None)
    run.add_argument("--timeout", type=float, default=None, help="seconds for the test command")
    run.add_argument("--policy", default=None, help="preset: default, strict or ci")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument(
        "--out", type=Path, default=None, help="keep the full logs here (default: not kept)"
    )
    add_backend_argument(run)
    prune = sbox.add_parser("prune", help="remove containers left by a crashed worker")
    prune.add_argument("--all", action="store_true", help="also those of running workers")
    prune.add_argument(
        "--pid",
        type=int,
        default=None,
        help="only the containers of the worker with this process id, running or not",
    )


def run_tests(args: argparse.Namespace) -> int:
    """Run the repository's tests in a fresh sandbox; exit 0 when they pass, 1 when not."""
    repo = args.repo.resolve()
    if not repo.is_dir():
        raise UsageError(f"repository not found: {args.repo}")
    config = load_config(
        repo, preset=args.policy, overrides=setup_overrides(args), search=config_fragment(),
        paths=language_paths(),
    )  # fmt: skip
    ecosystem = ecosystem_for(repo, args.test_cmd or config.test_cmd)
    choice = choose_setup(repo, config, ecosystem)
    image = args.image or config.image

    prepared = prepare(
        backend=args.backend,
        isolation=config.isolation,
        placement=config.placement,
        repo=repo,
        image=image,
        toolchain=ecosystem.toolchain(repo, image=image, backend=args.backend)
        if ecosystem
        else None,
        setup=choice.spec,
        before_setup=lambda client, image: before_setup(choice, client, image, say=_progress),
        limits=config.limits,
        progress=_progress,
    )
    # The logs are kept only where the user asked; otherwise they go with the scratch folder.
    keep = args.out is not None
    run_dir = args.out.expanduser().resolve() if keep else make_run_dir()
    if keep and prepared.setup is not None and prepared.setup.log is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(prepared.setup.log, run_dir / "setup.log")
    try:
        with open_session(
            repo,
            spec=prepared.spec(limits=config.limits, protect=config.paths.protection),
            run_dir=run_dir,
            output_bytes=config.truncation.max_bytes,
            exclude=run_dir,
        ) as session:
            run_pending_setup(prepared, session, timeout_s=config.limits.command_timeout_s)
            test_cmd = (
                args.test_cmd
                or config.test_cmd
                or detect_test_command(session.workspace.path, shown=repo)
            )
            test_run = run_test_cmd(session.box, test_cmd=test_cmd, timeout_s=args.timeout)
    finally:
        if not keep:
            remove_dir(run_dir)
    if not test_run.passed:
        if ecosystem and (
            problem := ecosystem.environment_problem(test_run, repo, setup_said=choice.said())
        ):
            _progress(f"environment: {problem}")
        for program in missing_programs(test_run, repo):
            said = f"; {choice.said()}" if program.declared_in else ""
            _progress(f"environment: {program.describe()}{said}")
    summary = test_run.to_dict()
    if not keep:
        summary["log"] = None
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(test_run.render(for_model=False))
        kept = summary["log"] or "not kept (pass --out DIR to keep it)"
        print(f"full log: {kept}")
    return 0 if test_run.passed else 1
