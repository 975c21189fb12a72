"""The HTML page of one run: verdict, timeline, the tests before any change and at the end
(each failing test's text as the model was shown it), the first message the model got, steps
(samples and second choices grouped), the final patch. Self-contained (inline CSS, no script,
no font, no request; a Content-Security-Policy that allows none), and every string from the run
escaped: a trace is hostile input (a test may print `<script>`)."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from worker.show.failures import Shown, baseline_shown, last_shown
from worker.show.view import RunView, Step

LONG_LINES = 20  # an observation longer than this starts collapsed
MAX_SHOWN = 200_000  # characters of one text shown at most (the rest is in the run's files)
MAX_FAILURE = 20_000  # characters of one failing test's text shown at most
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = "\n".join(
    [
        "body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em}",
        "h1{font-size:1.5em;margin:.2em 0}",
        "h2{font-size:1.15em;margin:1.2em 0 .4em;border-bottom:1px solid #ddd}",
        "pre{background:#f6f8fa;padding:.5em;white-space:pre-wrap;word-break:break-all}",
        ".verdict{padding:.6em 1em;border-radius:6px;margin:.5em 0}",
        ".good{background:#e6f4ea}",
        ".bad{background:#fdecea}",
        ".other{background:#fff4e5}",
        ".step{border:1px solid #ddd;border-radius:6px;margin:.6em 0;padding:.4em .8em}",
        ".sample{border-left:4px solid #8ab4f8}",
        ".second{margin-left:1.5em;border:1px dashed #bbb;padding:.3em .6em}",
        ".meta{color:#666;font-size:.9em}",
        ".add{color:#116329;background:#e6ffec}",
        ".del{color:#82071e;background:#ffebe9}",
        ".hunk{color:#0550ae}",
        ".note{color:#555;margin:.2em 0}",
        ".missing{background:#fff4e5;padding:.5em 1em}",
        "details.failure{margin:.3em 0}",
        "details.failure>summary{cursor:pointer}",
        ".bar{display:flex;height:1.4em;border-radius:4px;overflow:hidden;margin:.3em 0}",
        ".bar span{display:block;height:100%}",
        "table{border-collapse:collapse}",
        "td,th{border:1px solid #ddd;padding:.2em .5em}",
    ]
)
COLOURS = {"setup": "#c6dafc", "tests": "#fbd38d", "model start": "#c4f1f9", "model": "#9ae6b4",
           "tools": "#d6bcfa", "verification": "#feb2b2", "other": "#e2e8f0"}  # fmt: skip


def esc(value: object, limit: int = MAX_SHOWN) -> str:
    """Text for HTML, quotes included; cut at `limit` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n[... {len(text) - limit} more characters cut]"
    return escape(text, quote=True)


def document(title: str, body: list[str]) -> str:
    """A whole page around `body`."""
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title, 200)}</title><style>{STYLE}</style></head><body>",
        *body, "</body></html>",
    ])  # fmt: skip


def render_run(view: RunView) -> str:
    """The page of one `worker fix` or `worker ci` run."""
    header = view.header
    repo = (view.report.repo if view.report else None) or header.repo or str(view.folder)
    body = [f"<h1>worker: {esc(repo, 300)}</h1>", _verdict(view)]
    if view.missing:
        body.append('<div class="missing" id="missing"><b>Not in this run\'s outputs:</b><ul>')
        body += [f"<li>{esc(m)}</li>" for m in view.missing]
        body.append("</ul></div>")
    body += _facts(view) + _timeline(view) + _setup(view) + _baseline(view)
    body += _first_message(view) + _at_the_end(view) + _ci(view)
    steps = view.steps()
    body.append(f'<h2 id="steps">Steps ({sum(s.call is not None for s in steps)} model calls)</h2>')
    body += [_step(s) for s in steps] or ['<p class="note">No step was recorded.</p>']
    body.append('<h2 id="patch">The final patch</h2>')
    body.append(_diff(view.patch) if view.patch else '<p class="note">No patch was kept.</p>')
    return document(f"worker: {repo}", body)


