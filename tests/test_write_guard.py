"""What the in-container runner counts as a command's writes (sandbox/container/runner.py:
WriteGuard): the files under the folders it guards, not the disk's free space, which another
process writing to the same disk lowers too. In-process, on this machine's disk."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sandbox.container.results import CommandResult
from sandbox.container.runner import WriteGuard, held_bytes

MIB = 1024 * 1024


def write(path: Path, mb: int) -> None:
    with path.open("wb") as f:
        f.write(b"\1" * (mb * MIB))
        f.flush()
        os.fsync(f.fileno())


def over_within(guard: WriteGuard, seconds: float) -> bool:
    """Whether the guard says over before `seconds` pass, asked as the runner asks, every 0.2 s
    (a walk falls due at least every WALK_EVERY_S)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if guard.over():
            return True
        time.sleep(0.2)
    return False


def test_a_file_counts_by_its_blocks_and_a_hard_linked_one_once(tmp_path):
    (tmp_path / "d").mkdir()
    empty = held_bytes([str(tmp_path)])
    write(tmp_path / "d" / "a", 2)
    os.link(tmp_path / "d" / "a", tmp_path / "b")  # cargo's deps and pnpm's store link so
    with (tmp_path / "sparse").open("wb") as f:
        f.truncate(64 * MIB)  # takes no blocks: writes nothing to the disk
    assert held_bytes([str(tmp_path)]) - empty == 2 * MIB
    # More files than a walk may take its time on: nothing counted (None), not a guess.
    for i in range(2048):
        (tmp_path / f"f{i}").touch()
    assert held_bytes([str(tmp_path)], deadline=time.monotonic() - 1) is None


def test_another_process_s_writes_on_the_same_disk_are_not_the_command_s(tmp_path):
    guarded, beside = tmp_path / "workspace", tmp_path / "ci-run"
    guarded.mkdir()
    beside.mkdir()
    paths = [str(guarded)]
    guard = WriteGuard(paths, 2 * MIB, start=held_bytes(paths), walk_s=0.0)
    write(beside / "out", 8)  # a CI run's output: the disk's free space drops by 8 MB
    assert not over_within(guard, 1.0)
    assert guard.counted and guard.written < MIB
    write(guarded / "big", 3)  # the command's own
    assert over_within(guard, 2.5) and guard.written >= 3 * MIB


def test_with_too_many_files_to_add_up_the_free_space_is_the_measure_and_it_says_so(tmp_path):
    guard = WriteGuard([str(tmp_path)], 2 * MIB, start=None, walk_s=0.0)
    assert not guard.counted  # the runner's result says disk_by_free_space then
    write(tmp_path / "out", 8)
    assert over_within(guard, 1.0)


def test_a_kill_measured_by_free_space_says_so_in_its_ending():
    def ending(**how: bool) -> str:
        return CommandResult(
            command="npm ci", exit_code=137, duration_s=1.0, timed_out=False, oom_killed=False,
            output="", output_bytes=0, truncated=False, disk_exceeded=True, **how,
        ).describe()  # fmt: skip

    assert "other processes' writes count too" in ending(disk_by_free_space=True)
    assert "other processes" not in ending()
