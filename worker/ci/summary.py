"""summary.md: the run in Markdown, for the CI run page and the pull request's body."""

from __future__ import annotations

from pathlib import Path
from typing import Any

MAX_DIFF_CHARS = 60_000  # GitHub caps a step summary at 1 MiB and a PR body at 65,536 chars
HEADLINE = {
    "fixed": "Fixed, verified on a clean copy",
    "not_fixed": "Not fixed",
    "flaky_only": "Flaky only: no model call made",
    "unverified": "Not verified: the tests pass by exit code only",
    "usage_error": "Usage error",
    "environment_error": "Environment error",
    "interrupted": "Interrupted",
}


def render_summary(report: dict[str, Any], patch: str | None) -> str:
    """The Markdown summary of a `worker ci` report (and the patch's text, when there is one)."""
    ci = report.get("ci") or {}
    tests = ci.get("tests") or []
    status = report["status"]
    nothing = status == "fixed" and not report.get("patch")
    title = "Nothing to fix: the tests pass" if nothing else HEADLINE.get(status, status)
    lines = [f"## worker: {title}", "", f"{report['reason']}", ""]
    real = [t for t in tests if t["kind"] == "failing"]
    flaky = [t for t in tests if t["kind"] == "flaky"]
    unknown = [t for t in tests if t["kind"] == "unknown"]
    if real:
        lines += ["### Failing tests (targeted)", ""]
        lines += [f"- `{t['test_id']}` (failed {t['fails']} of {t['fails'] + t['passes']} re-runs)"
                  for t in real]  # fmt: skip
        lines.append("")
    if flaky:
        lines += ["### Flaky tests (left alone)", "", "| test | passed | failed |", "|---|---|---|"]
        lines += [f"| `{t['test_id']}` | {t['passes']} | {t['fails']} |" for t in flaky]
        lines += ["", f"Counts are of {ci.get('reruns')} re-runs on the unchanged tree, each in a "
                  "fresh sandbox; CI saw each fail once.", ""]  # fmt: skip
    if unknown:
        lines += ["### Not in the repository (reported, not run)", ""]
        lines += [f"- `{t['test_id']}`" for t in unknown]
        lines.append("")
    if patch:
        shown = patch if len(patch) <= MAX_DIFF_CHARS else patch[:MAX_DIFF_CHARS] + "\n[... cut]\n"
        fence = "````" if "```" in shown else "```"
        lines += ["### The diff", "", f"{fence}diff", shown.rstrip("\n"), fence, ""]
    verdict = report.get("verdict") or {}
    cost = report.get("cost_usd")
    lines += [
        "### The run",
        "",
        "| | |",
        "|---|---|",
        f"| status | `{status}` (exit {report['exit_code']}) |",
        f"| verified by | {verdict.get('rule', '-')} |",
        f"| model | {report.get('model') or '-'} |",
        f"| steps (model calls) | {report['steps']} |",
        f"| tokens | {report['tokens_in']} in, {report['tokens_out']} out |",
        f"| cost | {'unknown' if cost is None else f'${cost:.4f}'} |",
        f"| time | {report.get('durations', {}).get('total', 0):.1f} s |",
        f"| commit | `{ci.get('head_sha') or '-'}` |",
        "",
    ]
    return "\n".join(lines)


def write_summary(out: Path, report: dict[str, Any]) -> Path:
    """Write out/summary.md from the report and fix.patch."""
    patch_path = report.get("patch")
    patch = Path(patch_path).read_text(encoding="utf-8") if patch_path else None
    path = out / "summary.md"
    path.write_text(render_summary(report, patch), encoding="utf-8")
    return path
