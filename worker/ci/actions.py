"""GitHub Actions' files: the step summary ($GITHUB_STEP_SUMMARY) and step outputs
($GITHUB_OUTPUT), written as the runner reads them; nothing when the variables are unset."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path


def append_step_summary(markdown: str, env: Mapping[str, str] | None = None) -> Path | None:
    """Append `markdown` to $GITHUB_STEP_SUMMARY when it is set; returns the file used."""
    target = (env if env is not None else os.environ).get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as f:
        f.write(markdown.rstrip("\n") + "\n")
    return Path(target)


def write_outputs(values: Mapping[str, str], env: Mapping[str, str] | None = None) -> Path | None:
    """Append `name=value` lines to $GITHUB_OUTPUT when it is set; a value with a line break
    uses the runner's `name<<DELIMITER` form, with a random delimiter it cannot contain."""
    target = (env if env is not None else os.environ).get("GITHUB_OUTPUT")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as f:
        for name, value in values.items():
            if "\n" in value or "\r" in value:
                delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
                f.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
            else:
                f.write(f"{name}={value}\n")
    return Path(target)


def ci_outputs(report: Mapping[str, object], out: Path) -> dict[str, str]:
    """The step outputs of `worker ci`: status, fixed, the patch's path, the cost."""
    ci = report.get("ci") or {}
    fixed = bool(report.get("patch")) and isinstance(ci, dict) and bool(ci.get("verified"))
    cost = report.get("cost_usd")
    return {
        "status": str(report["status"]),
        "fixed": "true" if fixed else "false",
        "patch": str(report.get("patch") or ""),
        "cost": "" if cost is None else f"{cost:.6f}",
        "out": str(out),
    }
