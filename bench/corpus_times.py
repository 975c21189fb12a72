"""Set-up and run seconds of `bench/corpus.py` runs side by side: before/after, cold/warm.

    python3 bench/corpus_times.py --list bench/corpus-go.toml \\
        "before cold=DIR1" "before warm=DIR2" "after cold=DIR3" "after warm=DIR4"

Each DIR is a `--work` folder of `bench/corpus.py --sandbox-only` (WORK/NAME/sandbox.json). A
cell is `set-up s / run s (passed)`: the set-up's own line ("set-up done in"), `cached` where
it was a tag lookup, `-` where none ran (a project with nothing to install, or a run that
failed before it); the run is the whole `run-tests`; toolchain images a run had to build first
are added as `+img N s`. The last row holds the medians: of the set-ups that ran (`cached` where
every one was a tag lookup) and of the runs that gave a per-test report.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _read(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _passed(data: dict[str, Any]) -> str:
    summary = data.get("summary") or {}
    counts = summary.get("counts") or {}
    if counts:
        failed = counts.get("failed", 0) + counts.get("errors", 0)
        return f"{counts.get('passed', 0)} passed" + (f", {failed} failed" if failed else "")
    error = (data.get("error") or "no result").split(" of /")[0]
    return "no report" if summary else error[:48]


def cell(data: dict[str, Any] | None) -> str:
    if data is None:
        return "not run"
    setup = "cached" if data.get("setup_cached") else data.get("setup_s")
    setup_text = setup if isinstance(setup, str) else "-" if setup is None else f"{setup:.1f}"
    built = data.get("images_built_s") or 0
    image = f" +img {built:.0f} s" if built else ""
    return f"{setup_text} / {data.get('duration_s') or 0:.1f}{image} ({_passed(data)})"


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "-"


def table(names: list[str], sides: list[tuple[str, Path]]) -> str:
    lines = ["| project | " + " | ".join(label for label, _ in sides) + " |"]
    lines.append("|---" * (len(sides) + 1) + "|")
    setups: list[list[float]] = [[] for _ in sides]
    runs: list[list[float]] = [[] for _ in sides]
    cached = [0 for _ in sides]
    for name in names:
        row = []
        for i, (_, folder) in enumerate(sides):
            data = _read(folder / name / "sandbox.json")
            row.append(cell(data))
            if data is None:
                continue
            if data.get("setup_cached"):
                cached[i] += 1
            elif data.get("setup_s") is not None:
                setups[i].append(float(data["setup_s"]))
            if data.get("duration_s") and (data.get("summary") or {}).get("counts"):
                runs[i].append(float(data["duration_s"]))
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    medians = [
        f"{_median(s) if s or not c else 'cached'} / {_median(r)} ({len(r)} with a report)"
        for s, r, c in zip(setups, runs, cached, strict=True)
    ]
    lines.append("| median: set-up that ran / run | " + " | ".join(medians) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", type=Path, required=True, help="the corpus list (its order)")
    parser.add_argument("sides", nargs="+", metavar="LABEL=DIR")
    args = parser.parse_args()
    with args.list.open("rb") as handle:
        names = [repo["name"] for repo in tomllib.load(handle)["repo"]]
    sides = []
    for side in args.sides:
        label, _, folder = side.partition("=")
        if not folder:
            raise SystemExit(f"{side}: expected LABEL=DIR")
        sides.append((label, Path(folder)))
    print(table(names, sides))
    return 0


if __name__ == "__main__":
    sys.exit(main())
