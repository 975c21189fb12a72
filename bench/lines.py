"""Given the bug's line, does the bundled model write its fix? Pointed samples alone, per task.

    python3 bench/lines.py TASKS RUNS... [--only ID ...] [--k 2] [--variant NAME ...] [--json F]

TASKS is a task file of bench/tasks/generate.py (its reference fixes name the bug's line); RUNS
are `worker eval --out` folders that ran those tasks: each task's first prompt (system and task
message, as its trace recorded them) is asked again here, followed by the pointed-sample prompt
of worker/search/prompts.py aimed at the bug's own line, pinned as `worker fix` pins it. No
sandbox and no test run: an answer counts as a fix when it parses to the same Python as the
reference line (a proxy: a different correct line counts as a miss).

The greedy answer (temperature 0) first, then K answers of each retry variant (VARIANTS): per
task, whether any answer was a fix; at the end, the totals and, per variant, how many of its
answers differ from the greedy one (`NAME_new`), and how many tasks each variant fixed within
its first 1, 2, ... K answers.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from policies.budgets import LOCAL_ANSWER_TOKENS  # noqa: E402
from tools.registry import ToolRegistry, default_tools  # noqa: E402
from worker.llm import bundled  # noqa: E402
from worker.llm.client import OpenAIModel  # noqa: E402
from worker.llm.types import CallSettings  # noqa: E402
from worker.search import prompts  # noqa: E402
from worker.search.suspects import MAX_TEXT, lines_around  # noqa: E402


def bug(patch: str) -> tuple[str, int, str, str] | None:
    """The reference fix's file, the bug's line number, the bug's line and the fixed one."""
    path, number, old, new = "", 0, None, None
    for line in patch.splitlines():
        if line.startswith("--- a/"):
            path = line[6:]
        elif line.startswith("@@"):
            number = int(line.split()[1].split(",")[0][1:]) - 1
        elif line.startswith("-") and not line.startswith("---") and old is None:
            number += 1
            old = line[1:]
        elif line.startswith("+") and not line.startswith("+++") and new is None:
            new = line[1:]
        elif line.startswith(" ") and old is None:
            number += 1
    if old is None or new is None:
        return None
    return path, number, old, new


def same_code(a: str, b: str) -> bool:
    """Whether two lines parse to the same Python (a header gets a body to parse)."""

    def tree(line: str) -> str | None:
        text = line.strip()
        for source in (text, text + " pass", "if 1:\n pass\n" + text + " pass"):
            try:
                return ast.dump(ast.parse(source))
            except SyntaxError:
                continue
        return None

    ta, tb = tree(a), tree(b)
    return ta is not None and ta == tb


def first_prompt(trace: Path) -> tuple[str, str, list[str]]:
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "prompt":
            return event["system"], event["task"], event["tools"]
    raise ValueError(f"{trace}: no prompt event")


CANDIDATES = 4  # lines asked for in one answer by the list variants
WHY_CHARS = 200  # the most a `why` may hold
MAX_ERROR = 300  # characters of the failing test's error repeated by the err variants
# How a retry of the same line is asked: (prompt, temperature) from the first prompt with its
# pointed hint last, the hint's fields and the greedy answer.
VARIANTS = {
    "warm": "the same prompt at 0.7 (the retry of arm R)",
    "told": "the greedy answer shown as tried (prompts.FOCUS_TRIED), at 0.7",
    "wrong": "the line said to be wrong, the greedy answer not shown (FOCUS_WRONG), at 0.7",
    "hot": "the same prompt at 1.0",
    "list0": f"one answer at 0 whose `new` is a list of {CANDIDATES} candidate lines (FOCUS_LIST)",
    "listhot": f"answers at 1.0 whose `new` is a list of {CANDIDATES} candidate lines",
    "why0": "one answer at 0 that says first, in `why`, what is wrong with the line (FOCUS_WHY)",
    "whyhot": "answers at 1.0 that say first, in `why`, what is wrong with the line",
    "err0": "one answer at 0, the failing test's error repeated under the line (FOCUS_ERROR)",
    "errhot": "answers at 1.0, the failing test's error repeated under the line",
}
FOCUS_LIST = """

Write {n} candidates for what this line should be, each different from the others, the \
likeliest first: `new` is a JSON list of {n} lines."""
FOCUS_WHY = """

First write in `why` one short sentence: what this line does wrong. Then write the corrected \
line in `new`."""
FOCUS_ERROR = """
The failing test says: {error}"""
FOCUS_TRIED = """

Already tried for this line, and it did not fix the failing tests:
{tried}
Write a different line."""
FOCUS_WRONG = """\
Look at line {where}: {text}
{around}The failing tests run it, and it is wrong. Replace that line with the corrected line: it \
must do something different from what it does now."""


