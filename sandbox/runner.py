"""Runs one command inside the sandbox container, enforcing its time limit from inside.

Executed by the container's python3 (stdlib only; no imports from the worker). Usage:
    runner.py TIMEOUT_S CAPTURE_PATH COMMAND
The command's stdout and stderr, merged in order, go to our stdout; a one-line JSON result goes to
our stderr once the command and every process it left behind are gone. On timeout the whole
process group is killed, and then every other process of this user in the container (a process
that escaped into a new session included): nothing outlives a command.
"""

import base64
import json
import os
import select
import signal
import subprocess
import sys
import time

CAPTURE_MAX = 4 * 1024 * 1024


def oom_kills():
    for path, key in (
        ("/sys/fs/cgroup/memory.events", "oom_kill"),
        ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
    ):
        try:
            with open(path) as f:
                for line in f:
                    name, _, value = line.partition(" ")
                    if name == key:
                        return int(value)
        except (OSError, ValueError):
            continue
    return -1


def kill_everything(pgid):
    for target in (lambda: os.killpg(pgid, signal.SIGKILL), lambda: os.kill(-1, signal.SIGKILL)):
        try:
            target()  # kill(-1) spares PID 1 and ourselves
        except (ProcessLookupError, PermissionError):
            pass


def main():
    timeout_s = float(sys.argv[1])
    capture = sys.argv[2]
    command = sys.argv[3]
    oom_before = oom_kills()
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    child = subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=write_fd,
        stderr=write_fd,
        start_new_session=True,
    )
    os.close(write_fd)
    deadline = start + timeout_s
    timed_out = False
    reaped = False
    out = sys.stdout.buffer
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 and not timed_out:
            timed_out = True
            kill_everything(child.pid)
        ready, _, _ = select.select([read_fd], [], [], 0.2 if timed_out else min(remaining, 0.2))
        if ready:
            data = os.read(read_fd, 65536)
            if not data:
                break
            out.write(data)
            continue
        if child.poll() is not None and not reaped:
            # The command ended; whatever it left running (holding our pipe open) goes too.
            reaped = True
            kill_everything(child.pid)
    out.flush()
    returncode = child.wait()
    duration = time.monotonic() - start
    kill_everything(child.pid)
    oom_after = oom_kills()
    result = {
        "exit_code": 128 - returncode if returncode < 0 else returncode,
        "duration_s": duration,
        "timed_out": timed_out,
        "oom_killed": oom_before >= 0 and oom_after > oom_before,
    }
    if capture:
        try:
            with open(capture, "rb") as f:
                result["capture"] = base64.b64encode(f.read(CAPTURE_MAX)).decode()
        except OSError:
            result["capture"] = None
    sys.stderr.write(json.dumps(result) + "\n")
    sys.stderr.flush()


if __name__ == "__main__":
    main()
