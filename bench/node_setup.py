"""Cold and warm set-up of JavaScript and TypeScript projects: `worker sandbox run-tests` twice on
a fresh clone of each repository of a corpus list, the first with no set-up image cached (a
cached one, which only an earlier run of this tree made, is removed first), the second finding
it.

    python3 bench/node_setup.py [NAME ...] [--list bench/corpus-node.toml]
        [--work /work/corpus-data/node-setup] [--setup-env NAME ...]

Per repository: the toolchain image (built now, or there already), the set-up's own seconds
cold (the install, fenced to the registry, committed as an image) and warm (the cache lookup),
the whole command's seconds each time, and the tests' counts. A markdown table on stdout and in
WORK/table.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:] = [str(ROOT), str(HERE)] + [p for p in sys.path if Path(p or ".").resolve() != HERE]

from corpus import Entry, GitFailed, checkout, load_list, worker_commit  # noqa: E402

_BUILT = re.compile(r"set-up done in ([\d.]+)s, cached as (\S+)")
_CACHED = re.compile(r"set-up cached: (\S+)")
_TOOLCHAIN = re.compile(r"image (worker-sandbox:\S+), (up to date|built once in [\d.]+ s)")


def run_tests(clone: Path, flags: list[str], timeout_s: float) -> dict[str, Any]:
    """One `worker sandbox run-tests --json`: seconds, the set-up lines read, the summary."""
    command = [sys.executable, "-m", "worker.cli", "sandbox", "run-tests", "--repo", str(clone)]
    started = time.monotonic()
    done = subprocess.run(
        [*command, *flags, "--json"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True, text=True, timeout=timeout_s,
    )  # fmt: skip
    seconds = round(time.monotonic() - started, 1)
    summary = None
    if "{" in done.stdout:
        try:
            summary = json.loads(done.stdout[done.stdout.index("{") :])
        except ValueError:
            pass
    built, cached, toolchain = _BUILT.search(done.stderr), _CACHED.search(done.stderr), None
    if found := _TOOLCHAIN.search(done.stderr):
        toolchain = f"{found.group(1)} {found.group(2)}"
    lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
    return {
        "seconds": seconds,
        "exit_code": done.returncode,
        "setup_s": float(built.group(1)) if built else None,
        "image": (built.group(2) if built else cached.group(1) if cached else None),
        "cached": cached is not None,
        "toolchain": toolchain,
        "summary": summary,
        "error": next((ln for ln in reversed(lines) if ln.startswith("worker:")), ""),
    }


def measure(entry: Entry, work: Path, *, flags: list[str], timeout_s: float) -> dict[str, Any]:
    """Cold then warm on one fresh clone of `entry`."""
    clone = work / entry.name / "box"
    try:
        checkout(entry, clone)
    except GitFailed as exc:
        return {"name": entry.name, "error": str(exc)}
    cold = run_tests(clone, flags, timeout_s)
    if cold["cached"] and cold["image"]:
        subprocess.run(["docker", "rmi", cold["image"]], capture_output=True, check=False)
        cold = run_tests(clone, flags, timeout_s)
    warm = run_tests(clone, flags, timeout_s)
    return {"name": entry.name, "packaging": entry.packaging, "cold": cold, "warm": warm}


def _counts(run: dict[str, Any]) -> str:
    summary = run.get("summary") or {}
    counts = summary.get("counts")
    if not counts:
        return (run.get("error") or summary.get("headline") or "no summary")[:120]
    shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    return shown + ("" if summary.get("passed") else " (not a pass)")


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| project | toolchain image (cold run) | set-up cold s | run cold s | set-up warm "
        "| run warm s | tests (warm) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        if "cold" not in row:
            lines.append(f"| {row['name']} | {row.get('error', '')} | | | | | |")
            continue
        cold, warm = row["cold"], row["warm"]
        setup_cold = "" if cold["setup_s"] is None else f"{cold['setup_s']:.1f}"
        setup_warm = "cached" if warm["cached"] else (warm["error"] or "rebuilt")[:60]
        cells = [row["name"], cold["toolchain"] or "", setup_cold, f"{cold['seconds']:.0f}",
                 setup_warm, f"{warm['seconds']:.0f}", _counts(warm)]  # fmt: skip
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="entries of the list (default: all)")
    parser.add_argument("--list", type=Path, default=HERE / "corpus-node.toml")
    parser.add_argument("--work", type=Path, default=Path("/work/corpus-data/node-setup"))
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--setup-env", action="append", default=[], metavar="NAME")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    entries = load_list(args.list, args.mirror.resolve())
    if args.names:
        entries = [e for e in entries if e.name in args.names]
    work = args.work.resolve()
    flags = [f for name in args.setup_env for f in ("--setup-env", name)]
    rows = []
    for entry in entries:
        print(f"{entry.name}: cold, then warm", file=sys.stderr, flush=True)
        rows.append(measure(entry, work, flags=flags, timeout_s=args.timeout))
    work.mkdir(parents=True, exist_ok=True)
    (work / "results.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    text = table(rows) + f"\n\nworker {worker_commit()}, flags: {' '.join(flags) or 'none'}"
    (work / "table.md").write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
