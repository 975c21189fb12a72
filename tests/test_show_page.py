"""`worker show` end to end: real `worker fix` runs (scripted model, real sandbox) drawn as one
HTML page, loaded by a real headless browser (Debian's chromium): what the page shows, that a
trace holding `<script>` and `<img onerror>` runs nothing, and that runs ended by a budget, an
environment error, a signal or a kill still render and say what is missing."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.test_fix_cli import BUGGY, GOOD_PATCH, fix_command, fix_env, run_fix
from worker.llm.scripted_server import ScriptedServer, tool_call

pytestmark = pytest.mark.docker

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PWNED = "document.title='PWNED'"
HOSTILE = f'<script>{PWNED}</script><img src=x onerror="{PWNED}">'
HOSTILE_TEST = (
    "from calc import mean\n\n\ndef test_mean():\n"
    f"    print({HOSTILE!r})\n    assert mean([2, 4, 6]) == 4, {HOSTILE!r}\n"
)


def browser(page: Path, profile: Path, *, screenshot: Path | None = None) -> str:
    """The DOM of `page` after a real headless chromium loaded it (and its screenshot)."""
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (apt-get install chromium; .ci/run does)")
    base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={profile}", "--hide-scrollbars", "--window-size=1100,1500",
    ]  # fmt: skip
    if screenshot is not None:
        shot = subprocess.run([*base, f"--screenshot={screenshot}", page.as_uri()],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert shot.returncode == 0 and screenshot.stat().st_size > 10_000, shot.stderr[-2000:]
    proc = subprocess.run([*base, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


class Elements(HTMLParser):
    """Every element's tag in a DOM, and its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_title:
            self.title += data


def parsed(dom: str) -> Elements:
    elements = Elements()
    elements.feed(dom)
    return elements


def show(folder: Path) -> Path:
    proc = subprocess.run([sys.executable, "-m", "worker.cli", "show", str(folder)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    page = Path(proc.stdout.strip().removeprefix("page: "))
    assert page.is_file()
    return page


def test_page_of_a_hostile_run_shows_everything_and_runs_nothing(make_repo, tmp_path):
    repo = make_repo({**BUGGY, "tests/test_calc.py": HOSTILE_TEST})
    script = [
        tool_call("run_tests", {}, content=f"let me look {HOSTILE}"),
        tool_call("apply_patch", {"patch": GOOD_PATCH + f"# {HOSTILE}\n"}),
    ]
    with ScriptedServer(script=script) as server:
        proc = run_fix(repo, tmp_path / "out", base_url=server.base_url)
        server.assert_all_used()
    assert proc.returncode == 0, proc.stderr
    trace = (tmp_path / "out" / "trace.jsonl").read_text()
    assert "<script>" in trace and "onerror" in trace  # the trace holds it, as the test printed
    page = show(tmp_path / "out")
    shot = tmp_path / "page.png"
    dom = browser(page, tmp_path / "profile", screenshot=shot)
    if keep := os.environ.get("WORKER_KEEP_SCREENSHOT"):  # the README's picture: docs/show-page.png
        shutil.copyfile(shot, keep)
    elements = parsed(dom)
    words = " ".join(elements.text)
    # Nothing from the trace became an element, and no script ran.
    assert "script" not in elements.tags and "img" not in elements.tags
    assert "PWNED" not in elements.title and elements.title.startswith("worker: ")
    assert HOSTILE in words  # shown, as text
    # The verdict, the baseline's failing test, each step, each diff.
    assert "Verdict: fixed" in words and "tests/test_calc.py::test_mean" in words
    assert all(f"Step {n}" in words for n in (1, 2))
    assert "+    return sum(values) / len(values)" in words
    assert "Tests after this patch" in words and "Where the time went" in words
    # An eval's index page links this run's page.
    eval_out = tmp_path / "eval"
    shutil.copytree(tmp_path / "out", eval_out / "tasks" / "calc-1" / "fix")
    (eval_out / "results.json").write_text(json.dumps({
        "summary": {"tasks": 1, "ran": 1, "resolved": 1, "not_run": 0},
        "tasks": [{"id": "calc-1", "status": "fixed", "resolved": True, "steps": 2,
                   "tokens_in": 10, "tokens_out": 5, "seconds": 4.0}],
    }))  # fmt: skip
    index = show(eval_out)
    assert index == eval_out / "index.html"
    words = " ".join(parsed(browser(index, tmp_path / "profile")).text)
    assert "calc-1" in words and "Resolved 1 of 1" in words
    assert 'href="tasks/calc-1/fix/page.html"' in index.read_text()
    assert (eval_out / "tasks" / "calc-1" / "fix" / "page.html").is_file()


def _budget(repo: Path, out: Path) -> None:
    script = [tool_call("read_file", {"path": "calc.py", "start_line": n}) for n in (1, 2)]
    with ScriptedServer(script=script) as server:
        run_fix(repo, out, "--max-steps", "1", base_url=server.base_url)


def _environment(repo: Path, out: Path) -> None:
    run_fix(repo, out, base_url="http://127.0.0.1:9/v1")


def _signal(repo: Path, out: Path, kind: signal.Signals = signal.SIGINT) -> None:
    script = [tool_call("read_file", {"path": "calc.py"}), {"delay": 60, "content": "late"}]
    with ScriptedServer(script=script) as server:
        proc = subprocess.Popen(fix_command(repo, out, base_url=server.base_url), env=fix_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 120
        while len(server.requests) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        proc.send_signal(kind)
        proc.wait(timeout=60)


def _killed(repo: Path, out: Path) -> None:
    _signal(repo, out, signal.SIGKILL)


@pytest.mark.parametrize(
    ("ending", "verdict", "missing"),
    [
        (_budget, "Verdict: not_fixed", "no verdict"),
        (_environment, "Verdict: environment_error", "no model call"),
        (_signal, "Verdict: interrupted", "no verdict"),
        (_killed, "Verdict: unknown", "report.json"),
    ],
    ids=["budget", "environment", "signal", "killed"],
)
def test_page_of_a_run_that_ended_early_says_what_is_missing(
    make_repo, tmp_path, ending, verdict, missing
):
    ending(make_repo(BUGGY), tmp_path / "out")
    words = " ".join(parsed(browser(show(tmp_path / "out"), tmp_path / "profile")).text)
    assert verdict in words and "Not in this run's outputs" in words and missing in words
    assert "Tests before any change" in words


def test_show_of_a_folder_that_is_no_run_is_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "worker.cli", "show", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "neither trace.jsonl" in proc.stderr
