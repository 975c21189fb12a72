"""The reference side of bench/corpus.py for a JavaScript or TypeScript repository
(`ecosystem = "node"` in a list): a fresh clone, the CI's install commands with the host's Node
(pnpm and yarn by corepack), then its test command twice: as the maintainers run it (`npm test`),
and with the runner's per-test report (`report`, bench/node_host.py), as a user, with CI=true.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from node_host import node_env, run_installs, run_tests


def node_version() -> str:
    """The host's Node (the reference's toolchain, as the Python side names its interpreter)."""
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    return done.stdout.strip().removeprefix("v")


def run_node_reference(
    entry: Any, work: Path, *, user: Sequence[str], timeout_s: float,
    checkout: Callable[[Any, Path], None], owner: str,
) -> dict[str, Any]:  # fmt: skip
    """Install and test `entry` (a corpus.Entry) in WORK/NAME/ref, as `user` (a prefix; `owner`
    owns the folder then); the result as reference.json holds it."""
    where = work / entry.name
    clone, log_path = where / "ref", where / "reference.log"
    result: dict[str, Any] = {"name": entry.name, "commit": entry.commit, "counts": None}
    try:
        checkout(entry, clone)
    except RuntimeError as exc:
        return result | {"problem": f"checkout failed: {exc}"}
    env = node_env(work, where / "home") | entry.env
    if user:
        subprocess.run(["chown", "-R", f"{owner}:", str(where)], check=True)
    started = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        failed = run_installs(
            entry.install, cwd=clone, env=env, log=log, timeout_s=timeout_s, user=user
        )
        if failed:
            log.flush()
            last = log_path.read_text(encoding="utf-8", errors="replace").strip()
            tail = (last.splitlines() or [""])[-1]
            step, code = failed
            return result | {"problem": f"install failed: `{step}` (exit {code}): {tail}"}
        result["install_s"] = round(time.monotonic() - started, 1)
        run = run_tests(
            clone, runner=entry.runner, report_cmd=entry.report, env=env, log=log,
            timeout_s=timeout_s, report=where / "report.json", plain_cmd=entry.test, user=user,
        )  # fmt: skip
    result |= {"test_s": run.test_s, "exit_code": run.plain_exit_code, "node": node_version()}
    result |= {"report_exit_code": run.exit_code}
    if run.counts is None:
        return result | {"problem": run.problem or "no report"}
    return result | {
        "counts": run.counts,
        "failing": run.failing(),
        "outcomes": run.outcomes,
        "problem": run.problem,
    }
