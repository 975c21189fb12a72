"""The local backend with real host processes: limits, kills, environment, capture, cleanup."""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from policies.limits import Limits
from sandbox.container.local_sandbox import MARKER_VAR, LocalSandbox
from sandbox.errors import SandboxError
from sandbox.testrun.run import run_tests

MakeBox = Callable[..., LocalSandbox]


@pytest.fixture
def make_box(tmp_path: Path) -> Iterator[MakeBox]:
    """Start LocalSandboxes on a fresh workspace under tmp_path; close them all at the end."""
    boxes: list[LocalSandbox] = []

    def make(**limits: float) -> LocalSandbox:
        workspace = tmp_path / f"ws{len(boxes)}"
        workspace.mkdir()
        box = LocalSandbox(
            workspace=workspace,
            control_dir=tmp_path / f"control{len(boxes)}",
            limits=Limits(**{"command_timeout_s": 30.0, **limits}),  # type: ignore[arg-type]
            log_dir=tmp_path / f"logs{len(boxes)}",
        )
        box.start()
        boxes.append(box)
        return box

    yield make
    for box in boxes:
        box.close()


def unique_seconds() -> str:
    """A sleep duration no other process on this machine is using, to find ours by cmdline."""
    return f"{1000 + secrets.randbelow(1000)}.{secrets.randbelow(10**6):06d}"


def alive(*args: str) -> list[psutil.Process]:
    """Live (not zombie) processes with any of `args` in their command line."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(a in cmdline for a in args):
            found.append(proc)
    return found


def test_exit_codes_and_signals(make_box: MakeBox) -> None:
    box = make_box()
    assert box.run("true").ok
    result = box.run("echo out; echo err >&2; exit 3")
    assert (result.exit_code, result.output, result.timed_out) == (3, "out\nerr\n", False)
    assert box.run("kill -TERM $$").exit_code == 128 + 15
    assert box.run("kill -KILL $$").exit_code == 128 + 9
    assert box.run("cat").output == ""  # stdin is /dev/null, not the worker's


def test_runs_in_workspace_and_stage_gives_host_path(make_box: MakeBox) -> None:
    box = make_box()
    (box.workspace / "hello.txt").write_text("hi")
    assert box.run("cat hello.txt").output == "hi"
    staged = box.stage("the patch.diff", b"diff text")
    assert Path(staged).parent == box.control_dir
    assert box.run(f"cat '{staged}'").output == "diff text"
    with pytest.raises(ValueError):
        box.stage(".local-tmp", b"x")


def test_output_capped_with_marker_and_full_log_on_disk(make_box: MakeBox) -> None:
    box = make_box()
    result = box.run("head -c 40000000 /dev/zero | tr '\\0' x; echo; echo the-end")
    assert result.output_bytes == 40_000_009
    assert result.truncated
    assert len(result.output) < 17_000
    assert re.search(
        r"\[\.\.\. \d+ bytes of output cut; full log: .*command-001\.log", result.output
    )
    assert result.output.endswith("the-end\n")
    assert result.log_path is not None and result.log_path.stat().st_size == 40_000_009


def test_host_environment_does_not_reach_commands(
    make_box: MakeBox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-do-not-leak")
    monkeypatch.setenv("WORKER_TEST_SECRET", "also-secret")
    box = make_box()
    result = box.run("env; echo ~; python -c 'import tempfile; print(tempfile.gettempdir())'")
    assert "secret" not in result.output
    names = {line.split("=", 1)[0] for line in result.output.splitlines() if "=" in line}
    assert names == {
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "PYTHONDONTWRITEBYTECODE",
        "CI",
        "PYTHONUNBUFFERED",
        MARKER_VAR,
        "PWD",  # set by the shell itself
    }
    home, tmp = result.output.splitlines()[-2:]
    assert Path(home).parent == box.control_dir and Path(tmp).parent == box.control_dir
    assert home != os.environ["HOME"]


def test_sleeping_tree_killed_at_limit_and_nothing_left(make_box: MakeBox) -> None:
    box = make_box()
    a, b, c, d = (unique_seconds() for _ in range(4))
    # d leaves the group and drops the marker: only the tree collected while it ran finds it.
    command = f"sleep {a} & setsid sleep {b} & env -i setsid sleep {d} & sleep {c}"
    result = box.run(command, timeout_s=1.5)
    assert result.timed_out and not result.ok
    assert result.exit_code == 128 + 9
    assert 1.5 <= result.duration_s < 4.0
    assert alive(a, b, c, d) == []


def test_leftovers_of_a_finished_command_are_killed(make_box: MakeBox) -> None:
    box = make_box()
    a, b, c = unique_seconds(), unique_seconds(), unique_seconds()
    # Background jobs, one in its own session, one double-forked out of the tree at once.
    command = (
        f"sleep {a} & setsid sleep {b} > /dev/null 2>&1 & "
        f"( setsid sleep {c} > /dev/null 2>&1 & ) ; echo done"
    )
    result = box.run(command)
    assert (result.exit_code, result.output, result.timed_out) == (0, "done\n", False)
    assert result.duration_s < 4.0
    assert alive(a, b, c) == []


def test_process_count_limit(make_box: MakeBox) -> None:
    box = make_box(pids=10)
    s = unique_seconds()
    result = box.run(f"for i in $(seq 30); do sleep {s} & done; wait", timeout_s=10)
    assert "more than 10 processes" in result.output
    assert not result.ok and not result.timed_out
    assert alive(s) == []


def test_memory_limit_stops_a_big_allocation(make_box: MakeBox) -> None:
    box = make_box(memory_mb=256)
    assert box.run("python -c 'b = bytearray(50 * 1024**2)'").ok
    result = box.run("python -c 'b = bytearray(1024**3)'")
    assert result.exit_code == 1
    assert result.oom_killed
    assert "MemoryError" in result.output


def test_junit_capture_through_run_tests(make_box: MakeBox) -> None:
    box = make_box()
    (box.workspace / "test_tiny.py").write_text(
        "def test_ok():\n    assert 1 + 1 == 2\n\n\ndef test_bad():\n    assert 1 + 1 == 3\n"
    )
    run = run_tests(box, test_cmd="python -m pytest")
    assert run.summary is not None, run.result.output
    assert (run.summary.passed, run.summary.failed) == (1, 1)
    assert [f.test_id for f in run.summary.failures] == ["test_tiny.py::test_bad"]
    assert run.result.exit_code == 1 and not run.passed
    junit = re.search(r"/tmp/worker-junit-\w+\.xml", run.command)
    assert junit is not None
    assert not Path(junit.group()).exists()  # written to the private TMPDIR, not the host's /tmp
    assert box.run(f"ls $TMPDIR/{Path(junit.group()).name}").ok


def test_total_time_limit(make_box: MakeBox) -> None:
    box = make_box(total_timeout_s=1.0)
    result = box.run("sleep 5", timeout_s=30)
    assert result.timed_out and result.duration_s < 3.0
    with pytest.raises(SandboxError, match="total time limit"):
        box.run("true")


def test_close_removes_private_dirs_and_refuses_runs(make_box: MakeBox) -> None:
    box = make_box()
    tmp = box.run("echo $TMPDIR").output.strip()
    assert Path(tmp).is_dir()
    box.close()
    assert not Path(tmp).exists()
    with pytest.raises(SandboxError, match="not running"):
        box.run("true")