def retry(name: str, base: list[dict[str, Any]], focus: dict[str, str], greedy: str):
    if name == "warm":
        return base, 0.7
    if name == "hot":
        return base, 1.0
    if name == "told":
        note = FOCUS_TRIED.format(tried=f"    {greedy.strip()}")
        return [*base[:-1], {"role": "user", "content": base[-1]["content"] + note}], 0.7
    wrong = FOCUS_WRONG.format(**focus)
    return [*base[:-1], {"role": "user", "content": wrong}], 0.7


def ask_list(
    model: OpenAIModel, messages: list[dict[str, Any]], specs, pin, temperature
) -> list[str]:
    """One answer whose `new` is a list of CANDIDATES lines (the schema says so); its lines."""
    note = FOCUS_LIST.format(n=CANDIDATES)
    asked = [*messages[:-1], {"role": "user", "content": messages[-1]["content"] + note}]
    body = model._request(asked, specs, "json_schema", temperature, ("replace",), {"replace": pin})
    for branch in body["response_format"]["json_schema"]["schema"]["oneOf"]:
        props = branch["properties"]["arguments"].get("properties", {})
        if "new" in props:
            many = {"type": "array", "items": {"type": "string"}}
            props["new"] = {**many, "minItems": CANDIDATES, "maxItems": CANDIDATES}
    completion, _ = model._send(body, None)
    try:
        new = json.loads(completion.choices[0].message.content or "")["arguments"]["new"]
    except (ValueError, KeyError, TypeError):
        return []
    return [str(line) for line in new] if isinstance(new, list) else [str(new)]


def ask_why(
    model: OpenAIModel, messages: list[dict[str, Any]], specs, pin, temperature
) -> tuple[str | None, str]:
    """One answer whose arguments start with a required `why` (the schema says so): its `new`
    and its `why`."""
    asked = [*messages[:-1], {"role": "user", "content": messages[-1]["content"] + FOCUS_WHY}]
    body = model._request(asked, specs, "json_schema", temperature, ("replace",), {"replace": pin})
    for branch in body["response_format"]["json_schema"]["schema"]["oneOf"]:
        arguments = branch["properties"]["arguments"]
        if "new" in arguments.get("properties", {}):
            why = {"type": "string", "maxLength": WHY_CHARS}
            arguments["properties"] = {"why": why, **arguments["properties"]}
            arguments["required"] = ["why", *arguments.get("required", [])]
    completion, _ = model._send(body, None)
    try:
        answer = json.loads(completion.choices[0].message.content or "")["arguments"]
        return str(answer["new"]), str(answer.get("why", ""))
    except (ValueError, KeyError, TypeError):
        return None, ""


def error_of(task_text: str) -> str:
    """The first failure's one-line error, as the first message shows it."""
    for line in task_text.splitlines():
        if line.startswith("FAILURE ") and ": " in line:
            return line.split(": ", 1)[1][:MAX_ERROR]
    return ""