def _verdict(view: RunView) -> str:
    report = view.report
    if report is None:
        verification = view.first("verification")
        said = "unknown: the run left no report.json"
        if verification is not None:
            said += "; its last verification " + (
                "passed" if verification.get("passed") else "failed"
            )
        return f'<div class="verdict other" id="verdict"><b>Verdict: {esc(said)}</b></div>'
    status = str(report.status)
    kind = "good" if status == "fixed" else "bad" if status == "not_fixed" else "other"
    verdict = report.verdict or {}
    rule = f" (rule: {esc(verdict.get('rule'))})" if verdict.get("rule") else ""
    return (
        f'<div class="verdict {kind}" id="verdict"><b>Verdict: {esc(status)}</b> '
        f"(exit {esc(report.exit_code)}){rule}<br>{esc(report.reason)}</div>"
    )


def _facts(view: RunView) -> list[str]:
    report, header = view.report, view.header
    rows = [
        ("model", (report.model if report else None) or header.model),
        ("steps (model calls)", report.steps if report else None),
        ("tokens", f"{report.tokens_in} in, {report.tokens_out} out" if report else "? in, ? out"),
        ("time", f"{((report.durations if report else None) or {}).get('total', '?')} s"),
        ("test command", report.test_cmd if report else None),
        ("tree (sha256)", header.tree),
        ("command", " ".join(header.argv) or None),
    ]
    cells = [f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows if v is not None]
    return ['<h2>The run</h2><table id="facts">', *cells, "</table>"]


def _timeline(view: RunView) -> list[str]:
    """Where the time went: set-up, tests, the model server's start (the bundled model's),
    model, tools, verification, the rest."""
    durations = (view.report.durations if view.report else None) or {}
    calls = [e for e in view.events if e.get("type") == "model_call"]
    tools = [e for e in view.events if e.get("type") == "tool_call"]
    checks = [e for e in view.events if e.get("type") == "verification"]
    parts = {
        "setup": _num(durations.get("setup")),
        "tests": _num(durations.get("tests_before")) + _num(durations.get("locate")),
        "model start": _num(durations.get("model_start")),
        "model": _num(durations.get("model")) or sum(_num(e.get("duration_s")) for e in calls),
        "tools": sum(_num(e.get("duration_s")) for e in tools),
        "verification": sum(_num(e.get("duration_s")) for e in checks),
    }
    total = _num(durations.get("total")) or max((_num(e.get("t")) for e in view.events), default=0)
    parts["other"] = max(0.0, total - sum(parts.values()))
    whole = sum(parts.values()) or 1.0
    spans = [
        f'<span style="width:{100 * v / whole:.2f}%;background:{COLOURS[k]}" '
        f'title="{k}: {v:.1f} s"></span>' for k, v in parts.items() if v > 0
    ]  # fmt: skip
    legend = ", ".join(f"{k} {v:.1f} s" for k, v in parts.items() if v > 0)
    return ['<h2>Where the time went</h2><div class="bar" id="timeline">', *spans, "</div>",
            f'<p class="meta">{esc(legend or "no durations recorded")}</p>']  # fmt: skip


def _setup(view: RunView) -> list[str]:
    """What set-up ran, how it went, and its whole log (the last MAX_SHOWN characters)."""
    setup = (view.report.setup if view.report else None) or {}
    if not setup and view.setup_log is None:
        return []
    rows = [
        ("source", setup.get("source")),
        ("command", setup.get("command")),
        ("image", setup.get("image")),
        ("cached", setup.get("cached")),
        ("version given", setup.get("version")),
        ("error", setup.get("error")),
    ]
    cells = [f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows if v is not None]
    out = ['<h2 id="setup">Set-up</h2><table id="setup-facts">', *cells, "</table>"]
    if view.setup_log is not None:
        log = view.setup_log[-MAX_SHOWN:]
        lines = view.setup_log.count("\n")
        out.append(
            f"<details><summary>the set-up's whole log ({lines} lines)</summary>"
            f'<pre id="setup-log">{esc(log)}</pre></details>'
        )
    return out


def _baseline(view: RunView) -> list[str]:
    """The tests before any change: the headline, and each failing test's text as the first
    message showed it."""
    before = (view.report.tests_before if view.report else None) or {}
    event = view.first("tests_before") or {}
    out = ['<h2 id="tests-before">Tests before any change</h2>']
    headline = before.get("headline") or event.get("headline")
    out.append(f"<p>{esc(headline or 'not recorded: the run ended before the tests ran')}</p>")
    failing = [str(t) for t in before.get("failing") or []]
    out += _failures(failing, baseline_shown(view.events, failing))
    return out + _log(view, "tests_before")


