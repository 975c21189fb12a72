"""The regex scan behind `search`, run as a separate process so a runaway pattern can be killed.

Standard library only: it runs as `python -I -S search_scan.py` with a JSON request on stdin and
writes one JSON line per file with matches, then a final line with counts. Lines are cut to
`max_line` characters before matching and the scan stops at `budget_s`; the parent kills the
process if a single match runs past that (catastrophic backtracking).
"""

import json
import re
import sys
import time


def scan(request, out):
    pattern = re.compile(request["pattern"])
    deadline = time.monotonic() + request["budget_s"]
    max_line, keep = request["max_line"], request["keep_per_file"]
    binary = big = 0
    stopped = False
    for rel, real in request["files"]:
        if time.monotonic() > deadline:
            stopped = True
            break
        try:
            with open(real, "rb") as f:
                data = f.read(request["max_bytes"] + 1)
        except OSError:
            continue
        if len(data) > request["max_bytes"]:
            big += 1
            continue
        if b"\0" in data[:8192]:
            binary += 1
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            binary += 1
            continue
        count, hits = 0, []
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line[:max_line]):
                count += 1
                if len(hits) < keep:
                    hits.append([number, line[:200]])
            if number % 256 == 0 and time.monotonic() > deadline:
                stopped = True
                break
        if count:
            out.write(json.dumps({"file": rel, "count": count, "hits": hits}) + "\n")
            out.flush()
        if stopped:
            break
    out.write(json.dumps({"done": True, "binary": binary, "big": big, "stopped": stopped}) + "\n")


if __name__ == "__main__":
    scan(json.loads(sys.stdin.read()), sys.stdout)