def ask(model: OpenAIModel, messages: list[dict[str, Any]], specs, pin, temperature) -> str | None:
    reply = model.complete(
        messages,
        specs,
        CallSettings(temperature=temperature, only=("replace",), pins={"replace": pin}),
    )
    for call in reply.tool_calls:
        if call.name == "replace" and isinstance(call.arguments, dict):
            return str(call.arguments.get("new", ""))
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tasks", type=Path)
    parser.add_argument("runs", type=Path, nargs="+")
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--k", type=int, default=2, help="answers per retry variant")
    parser.add_argument("--variant", nargs="*", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--json", type=Path, help="write each task's answers here")
    args = parser.parse_args()
    cache = args.tasks.parent
    tasks = [json.loads(line) for line in args.tasks.read_text().splitlines() if line.strip()]
    registry = ToolRegistry(tools=default_tools("both"))
    totals: dict[str, int] = {"tasks": 0}
    rows = []
    with bundled.LocalServer(model_path=bundled.pull()) as server:
        model = OpenAIModel(
            model="local",
            base_url=server.base_url,
            tool_mode="json_schema",
            timeout_s=600.0,
            max_completion_tokens=LOCAL_ANSWER_TOKENS,  # as `worker fix` caps the bundled model
        )
        for task in tasks:
            tid = task["id"]
            if args.only and tid not in args.only:
                continue
            ref = cache / "reference" / f"{tid}.patch"
            traces = [r / "tasks" / tid / "fix" / "trace.jsonl" for r in args.runs]
            trace = next((t for t in traces if t.is_file()), traces[0])
            found = bug(ref.read_text()) if ref.is_file() else None
            if found is None or not trace.is_file():
                continue
            path, number, old, fixed = found
            if len(old.strip()) >= MAX_TEXT:
                continue
            system, task_text, names = first_prompt(trace)
            specs = [s for s in registry.specs() if s.name in names]
            text = (cache / task["repo"] / path).read_text().splitlines()
            focus = {
                "where": f"{path}:{number}",
                "text": old.strip(),
                "around": lines_around(text, number) + "\n",
            }
            hint = prompts.FOCUS.format(**focus)
            base = [
                {"role": "system", "content": system},
                {"role": "user", "content": task_text},
                {"role": "user", "content": hint},
            ]
            pin = {"path": path, "old": old.strip(), "line": number}
            greedy = ask(model, base, specs, pin, 0.0)
            row: dict[str, Any] = {"id": tid, "fixed": fixed.strip(), "greedy": greedy}
            hits = {"greedy": greedy is not None and same_code(greedy, fixed)}
            for name in args.variant:
                heat = 0.0 if name.endswith("0") else 1.0
                times = 1 if name.endswith("0") else args.k
                if name.startswith("why"):
                    pairs = [ask_why(model, base, specs, pin, heat) for _ in range(times)]
                    answers = [a for a, _ in pairs]
                    row[f"{name}_why"] = [w for _, w in pairs]
                elif name.startswith("err"):
                    note = FOCUS_ERROR.format(error=error_of(task_text))
                    told = [*base[:-1], {"role": "user", "content": base[-1]["content"] + note}]
                    answers = [ask(model, told, specs, pin, heat) for _ in range(times)]
                elif name.startswith("list"):
                    answers = [
                        a for _ in range(times) for a in ask_list(model, base, specs, pin, heat)
                    ]
                else:
                    prompt, temperature = retry(name, base, focus, greedy or "")
                    answers = [ask(model, prompt, specs, pin, temperature) for _ in range(args.k)]
                row[name] = answers
                good = [i for i, a in enumerate(answers) if a is not None and same_code(a, fixed)]
                hits[name] = bool(good)
                row[f"{name}_first"] = good[0] + 1 if good else None  # the answer that first fixed
                others = {(a or "").strip() for a in answers} - {(greedy or "").strip()}
                totals.setdefault(f"{name}_new", 0)
                totals[f"{name}_new"] += len(others)
            totals["tasks"] += 1
            for key, value in hits.items():
                totals[key] = totals.get(key, 0) + value
            print(
                f"{tid:50} "
                + " ".join(f"{k}={'Y' if v else '.'}" for k, v in hits.items())
                + f"  fix: {fixed.strip()[:50]}",
                flush=True,
            )
            rows.append({**row, "hits": hits})
    print(json.dumps(totals))
    for name in args.variant:  # tasks fixed within the first k answers (lines) of each variant
        firsts = [r[f"{name}_first"] for r in rows if r.get(f"{name}_first")]
        most = max((len(r[name]) for r in rows), default=0)  # a list variant's lines
        curve = [sum(f <= k for f in firsts) for k in range(1, most + 1)]
        print(f"{name}: tasks fixed within 1..{most} answers: {curve}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