def _at_the_end(view: RunView) -> list[str]:
    """The last test run: its headline, and each failing test's text as the model last saw it."""
    if view.report is None:
        return []
    after = view.report.tests_after
    out = ['<h2 id="tests-after">Tests at the end of the run</h2>']
    if not isinstance(after, dict):
        said = after if isinstance(after, str) else "not recorded: no test ran after a change"
        return [*out, f"<p>{esc(said)}</p>"]
    out.append(f"<p>{esc(after.get('headline') or 'no headline recorded')}</p>")
    failing = [str(t) for t in after.get("failing") or []]
    out += _failures(failing, last_shown(view.events, failing))
    return out + _log(view, "tests_after")


def _failures(failing: list[str], shown: Shown | None) -> list[str]:
    """Each failing test with the text the model was shown of it (collapsed when long); the
    ids alone where the trace holds no such text."""
    if not failing and shown is None:
        return []
    if shown is None:
        items = "".join(f"<li><code>{esc(t, 500)}</code></li>" for t in failing)
        return [f"<ul>{items}</ul>"] if items else []
    if not shown.blocks:  # no per-test report: the output the model was shown, whole
        out = [f'<p class="meta">What the model was shown, in {esc(shown.where)}:</p>']
        if failing:
            out.append("<ul>" + "".join(f"<li><code>{esc(t, 500)}</code></li>" for t in failing))
            out.append("</ul>")
        return [*out, _collapsed(shown.text.strip("\n"), "the output")]
    out = [f'<div class="failures"><p class="meta">Each failing test as the model was shown it, '
           f"in {esc(shown.where)}:</p>"]  # fmt: skip
    for test_id in failing:
        block = shown.blocks.get(test_id)
        if block is None:
            out.append(f'<p class="note"><code>{esc(test_id, 500)}</code>: not shown to the '
                       "model (its text is in the log below)</p>")  # fmt: skip
        else:
            out.append(_collapsed(block, None))
    return [*out, "</div>"]


def _collapsed(text: str, label: str | None) -> str:
    """A text in a <details>: open when short; its summary is `label` or the text's first line
    (a failure's `FAILURE id: message`), so that a collapsed one still says what failed."""
    lines = text.count("\n") + 1
    first = text.split("\n", 1)[0]
    summary = esc(label, 300) if label else f"<code>{esc(first, 500)}</code>"
    opened = " open" if lines < LONG_LINES and len(text) <= MAX_FAILURE else ""
    return (f'<details class="failure"{opened}><summary>{summary} '
            f'<span class="meta">({lines} lines)</span></summary>'
            f"<pre>{esc(text, MAX_FAILURE)}</pre></details>")  # fmt: skip


def _log(view: RunView, key: str) -> list[str]:
    """The end of a test run's whole output, collapsed, where the run's folder keeps it."""
    if key not in view.test_logs:
        return []
    name, text = view.test_logs[key]
    return [f"<details><summary>the whole output: the end of {esc(name, 300)}</summary>"
            f"<pre>{esc(text)}</pre></details>"]  # fmt: skip


def _first_message(view: RunView) -> list[str]:
    """The first message the model got (the goal, the failing tests, the files, the code they
    use), and the system prompt before it."""
    prompt = view.first("prompt")
    if prompt is None or not isinstance(prompt.get("task"), str):
        return []
    task = str(prompt["task"])
    lines = task.count("\n") + 1
    opened = " open" if lines < LONG_LINES else ""
    out = ['<h2 id="first-message">The first message the model got</h2>',
           f'<details id="first-message-text"{opened}><summary>the user message '
           f'<span class="meta">({lines} lines, {len(task)} characters)</span></summary>'
           f"<pre>{esc(task)}</pre></details>"]  # fmt: skip
    if isinstance(prompt.get("system"), str):
        tools = ", ".join(str(t) for t in prompt.get("tools") or [])
        out.append(f"<details><summary>the system prompt before it (tools: {esc(tools, 500)})"
                   f"</summary><pre>{esc(prompt['system'])}</pre></details>")  # fmt: skip
    return out


