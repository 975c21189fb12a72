"""A GitHub-compatible REST server on 127.0.0.1 that records what it was asked, for tests.

Routes (as GitHub's): GET /repos/{owner}/{repo} (default_branch), POST /repos/{owner}/{repo}/pulls
(201 with html_url and number), POST /repos/{owner}/{repo}/issues/{n}/comments (201). `fail`
answers a route ("POST /repos/o/r/pulls") with (status, body) instead, as GitHub words errors.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class GitHubServer:
    """Start with `with GitHubServer(repository="o/r") as gh:`; `gh.api_url`, `gh.requests`."""

    def __init__(
        self,
        *,
        repository: str,
        default_branch: str = "main",
        fail: dict[str, tuple[int, dict[str, Any]]] | None = None,
    ) -> None:
        self.repository = repository
        self.default_branch = default_branch
        self.fail = fail or {}
        self.requests: list[dict[str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def api_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> GitHubServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def _answer(self, method: str) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw) if raw else None
                server.requests.append(
                    {
                        "method": method,
                        "path": self.path,
                        "body": body,
                        "authorization": self.headers.get("authorization"),
                    }  # fmt: skip
                )
                status, payload = server.route(method, self.path, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    def route(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        key = f"{method} {path}"
        if key in self.fail:
            return self.fail[key]
        base = f"/repos/{self.repository}"
        if method == "GET" and path == base:
            return 200, {"full_name": self.repository, "default_branch": self.default_branch}
        if method == "POST" and path == f"{base}/pulls":
            url = f"https://github.example/{self.repository}/pull/7"
            return 201, {"number": 7, "html_url": url, "draft": body.get("draft")}
        match = re.fullmatch(rf"{re.escape(base)}/issues/(\d+)/comments", path)
        if method == "POST" and match:
            url = f"https://github.example/{self.repository}/pull/{match[1]}#issuecomment-1"
            return 201, {"id": 1, "html_url": url}
        return 404, {"message": "Not Found"}

    def calls(self) -> list[str]:
        return [f"{r['method']} {r['path']}" for r in self.requests]
