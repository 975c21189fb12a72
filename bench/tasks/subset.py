"""A smaller task file from the generated one: the examples and the first N tasks of each project
(relative repo paths keep working: it is written beside the source file).

    python3 bench/tasks/subset.py bench/tasks/cache/tasks.jsonl --per-project 2
    python3 bench/tasks/subset.py bench/tasks/cache/tasks.jsonl --per-project 2 --skip 2

With --skip K: the K tasks after the first K of each project, no examples (the held-out set
of docs/evaluation.md: holdout-K.jsonl, beside TASKS).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", type=Path)
    parser.add_argument("--per-project", type=int, default=1)
    parser.add_argument("--skip", type=int, default=0, help="tasks of each project left out first")
    parser.add_argument("--out", type=Path, help="default: subset-N.jsonl beside TASKS")
    args = parser.parse_args()
    taken: dict[str, int] = {}
    seen: dict[str, int] = {}
    lines = []
    for line in args.tasks.read_text(encoding="utf-8").splitlines():
        task = json.loads(line)
        # Generated ids are PROJECT-FUNCTION-LINE-KIND; the examples have no test_cmd.
        project = task["id"].rsplit("-", 3)[0] if "test_cmd" in task else "examples"
        if project == "examples" and args.skip:
            continue
        if project != "examples":
            seen[project] = seen.get(project, 0) + 1
            if seen[project] <= args.skip or taken.get(project, 0) >= args.per_project:
                continue
            taken[project] = taken.get(project, 0) + 1
        lines.append(line)
    name = f"holdout-{args.skip}.jsonl" if args.skip else f"subset-{args.per_project}.jsonl"
    out = args.out or args.tasks.with_name(name)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} tasks: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
