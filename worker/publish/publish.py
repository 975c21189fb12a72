"""`worker publish`: a finished `worker ci` run's verified patch as a commit on a new branch
`worker/fix-<short sha>`, pushed, and a draft pull request against the failing branch with
summary.md as its body; or (comment only) the summary as a comment on a pull request.

Checked before anything is written anywhere: the run was verified fixed, the failing branch is
not one of ours, and it still points at the commit the run started from.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worker.errors import UsageError
from worker.publish.errors import NotPublished
from worker.publish.git import commit_patch, push_new_branch, remote_branch_sha
from worker.publish.github import GitHub
from worker.record.folder import RunFolder
from worker.record.report import RunReport

BRANCH_PREFIX = "worker/fix-"


@dataclass(frozen=True, kw_only=True)
class PublishRequest:
    """What to publish and where, settled by the command line."""

    out: Path
    repo: Path
    remote: str
    base: str | None
    github: GitHub
    comment_on: int | None = None  # a pull request number: comment instead of opening one


@dataclass(frozen=True, kw_only=True)
class Published:
    """What was done: the branch pushed (if any) and the pull request or comment made."""

    branch: str | None
    url: str
    what: str


def load_run(out: Path) -> tuple[RunReport, str, str]:
    """The run's report, patch and summary; NotPublished unless it was verified fixed."""
    run = RunFolder(out)
    try:
        report = run.load_report()
    except (OSError, ValueError) as exc:
        raise UsageError(f"no worker ci report in {out}: {exc}") from None
    ci = report.ci
    if not isinstance(ci, dict):
        raise UsageError(f"{run.report_path} is not from worker ci (no 'ci' part)")
    if report.status != "fixed" or not report.patch or not ci.get("verified"):
        raise NotPublished(
            f"nothing published: the run was not verified fixed ({report.status}: {report.reason})"
        )
    try:
        # By name in `out`, not by the recorded path: the outputs travel as an artifact.
        patch = run.patch_path.read_text(encoding="utf-8")
        summary = run.summary_path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"the run's outputs are incomplete: {exc}") from None
    return report, patch, summary


def publish(req: PublishRequest, say: Any = print) -> Published:
    """Check, commit, push, open the draft pull request (or comment). See the module docstring."""
    report, patch, summary = load_run(req.out)
    ci = report.ci or {}
    head_sha = ci.get("head_sha")
    base = req.base or ci.get("branch")
    if not head_sha:
        raise UsageError("the run recorded no commit (was the repository a git checkout?)")
    if not base:
        raise UsageError("which branch failed? pass --base BRANCH (the run recorded none)")
    if base.startswith(BRANCH_PREFIX):
        raise UsageError(f"refusing to publish a fix of {base!r}: it is one of worker's branches")
    now = remote_branch_sha(req.repo, req.remote, base)
    if now != head_sha:
        where = "is gone" if now is None else f"now points at {now[:12]}"
        raise NotPublished(
            f"branch {base!r} moved: it {where}, the run started from {head_sha[:12]}; "
            "nothing published (the fix may no longer apply; run worker ci again)"
        )
    if req.comment_on is not None:
        url = req.github.comment(number=req.comment_on, body=summary)
        return Published(branch=None, url=url, what=f"commented on #{req.comment_on}")
    branch = BRANCH_PREFIX + head_sha[:12]
    default = req.github.default_branch()
    if branch in (default, base):  # never: but a push here must not be one of those
        raise UsageError(f"refusing to push to {branch!r}: it is the default or failing branch")
    title = f"worker: fix failing tests on {base} ({head_sha[:7]})"
    commit = commit_patch(req.repo, head_sha, patch, title)
    say(f"committed {commit[:12]} on {head_sha[:12]}")
    push_new_branch(req.repo, req.remote, commit, branch)
    say(f"pushed {branch}")
    url = req.github.open_draft_pull(head=branch, base=base, title=title, body=summary)
    return Published(branch=branch, url=url, what="opened a draft pull request")
