"""How many look-ups a second this machine's resolver answers, and how many it drops: why the
set-up fence's proxy asks again after 1 s (sandbox/setup/network.py: SIDECAR_ENV).

    PYTHONPATH=$PWD python3 bench/dns_rate.py [--threads 4 16 64] [--seconds 10] [HOST]

Each level: THREADS threads resolve HOST (registry.npmjs.org) over and over for SECONDS, as
tinyproxy does for every connection, glibc asking again after 1 s up to 5 times (the sidecar's
RES_OPTIONS). One line a level: look-ups answered a second, and those that failed.
"""

from __future__ import annotations

import argparse
import os
import socket
import threading
import time


def rate(host: str, threads: int, seconds: float) -> tuple[float, int]:
    """Look-ups answered a second and failures, `threads` resolving `host` for `seconds`."""
    answered, failed, lock = [0], [0], threading.Lock()
    end = time.monotonic() + seconds

    def loop() -> None:
        while time.monotonic() < end:
            try:
                socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
                outcome = answered
            except OSError:
                outcome = failed
            with lock:
                outcome[0] += 1

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return answered[0] / seconds, failed[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("host", nargs="?", default="registry.npmjs.org")
    parser.add_argument("--threads", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    os.environ.setdefault("RES_OPTIONS", "timeout:1 attempts:5")  # read at the first look-up
    for threads in args.threads:
        per_s, failed = rate(args.host, threads, args.seconds)
        print(f"threads={threads} answered/s={per_s:.0f} failed={failed}", flush=True)


if __name__ == "__main__":
    main()
