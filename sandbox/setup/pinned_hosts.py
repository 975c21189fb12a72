"""The fence's hosts resolved once, for the proxy sidecar's /etc/hosts.

tinyproxy has no DNS cache: it resolves the registry's name again for every connection, and an
npm install of a large lockfile is a connection for every tarball, up to the proxy's MaxClients
at once. A resolver that limits its clients' rate drops the rest; this machine's (10.255.255.53)
answered about 27 look-ups a second from the host itself, whatever the concurrency (4, 16 or 64
threads: 0, 9, 79 failures in 10 s), and each dropped look-up became tinyproxy's 500 and a
retry at the back of npm's queue. npm on the host meets none of it: it caches what it resolved.

So the worker resolves each host once, before the sidecar starts, and Docker writes the
addresses into the sidecar's /etc/hosts (`extra_hosts`), which glibc reads before asking DNS.
Only where the daemon shares this machine (the "mounted" placement): a daemon elsewhere may see
other answers (a registry's name inside a company network), so there the sidecar resolves as
before. A name this machine cannot resolve, or not within 2 s, is left to the sidecar too. IPv4
only: Docker's networks here have no IPv6 route, and the proxy tries the addresses in turn.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

#: Addresses kept per host: a CDN answers with a few; tinyproxy tries them in turn.
MAX_ADDRESSES = 4
#: How long the look-ups may take together, all at once: a resolver that has not answered by
#: then (none reachable, offline) leaves those hosts to the sidecar, as before, rather than
#: delaying every set-up by glibc's 10 s a host.
RESOLVE_WITHIN_S = 2.0

Resolver = Callable[..., list[tuple[Any, ...]]]


def pinned_hosts(
    hosts: Iterable[str],
    *,
    resolve: Resolver = socket.getaddrinfo,
    within_s: float = RESOLVE_WITHIN_S,
) -> list[str]:
    """Docker's `extra_hosts` lines (`name:address`) for the hosts that resolve here in time.

    >>> pinned_hosts(["localhost", "127.0.0.1"])
    ['localhost:127.0.0.1']
    """
    names = [h for h in dict.fromkeys(hosts) if not _is_ipv4(h)]  # an address needs no look-up
    found: dict[str, list[str]] = {}

    def look_up(host: str) -> None:
        try:
            infos = resolve(host, None, socket.AF_INET, socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return
        found[host] = list(dict.fromkeys(str(info[4][0]) for info in infos))

    # All at once, each in a daemon thread: a look-up cannot be cancelled, and one still running
    # at the deadline is left behind rather than waited for.
    threads = [threading.Thread(target=look_up, args=(h,), daemon=True) for h in names]
    for t in threads:
        t.start()
    deadline = time.monotonic() + within_s
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    done = dict(found)
    return [f"{h}:{a}" for h in names for a in done.get(h, [])[:MAX_ADDRESSES]]


def _is_ipv4(host: str) -> bool:
    try:
        socket.inet_aton(host)
    except OSError:
        return False
    return host.count(".") == 3
