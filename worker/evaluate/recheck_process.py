"""`python -m worker.evaluate.recheck_process WORK`: one re-check as its own process on a cluster
node (worker/evaluate/on_node.py), so that it dies with the Ray worker that started it.

Reads WORK/request.json ({"task": ..., "patch": ..., "work": ...}), writes WORK/answer.json (the
re-check's verdict as a dict).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from worker.evaluate.on_node import task_from_wire
from worker.evaluate.recheck import recheck


def main(argv: list[str]) -> int:
    work = Path(argv[0])
    request = json.loads((work / "request.json").read_text(encoding="utf-8"))
    task = task_from_wire(request["task"])
    checked = recheck(task, Path(task.repo), request["patch"], work_dir=Path(request["work"]))
    (work / "answer.json").write_text(json.dumps(checked.to_dict()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
