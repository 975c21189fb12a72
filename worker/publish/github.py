"""The three GitHub REST calls `worker publish` makes, over plain HTTP (urllib).

Why not a client library: three JSON calls do not justify PyGitHub's dependencies (PyNaCl,
cryptography, PyJWT) in the job that holds write access, and plain HTTP keeps every failure
visible as the step, the status and GitHub's own message, in one line.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from worker.publish.errors import PublishFailed

DEFAULT_API_URL = "https://api.github.com"
TIMEOUT_S = 30.0


@dataclass(frozen=True, kw_only=True)
class GitHub:
    """A repository on a GitHub (or GitHub Enterprise) API: `api_url` as Actions sets it."""

    api_url: str
    repository: str  # "owner/name"
    token: str

    def default_branch(self) -> str:
        data = self._call("reading the repository", "GET", f"/repos/{self.repository}")
        return str(data["default_branch"])

    def open_draft_pull(self, *, head: str, base: str, title: str, body: str) -> str:
        """Open a draft pull request; returns its address."""
        payload = {"title": title, "head": head, "base": base, "body": body, "draft": True}
        data = self._call(
            "opening the pull request", "POST", f"/repos/{self.repository}/pulls", payload
        )
        return str(data.get("html_url") or data.get("url") or "")

    def comment(self, *, number: int, body: str) -> str:
        """Comment on pull request (issue) `number`; returns the comment's address."""
        data = self._call(
            "commenting on the pull request",
            "POST",
            f"/repos/{self.repository}/issues/{number}/comments",
            {"body": body},
        )
        return str(data.get("html_url") or data.get("url") or "")

    def _call(
        self, step: str, method: str, path: str, payload: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        request = urllib.request.Request(
            self.api_url.rstrip("/") + path,
            method=method,
            data=None if payload is None else json.dumps(payload).encode(),
            headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {self.token}",
                "X-GitHub-Api-Version": "2022-11-28",
                "Content-Type": "application/json",
                "User-Agent": "worker-publish",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                data = json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            raise PublishFailed(f"{step}: HTTP {exc.code} {_message(exc)}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            unreachable = f"the API at {self.api_url} is unreachable ({reason})"
            raise PublishFailed(f"{step}: {unreachable}") from None
        return data if isinstance(data, dict) else {}


def _message(exc: urllib.error.HTTPError) -> str:
    """GitHub's own words: `message`, and the first of `errors` (a 422 says why there)."""
    try:
        data = json.loads(exc.read() or b"{}")
    except ValueError:
        return exc.reason or ""
    text = str(data.get("message") or exc.reason or "")
    errors = data.get("errors") or []
    if errors and isinstance(errors[0], dict):
        text += f" ({errors[0].get('message') or errors[0].get('code') or ''})"
    return text.replace("\n", " ")[:300]
