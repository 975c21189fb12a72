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
before. A name this machine cannot resolve is left to the sidecar too. IPv4 only: Docker's
networks here have no IPv6 route, and the proxy tries the addresses in turn.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from typing import Any

#: Addresses kept per host: a CDN answers with a few; tinyproxy tries them in turn.
MAX_ADDRESSES = 4

Resolver = Callable[..., list[tuple[Any, ...]]]


def pinned_hosts(hosts: Iterable[str], *, resolve: Resolver = socket.getaddrinfo) -> list[str]:
    """Docker's `extra_hosts` lines (`name:address`) for the hosts that resolve here.

    >>> pinned_hosts(["localhost", "127.0.0.1"])
    ['localhost:127.0.0.1']
    """
    lines: list[str] = []
    for host in dict.fromkeys(hosts):
        if _is_ipv4(host):
            continue  # an address needs no name service
        try:
            found = resolve(host, None, socket.AF_INET, socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            continue
        addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
        lines += [f"{host}:{a}" for a in addresses[:MAX_ADDRESSES]]
    return lines


def _is_ipv4(host: str) -> bool:
    try:
        socket.inet_aton(host)
    except OSError:
        return False
    return host.count(".") == 3
