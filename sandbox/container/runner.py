"""Runs one command inside the sandbox container, enforcing its time limit from inside.

Executed by the container's python3 (stdlib only; no imports from the worker). Usage:
    runner.py TIMEOUT_S CAPTURE_PATH COMMAND [WORKSPACE_MB [WRITABLE_BASE [PATH ...]]]
The command's stdout and stderr, merged in order, go to our stdout; a one-line JSON result goes to
our stderr once the command and every process it left behind are gone; it carries CAPTURE_PATH
zlib-compressed and base64-encoded (sandbox/container/capture.py reads it back). On timeout the
whole
process group is killed, and then every other process of this user in the container (a process
that escaped into a new session included): nothing outlives a command. The same happens when
the command has written more than WORKSPACE_MB to /workspace (a host folder) and the PATHs (the
image's writable folders, volumes on the daemon's disk: writable.py) together, counted as what
their files take (st_blocks, hard links once: WriteGuard), so that another process writing to
the same disk (a CI run, a parallel task) counts for nothing; and when a disk under them is full
(less than FULL_BYTES free), whoever filled it. The PATHs are bounded across the sandbox's
life too: before each command the runner adds up what their files take (WRITABLE_HELD_MAX
entries at most: an image with more gets no base, a sandbox that had one and passes it is
over), says it in its result (`writable_bytes`, the host keeps the first as the
sandbox's WRITABLE_BASE, "-" until then), and runs no command once they hold more than
WORKSPACE_MB over that base: repeated test runs that each leave their output behind fill no
disk, and the result says why (`writable_full`). The result says too whether the command hit
the container's process limit (a thread or process that could not start: the pids cgroup's
`max` count went up), which a test run that waits for its threads ends in silently otherwise.

It runs once per command, so it starts fast: no subprocess, json or signal modules (together
about 15 ms of imports), just os, sys, time, select, binascii and zlib (C modules, 0.1 ms).
"""

import binascii
import os
import select
import sys
import time
import zlib

SIGKILL = 9
# The capture file as written: a JUnit report of 100,000 tests is about 16 MB. Anything larger
# than CAPTURE_MAX is not sent (it is reported as too large), and neither is one that does not
# compress below COMPRESSED_MAX: the host holds the whole trailer in memory. pytest's reports
# compress about 27 to 1 at level 1 (sandbox/container/capture.py).
CAPTURE_MAX = 512 * 1024 * 1024
COMPRESSED_MAX = 64 * 1024 * 1024
CHUNK = 1024 * 1024
FULL_BYTES = 1024 * 1024  # free space below this after a command: the workspace is full
# Files and folders added up under the writable folders before each command, at most: about
# 8 microseconds each (1.5 s at most; a Rust target folder of 500 MB holds a few thousand).
WRITABLE_HELD_MAX = 200_000
# The guard's walks of the folders a command writes (WriteGuard). A walk of 30,000 files takes
# about 0.1 s (bench/workspace_cap.py --walk): one every WALK_SHARE times its own length, at
# least WALK_EVERY_S apart (5% of a core at most), and sooner once the disk's free space dropped
# by what the command may still write (then at least WALK_SOON times its length apart). A walk
# past WALK_MAX_S or WRITABLE_HELD_MAX entries counts nothing: the guard falls back to the drop
# of the disk's free space, and its result says so.
WALK_EVERY_S = 2.0
WALK_SHARE = 20
WALK_SOON = 4
WALK_MAX_S = 2.0


def oom_kills():
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return -1


def kill_everything(pgid):
    for target in (lambda: os.killpg(pgid, SIGKILL), lambda: os.kill(-1, SIGKILL)):
        try:
            target()  # kill(-1) spares PID 1 and ourselves
        except (ProcessLookupError, PermissionError):
            pass


def pids_max_hits():
    """How often a fork or a thread's start failed at the pids limit (cgroup v2, then v1)."""
    for path in ("/sys/fs/cgroup/pids.events", "/sys/fs/cgroup/pids/pids.events"):
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == "max":
                        return int(value)
        except (OSError, ValueError):
            continue
    return -1


def disks(paths):
    """One path per disk under `paths` (the first of each device)."""
    seen = {}
    for path in paths:
        try:
            seen.setdefault(os.stat(path).st_dev, path)
        except OSError:
            continue
    return list(seen.values())


def free_bytes(path):
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


