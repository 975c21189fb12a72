"""summary.md: the run in Markdown, for the CI run page and the pull request's body.

Everything in it that the run did not write itself is hostile: test ids come from the failing
build's JUnit artifact or a pull request's own parametrize ids, reasons quote them, the diff is
the model's. Such text goes out only as a code span or a fenced block whose backtick run is
longer than any inside it, or as text with every ASCII punctuation mark backslash-escaped, so
that none of it can become a link, an image or HTML (tests/test_summary_markdown.py renders it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from policies.secrets import NO_SECRETS, Secrets
from worker.record.folder import PAGE, RunFolder

MAX_DIFF_CHARS = 60_000  # GitHub caps a step summary at 1 MiB and a PR body at 65,536 chars
MAX_ID_CHARS = 200  # a test id longer than this is cut (a real one is well under)
MAX_TEXT_CHARS = 2_000  # a reason longer than this is cut
_BLANKS = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")  # line breaks and controls: one space
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # ASCII punctuation, escapable in CommonMark
_TICKS = re.compile(r"`+")
# A run's artifacts on GitHub, built from the runner's own variables: only a URL of this shape
# becomes a link.
_ARTIFACTS = re.compile(
    r"https://[A-Za-z0-9.-]+(:\d+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/actions/runs/\d+#artifacts"
)
HEADLINE = {
    "fixed": "Fixed, verified on a clean copy",
    "not_fixed": "Not fixed",
    "flaky_only": "Flaky only: no model call made",
    "unverified": "Not verified: the tests pass by exit code only",
    "usage_error": "Usage error",
    "environment_error": "Environment error",
    "interrupted": "Interrupted",
}


def render_summary(
    report: dict[str, Any],
    patch: str | None,
    *,
    page: str | None = None,
    artifacts: str | None = None,
) -> str:
    """The Markdown summary of a `worker ci` report (and the patch's text, when there is one);
    with `page`, a line naming the run's HTML page, linked to the run's `artifacts` where
    that is a GitHub Actions run's artifacts URL."""
    ci = report.get("ci") or {}
    tests = ci.get("tests") or []
    status = report["status"]
    nothing = status == "fixed" and not report.get("patch")
    title = "Nothing to fix: the tests pass" if nothing else HEADLINE.get(status, status)
    lines = [f"## worker: {title}", "", text(str(report["reason"])), ""]
    if page:
        where = (
            f"[this run's artifacts]({artifacts})"
            if artifacts and _ARTIFACTS.fullmatch(artifacts)
            else "this run's artifacts"
        )
        lines += [f"Step by step: {code(page)} (`worker show`) in {where}.", ""]
    real = [t for t in tests if t["kind"] == "failing"]
    flaky = [t for t in tests if t["kind"] == "flaky"]
    unknown = [t for t in tests if t["kind"] == "unknown"]
    if real:
        lines += ["### Failing tests (targeted)", ""]
        lines += [f"- {code(t['test_id'])} (failed {int(t['fails'])} of "
                  f"{int(t['fails']) + int(t['passes'])} re-runs)" for t in real]  # fmt: skip
        lines.append("")
    if flaky:
        lines += ["### Flaky tests (left alone)", "", "| test | passed | failed |", "|---|---|---|"]
        lines += [f"| {cell(t['test_id'])} | {int(t['passes'])} | {int(t['fails'])} |"
                  for t in flaky]  # fmt: skip
        reruns = int(ci.get("reruns") or 0)
        lines += ["", f"Counts are of {reruns} re-runs on the unchanged tree, each in a fresh "
                  "sandbox; CI saw each fail once.", ""]  # fmt: skip
    if unknown:
        lines += ["### Not in the repository (reported, not run)", ""]
        lines += [f"- {code(t['test_id'])}" for t in unknown]
        lines.append("")
    if patch:
        shown = patch if len(patch) <= MAX_DIFF_CHARS else patch[:MAX_DIFF_CHARS] + "\n[... cut]\n"
        lines += ["### The diff", "", *fenced(shown, info="diff"), ""]
    verdict = report.get("verdict") or {}
    cost = report.get("cost_usd")
    lines += [
        "### The run",
        "",
        "| | |",
        "|---|---|",
        f"| status | {cell(status)} (exit {int(report['exit_code'])}) |",
        f"| verified by | {cell(verdict.get('rule') or '-')} |",
        f"| model | {cell(report.get('model') or '-')} |",
        f"| steps (model calls) | {int(report['steps'])} |",
        f"| tokens | {int(report['tokens_in'])} in, {int(report['tokens_out'])} out |",
        f"| cost | {'unknown' if cost is None else f'${float(cost):.4f}'} |",
        f"| time | {float(report.get('durations', {}).get('total', 0)):.1f} s |",
        f"| commit | {cell(ci.get('head_sha') or '-')} |",
        "",
    ]
    return "\n".join(lines)


def code(value: object, *, limit: int = MAX_ID_CHARS) -> str:
    """An inline code span of `value` on one line, cut at `limit` characters: its backtick
    run is longer than any inside, so nothing in it ends it early.

    >>> code("a`b")
    '``a`b``'
    >>> code("`x")
    '`` `x ``'
    """
    one_line = _BLANKS.sub(" ", str(value)) or " "
    if len(one_line) > limit:
        one_line = one_line[: limit - 1] + "\u2026"
    ticks = "`" * (max((len(run) for run in _TICKS.findall(one_line)), default=0) + 1)
    # A space either side is stripped by the renderer; needed where the text starts or ends
    # with a backtick (or a space, which would be stripped instead).
    pad = " " if one_line[0] in "` " or one_line[-1] in "` " else ""
    return f"{ticks}{pad}{one_line}{pad}{ticks}"


def cell(value: object) -> str:
    """`code(value)` for a table cell: a `|` escaped, since GFM splits cells before it finds
    code spans (the backslash is taken out again inside the span)."""
    return code(value).replace("|", "\\|")


def text(value: str, *, limit: int = MAX_TEXT_CHARS) -> str:
    r"""Plain text on one line, every ASCII punctuation mark backslash-escaped: no emphasis,
    link, image, HTML, entity or block marker can come out of it (and no autolink, whose
    scheme's `:` or `www.`'s dot is escaped too).

    >>> print(text("[a](b) <i>"))
    \[a\]\(b\) \<i\>
    """
    one_line = _BLANKS.sub(" ", value).strip()
    if len(one_line) > limit:
        one_line = one_line[: limit - 1] + "\u2026"
    return _PUNCTUATION.sub(r"\\\1", one_line)


def fenced(body: str, *, info: str = "") -> list[str]:
    """A fenced code block: its fence a backtick run longer than any in `body`, so no line of
    it can close the block (a tilde line cannot close a backtick fence)."""
    body = body.replace("\x00", "\ufffd").rstrip("\n")
    fence = "`" * max(3, max((len(run) for run in _TICKS.findall(body)), default=0) + 1)
    return [f"{fence}{info}", body, fence]


def write_summary(
    out: Path,
    report: dict[str, Any],
    environ: Mapping[str, str] | None = None,
    *,
    secrets: Secrets = NO_SECRETS,
) -> Path:
    """Write out/summary.md from the report and fix.patch, `secrets` masked in both;
    out/page.html, when there, is named and linked to the run's artifacts (from GitHub
    Actions' variables in `environ`)."""
    report = secrets.mask_data(report)
    patch_path = report.get("patch")
    patch = Path(patch_path).read_text(encoding="utf-8") if patch_path else None
    patch = secrets.mask_data(patch)
    path = RunFolder(out).summary_path
    page = PAGE if (out / PAGE).is_file() else None
    markdown = render_summary(report, patch, page=page, artifacts=artifacts_url(environ or {}))
    path.write_text(markdown, encoding="utf-8")
    return path


def artifacts_url(environ: Mapping[str, str]) -> str | None:
    """The artifacts of this GitHub Actions run, from the runner's variables; None elsewhere."""
    server, repo, run = (environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY",
                                                   "GITHUB_RUN_ID"))  # fmt: skip
    if not (server and repo and run):
        return None
    url = f"{server.rstrip('/')}/{repo}/actions/runs/{run}#artifacts"
    return url if _ARTIFACTS.fullmatch(url) else None
