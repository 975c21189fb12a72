"""Sandbox speed against the physical limit: bare `docker run` / `docker exec` of the same image.

Prints, side by side: cold start to first command, warm start from the set-up cache, and the
latency of one trivial command; and `worker sandbox build` when the image is up to date. Targets:
first command within 1.0 s of cold start; command overhead within 1.2x of bare exec; the
up-to-date build within 10 s. Run: python3 bench/sandbox.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path and its name hides the `sandbox`
# package: drop that folder so the imports below find the package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from policies.limits import Limits  # noqa: E402
from sandbox.container.client import connect  # noqa: E402
from sandbox.container.docker_sandbox import DockerSandbox  # noqa: E402
from sandbox.container.image import DEFAULT_IMAGE, ensure_image  # noqa: E402
from sandbox.setup.cache import SetupSpec, prepare_setup_image  # noqa: E402
from sandbox.worktree.workspace import (  # noqa: E402
    make_run_dir,
    remove_dir,  # noqa: E402
    snapshot,
)


def median_s(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def up_to_date_build() -> None:
    """`worker sandbox build` as a user runs it, the image already current: a check, no build."""
    proc = subprocess.run(
        [sys.executable, "-m", "worker.cli", "sandbox", "build"],
        capture_output=True,
        text=True,
        check=True,
    )
    if "up to date" not in proc.stderr:
        raise RuntimeError(f"the image was built, not found up to date:\n{proc.stderr[-2000:]}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    client = connect()
    ensure_image(client)
    repo = Path(tempfile.mkdtemp(prefix="bench-repo-"))
    (repo / "test_x.py").write_text("def test_x():\n    assert True\n")
    (repo / "requirements.txt").write_text("# nothing\n")
    limits = Limits(memory_mb=1024)

    def our_start(image: str) -> Callable[[], None]:
        def go() -> None:
            run_dir = make_run_dir("bench-")
            try:
                ws = snapshot(repo, run_dir)
                with DockerSandbox(
                    client=client,
                    image=image,
                    workspace=ws.path,
                    control_dir=run_dir / "control",
                    limits=limits,
                ) as box:
                    box.run("true")
            finally:
                remove_dir(run_dir)

        return go

    def bare_run_cli() -> None:
        subprocess.run(
            ["docker", "run", "--rm", "--network", "none", DEFAULT_IMAGE, "true"],
            check=True,
            capture_output=True,
        )

    def bare_run_sdk() -> None:
        client.containers.run(DEFAULT_IMAGE, "true", network_mode="none", remove=True)

    warm_image = prepare_setup_image(
        client, base_image=DEFAULT_IMAGE, spec=SetupSpec(command="true"), repo=repo, limits=limits
    ).image
    rows = [
        ("cold start to first command (ours)", median_s(our_start(DEFAULT_IMAGE), args.repeat)),
        ("warm start from set-up cache (ours)", median_s(our_start(warm_image), args.repeat)),
        ("bare `docker run --rm IMAGE true` (CLI)", median_s(bare_run_cli, args.repeat)),
        ("bare containers.run(remove=True) (SDK)", median_s(bare_run_sdk, args.repeat)),
        ("`worker sandbox build`, image up to date", median_s(up_to_date_build, args.repeat)),
    ]
    run_dir = make_run_dir("bench-")
    try:
        ws = snapshot(repo, run_dir)
        with DockerSandbox(
            client=client,
            image=DEFAULT_IMAGE,
            workspace=ws.path,
            control_dir=run_dir / "control",
            limits=limits,
        ) as box:
            box.run("true")
            container = client.containers.get(box.container_id)
            n = args.repeat * 4
            ours = median_s(lambda: box.run("true"), n)
            sdk = median_s(lambda: container.exec_run("true"), n)
            cli = median_s(
                lambda: subprocess.run(
                    ["docker", "exec", box.container_id, "true"], check=True, capture_output=True
                ),
                n,
            )
            tests = median_s(
                lambda: box.run("python -m pytest -q -p no:cacheprovider"), args.repeat
            )
    finally:
        remove_dir(run_dir)
    rows += [
        ("one trivial command: box.run('true') (ours)", ours),
        ("bare exec_run('true') (SDK)", sdk),
        ("bare `docker exec C true` (CLI)", cli),
        ("one-test pytest run via box.run", tests),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measure':<{width}}  median")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds * 1000:7.1f} ms")
    print(f"\ncommand overhead vs bare SDK exec: {ours / sdk:.2f}x (target <= 1.2x)")
    print(f"command overhead vs bare CLI exec: {ours / cli:.2f}x")
    print(f"cold start to first command: {rows[0][1]:.2f} s (target <= 1.0 s)")
    print(f"`worker sandbox build`, image up to date: {rows[4][1]:.2f} s (target <= 10 s)")
    remove_dir(repo)
    return 0


if __name__ == "__main__":
    sys.exit(main())