def held_bytes(paths, deadline=None):
    """What the files under `paths` take on disk, links not followed and a file of several hard
    links (cargo's, pnpm's) once; None past WRITABLE_HELD_MAX entries or `deadline` (a
    time.monotonic() value): too many to add up before every command."""
    total = 0
    seen = 0
    linked = set()
    stack = list(paths)
    while stack:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                seen += 1
                if seen > WRITABLE_HELD_MAX:
                    return None
                if deadline is not None and seen % 1024 == 0 and time.monotonic() > deadline:
                    return None
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_mode & 0o170000 == 0o040000:  # a folder (S_ISDIR, without `stat`)
                    stack.append(entry.path)
                elif st.st_nlink > 1:
                    if (st.st_dev, st.st_ino) in linked:
                        continue
                    linked.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


class WriteGuard:
    """Whether a command wrote more than `limit` bytes under `paths`, counted by what their
    files take (a walk now and then: see WALK_*), not by the disks' free space, which other
    processes' writes lower too (a CI run beside set-up's copy, on the same disk, killed it).
    The free space still serves twice: a drop of what the command may still write brings the
    next walk forward, and a disk with less than FULL_BYTES left is over whoever filled it.
    Where the start's walk finds too many files (`counted` False), the drop of free space is the
    measure, as before."""

    def __init__(self, paths, limit, *, start, walk_s):
        """`start`: what the files under `paths` took before the command (held_bytes), None
        where they were too many to add up; `walk_s`: how long adding them up took."""
        self.paths = paths
        self.limit = limit
        self.free_start = {}
        for path in disks(paths):
            free = free_bytes(path)
            if free is not None:
                self.free_start[path] = free
        self.start = start
        self.walk_s = walk_s
        self.counted = start is not None
        self.written = 0  # at the last walk
        self.walked_at = time.monotonic()
        self.free_at_walk = dict(self.free_start)

    def over(self):
        """True once the command is over its share (or a disk under it is full)."""
        dropped = 0
        for path, free in self.free_start.items():
            free_now = free_bytes(path)
            if free_now is None:
                continue
            if free_now < FULL_BYTES <= free:
                return True
            if not self.counted:
                if free - free_now > self.limit:
                    return True
                continue
            dropped = max(dropped, self.free_at_walk[path] - free_now)
        if not self.counted:
            return False
        since = time.monotonic() - self.walked_at
        due = since >= max(WALK_EVERY_S, WALK_SHARE * self.walk_s)
        soon = self.written + dropped > self.limit and since >= WALK_SOON * self.walk_s
        if not (due or soon):
            return False
        for path in self.free_at_walk:
            self.free_at_walk[path] = free_bytes(path) or 0
        began = time.monotonic()
        held = held_bytes(self.paths, began + WALK_MAX_S)
        self.walked_at = time.monotonic()
        self.walk_s = self.walked_at - began
        if held is None:  # grew past what a walk adds up: the free space is the measure now
            self.counted = False
            return self.over()
        self.written = held - self.start
        return self.written > self.limit

    def full(self):
        """Whether a disk under the folders was filled during the command (on a capped copy, a
        filesystem of its own, that is its end: the command got "no space left")."""
        for path, free in self.free_start.items():
            free_end = free_bytes(path)
            if free_end is not None and free_end < FULL_BYTES <= free:
                return True
        return False


def refuse_full(held, base, limit, paths):
    """The line a command not run says: the writable folders are over their share (`held`
    None: more files than WRITABLE_HELD_MAX, where the sandbox started with fewer)."""
    left = "more files" if held is None else f"{(held - base) // (1024 * 1024)} MB"
    return (
        f"worker: command not run: this sandbox's commands have left {left} in "
        f"{', '.join(paths)}, more than [limits] workspace_mb ({limit // (1024 * 1024)} MB) "
        "allows all of them together\n"
    ).encode()


