"""`worker publish`: a finished `worker ci` run as a draft pull request, or a comment on one.

It runs where the LLM key is not (a second CI job with write access), and refuses to run where
it is: the job that holds the key must not hold write access, and the reverse.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from worker.ci.actions import write_outputs
from worker.errors import UsageError
from worker.publish.github import DEFAULT_API_URL, GitHub
from worker.publish.publish import PublishRequest, publish

#: The model keys `worker publish` refuses to see in its environment.
LLM_KEY_VARS = ("OPENAI_API_KEY",)


def add_publish_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of `worker publish`."""
    p.add_argument("--out", type=Path, required=True, help="the worker ci run's output folder")
    p.add_argument("--repo", type=Path, default=Path("."), help="a checkout holding the commit")
    p.add_argument("--remote", default="origin", help="the git remote to push to")
    p.add_argument("--base", default=None, help="the failing branch (default: the run's record)")
    p.add_argument(
        "--github-repository",
        default=None,
        help="OWNER/NAME on GitHub (default: $GITHUB_REPOSITORY)",
    )
    p.add_argument(
        "--token-env", default="GITHUB_TOKEN", help="the variable holding the GitHub token"
    )
    p.add_argument("--comment-only", action="store_true", help="comment the summary on --pr N")
    p.add_argument("--pr", type=int, default=None, help="pull request number (--comment-only)")


def run_publish(args: argparse.Namespace) -> int:
    """Run `worker publish`; 0 when published. Errors go to the one exit-code table."""
    present = [name for name in LLM_KEY_VARS if os.environ.get(name)]
    if present:
        raise UsageError(
            f"refusing to publish with an LLM key in the environment ({', '.join(present)}): "
            "run worker publish in a job without it"
        )
    if args.comment_only and args.pr is None:
        raise UsageError("--comment-only needs --pr NUMBER")
    token = os.environ.get(args.token_env)
    if not token:
        raise UsageError(f"no GitHub token: ${args.token_env} is not set")
    repository = args.github_repository or os.environ.get("GITHUB_REPOSITORY")
    if not repository or repository.count("/") != 1:
        raise UsageError("which GitHub repository? pass --github-repository OWNER/NAME")
    repo = args.repo.expanduser().resolve()
    if not repo.is_dir():
        raise UsageError(f"repository not found: {args.repo}")
    request = PublishRequest(
        out=args.out.expanduser().resolve(),
        repo=repo,
        remote=args.remote,
        base=args.base,
        github=GitHub(
            api_url=os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
            repository=repository,
            token=token,
        ),
        comment_on=args.pr if args.comment_only else None,
    )
    done = publish(request, say=lambda text: print(text, file=sys.stderr))
    print(f"{done.what}: {done.url}")
    write_outputs({"url": done.url, "branch": done.branch or ""})
    return 0