def _ci(view: RunView) -> list[str]:
    tests = ((view.report.ci if view.report else None) or {}).get("tests") or []
    if not tests:
        return []
    rows = "".join(
        f"<tr><td><code>{esc(t.get('test_id'), 500)}</code></td><td>{esc(t.get('kind'))}</td>"
        f"<td>{esc(t.get('passes'))}</td><td>{esc(t.get('fails'))}</td></tr>" for t in tests
    )  # fmt: skip
    head = "<tr><th>test</th><th>kind</th><th>passed</th><th>failed</th></tr>"
    return ['<h2>What CI saw failing, triaged</h2><table id="ci">', head, rows, "</table>"]


def _step(step: Step) -> str:
    call = step.call
    if call is None:
        head = "<b>Before the first model call</b>"
    else:
        sample = f" · sample {step.sample}" if step.sample is not None else ""
        head = (
            f"<b>Step {esc(call.get('step'))}</b>{esc(sample)} "
            f'<span class="meta">{esc(call.get("prompt_tokens"))} prompt + '
            f"{esc(call.get('completion_tokens'))} completion tokens, "
            f"{esc(call.get('duration_s'))} s, mode {esc(call.get('mode'))}</span>"
        )
        if call.get("content"):
            head += f"<pre>{esc(call.get('content'))}</pre>"
    parts = [f'<section class="step{" sample" if step.sample else ""}">{head}']
    for event in step.events:
        parts.append(_event(event))
    parts.append("</section>")
    return "\n".join(parts)


def _event(event: dict[str, Any]) -> str:
    kind = event.get("type")
    if kind == "tool_call":
        return _tool(event)
    fields = {k: v for k, v in event.items() if k not in ("type", "t")}
    text = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, default=str)}"
                     for k, v in fields.items())  # fmt: skip
    return f'<p class="note"><b>{esc(kind)}</b>: {esc(text, 2000)}</p>'


def _tool(event: dict[str, Any]) -> str:
    second = event.get("second")
    args = event.get("arguments")
    edit = _edit_of(str(event.get("name")), args)
    shown = _diff(edit) if edit is not None else f"<pre>{esc(args)}</pre>"
    observation = str(event.get("observation", ""))
    body = f"<pre>{esc(observation)}</pre>"
    if observation.count("\n") >= LONG_LINES:
        first = observation.splitlines()[0] if observation else ""
        lines = observation.count("\n") + 1
        body = f"<details><summary>{esc(first, 300)} ({lines} lines)</summary>{body}</details>"
    ok = "ok" if event.get("ok") else "failed"
    refusals = "; ".join(
        str(r.get("rule")) for r in event.get("refusals") or [] if isinstance(r, dict)
    )
    meta = f"{ok}{', refused: ' + refusals if refusals else ''}, {event.get('duration_s')} s"
    title = f"second choice {second}: " if second else ""
    cls = ' class="second"' if second else ""
    return (f"<div{cls}><p><b>{esc(title)}{esc(event.get('name'))}</b> "
            f'<span class="meta">{esc(meta)}</span></p>{shown}{body}</div>')  # fmt: skip


def _edit_of(name: str, args: Any) -> str | None:
    """An edit call's change as a diff: apply_patch's patch, replace's old and new lines."""
    if not isinstance(args, dict):
        return None
    if name == "apply_patch" and isinstance(args.get("patch"), str):
        return str(args["patch"])
    if name == "replace" and isinstance(args.get("old"), str) and isinstance(args.get("new"), str):
        head = f"--- {args.get('path')}\n+++ {args.get('path')}\n"
        old = "".join(f"-{line}\n" for line in str(args["old"]).splitlines())
        return head + old + "".join(f"+{line}\n" for line in str(args["new"]).splitlines())
    return None


def _diff(patch: str) -> str:
    lines = []
    for line in patch[:MAX_SHOWN].splitlines():
        cls = ("hunk" if line.startswith("@@") else "add" if line.startswith("+")
               else "del" if line.startswith("-") else "")  # fmt: skip
        lines.append(f'<span class="{cls}">{esc(line)}</span>' if cls else esc(line))
    return '<pre class="diff">' + "\n".join(lines) + "</pre>"


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0