def spawn(command, write_fd, read_fd):
    pid = os.fork()
    if pid == 0:  # the child: a new session (so a process group of its own), no stdin
        try:
            os.setsid()
            null = os.open("/dev/null", os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(write_fd, 1)
            os.dup2(write_fd, 2)
            os.close(read_fd)
            # This folder first on the command's PATH: its `git` makes the copy a repository at
            # the first call (sandbox/container/checkout_repo.py).
            here = os.path.dirname(os.path.abspath(__file__))
            os.environ["PATH"] = here + ":" + os.environ.get("PATH", "/usr/bin:/bin")
            os.execv("/bin/sh", ["/bin/sh", "-c", command])
        finally:
            os._exit(127)
    return pid


def read_capture(path):
    """(the file zlib-compressed, None), or (None, why not): "size" or "compressed" for a file
    over CAPTURE_MAX or one that compresses to more than COMPRESSED_MAX."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size > CAPTURE_MAX:
            return None, "size"
        packer = zlib.compressobj(1)
        parts = []
        read = packed = 0
        while True:
            chunk = f.read(CHUNK)
            if not chunk:
                break
            read += len(chunk)
            if read > CAPTURE_MAX:  # not a regular file, or one still growing
                return None, "size"
            parts.append(packer.compress(chunk))
            packed += len(parts[-1])
            if packed > COMPRESSED_MAX:
                return None, "compressed"
    parts.append(packer.flush())
    if packed + len(parts[-1]) > COMPRESSED_MAX:
        return None, "compressed"
    return b"".join(parts), None


def exit_code(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def main():
    timeout_s = float(sys.argv[1])
    capture = sys.argv[2]
    command = sys.argv[3]
    disk_limit = int(sys.argv[4]) * 1024 * 1024 if len(sys.argv) > 4 else None
    base = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5] != "-" else None
    writable = sys.argv[6:]
    began = time.monotonic()
    held = held_bytes(writable) if writable and disk_limit else None
    walked_s = time.monotonic() - began
    # A sandbox whose image held more files than are added up has no base: the per-command cap
    # alone holds there. One that had a base and now holds too many is over.
    if base is not None and (held is None or held - base > disk_limit):
        sys.stdout.buffer.write(refuse_full(held, base, disk_limit, writable))
        sys.stdout.buffer.flush()
        sys.stderr.buffer.write(
            f'{{"exit_code": 1, "duration_s": 0, "timed_out": false, "oom_killed": false, '
            f'"capture_over": null, "disk_exceeded": false, "pids_exceeded": false, '
            f'"writable_bytes": {"null" if held is None else held}, "writable_full": true, '
            '"capture": null}\n'.encode()
        )
        return
    guard = None
    if disk_limit:
        # The writable folders were added up just now: only /workspace is walked again.
        began = time.monotonic()
        ours = held_bytes(["/workspace"], began + WALK_MAX_S)
        before = None if ours is None or (writable and held is None) else ours + (held or 0)
        walked_s += time.monotonic() - began
        guard = WriteGuard(["/workspace", *writable], disk_limit, start=before, walk_s=walked_s)
    disk_exceeded = False
    oom_before = oom_kills()
    pids_before = pids_max_hits()
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    pid = spawn(command, write_fd, read_fd)
    os.close(write_fd)
    deadline = start + timeout_s
    timed_out = False
    status = None
    out = sys.stdout.buffer
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 and not timed_out:
            timed_out = True
            kill_everything(pid)
        ready, _, _ = select.select([read_fd], [], [], 0.2 if timed_out else min(remaining, 0.2))
        if guard is not None and not disk_exceeded and guard.over():
            disk_exceeded = True
            kill_everything(pid)
        if ready:
            data = os.read(read_fd, 65536)
            if not data:
                break
            out.write(data)
            continue
        if status is None:
            done, raw = os.waitpid(pid, os.WNOHANG)
            if done:
                # The command ended; whatever it left running (holding our pipe open) goes too.
                status = raw
                kill_everything(pid)
    out.flush()
    if status is None:
        _, status = os.waitpid(pid, 0)
    duration = time.monotonic() - start
    kill_everything(pid)
    if guard is not None and not disk_exceeded:
        # On a capped copy (a filesystem of its own) the cap is the disk's end: a command that
        # reached it got "no space left" rather than a kill; say so all the same.
        disk_exceeded = guard.full()
    oom_after = oom_kills()
    pids_after = pids_max_hits()
    data = over = None
    if capture:
        try:
            data, over = read_capture(capture)
        except OSError:
            pass
    timed = "true" if timed_out else "false"
    oom = "true" if oom_before >= 0 and oom_after > oom_before else "false"
    over_json = "null" if over is None else f'"{over}"'
    pids = "true" if pids_before >= 0 and pids_after > pids_before else "false"
    err = sys.stderr.buffer
    err.write(
        f'{{"exit_code": {exit_code(status)}, "duration_s": {duration:.6f}, '
        f'"timed_out": {timed}, "oom_killed": {oom}, '
        f'"capture_over": {over_json}, '
        f'"disk_exceeded": {"true" if disk_exceeded else "false"}, '
        f'"disk_by_free_space": {"true" if guard is not None and not guard.counted else "false"}, '
        f'"pids_exceeded": {pids}, "writable_bytes": {"null" if held is None else held}, '
        '"capture": '.encode()
    )
    # In pieces: the capture may be tens of megabytes, and one more copy of it is not needed.
    if data is None:
        err.write(b"null}\n")
    else:
        err.write(b'"')
        err.write(binascii.b2a_base64(data, newline=False))
        err.write(b'"}\n')
    err.flush()


if __name__ == "__main__":
    main()
