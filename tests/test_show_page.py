"""`worker show` end to end: real `worker fix` runs (scripted model, real sandbox) drawn as one
HTML page, loaded by a real headless browser (Debian's chromium): what the page shows (each
failing test as the model was shown it, the first message, where the time went), that a trace
holding `<script>` and `<img onerror>` runs nothing, and that runs ended by a budget, an
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
from worker.llm.scripted_server import ScriptedServer, text, tool_call
from worker.replay.llama_stand_in import launcher

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
        pytest.fail("chromium is not installed: run scripts/bootstrap.sh --tests (it installs it)")
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
    """Every element's tag in a DOM, and its text; each <details>: open or not, its summary."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.title = ""
        self.details: list[tuple[bool, str]] = []
        self._in_title = self._in_summary = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_title = tag == "title"
        if tag == "details":
            self.details.append((any(name == "open" for name, _ in attrs), ""))
        self._in_summary = self._in_summary or tag == "summary"

    def handle_endtag(self, tag):
        self._in_title = False
        if tag == "summary":
            self._in_summary = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_title:
            self.title += data
        if self._in_summary and self.details:
            opened, summary = self.details[-1]
            self.details[-1] = (opened, summary + data)

    def section(self, heading: str) -> str:
        """The text from `heading` to the next heading-like section: the words after it."""
        words = " ".join(self.text)
        start = words.index(heading)
        return words[start : start + 20_000]


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


TWO_BUGS = {
    "calc.py": BUGGY["calc.py"] + "\n\ndef add(a, b):\n    return a - b\n",
    "tests/test_calc.py": (
        "from calc import add, mean\n\n\ndef test_mean():\n"
        f"    assert mean([2, 4, 6]) == 4, {HOSTILE!r}\n\n\n"
        "def test_add():\n    for n in range(40):\n        print(f'line {n} of the output')\n"
        "    assert add(2, 3) == 5\n"
    ),
    "conftest.py": "",
}


def test_page_shows_each_failing_test_as_the_model_was_shown_it(make_repo, tmp_path):
    # One edit fixes mean and leaves add failing; the step budget ends the run there.
    with ScriptedServer(script=[tool_call("apply_patch", {"patch": GOOD_PATCH})]) as server:
        proc = run_fix(make_repo(TWO_BUGS), tmp_path / "out", "--max-steps", "1",
                       base_url=server.base_url)  # fmt: skip
        server.assert_all_used()
    assert proc.returncode == 1, proc.stderr
    elements = parsed(browser(show(tmp_path / "out"), tmp_path / "profile"))
    assert "script" not in elements.tags and "img" not in elements.tags
    assert "PWNED" not in elements.title
    before = elements.section("Tests before any change")
    before = before[: before.index("The first message the model got")]
    # Each failing test's assertion, as the model was shown it; the hostile one as text.
    assert "FAILURE tests/test_calc.py::test_mean: AssertionError: " in before
    assert HOSTILE in before and "assert 6.0 == 4" in before
    assert "FAILURE tests/test_calc.py::test_add: assert -1 == 5" in before
    assert "line 39 of the output" in before
    # A short failure is open; a long one (40 lines of output) collapsed, its summary the
    # assertion, so that it still says what failed.
    failures = {summary.split(": ", 1)[0]: opened for opened, summary in elements.details
                if summary.startswith(("FAILURE", "ERROR"))}  # fmt: skip
    assert failures == {"FAILURE tests/test_calc.py::test_mean": True,
                        "FAILURE tests/test_calc.py::test_add": False}  # fmt: skip
    assert any("assert -1 == 5" in summary and not opened for opened, summary in elements.details)
    # The first message: the goal, the same failures, the code they use.
    first = elements.section("The first message the model got")
    assert "Goal: make the failing tests pass" in first and "def mean(values):" in first
    # The last run: add still fails, as the model saw it after its edit.
    after = elements.section("Tests at the end of the run")
    assert "1 passed, 1 failed" in after and "step 1's apply_patch" in after
    assert "FAILURE tests/test_calc.py::test_add: assert -1 == 5" in after
    assert "test_mean:" not in after[: after.index("Steps (")]
    assert "the whole output: the end of run/logs/" in after


@pytest.mark.local_model  # the run checks the pulled weights
def test_the_bundled_model_servers_start_is_named_where_the_time_went(make_repo, tmp_path):
    # The bundled model's settings with llama-server's answers scripted: one fixing replace.
    fix = {"path": "calc.py", "old": "    return sum(values) / (len(values) - 1)",
           "new": "    return sum(values) / len(values)"}  # fmt: skip
    engine, _ = launcher(tmp_path / "engine", script=[
        text(json.dumps({"tool": "replace", "arguments": fix}))])  # fmt: skip
    env = {k: v for k, v in fix_env().items() if k not in ("OPENAI_API_KEY", "WORKER_MODEL")}
    command = [sys.executable, "-m", "worker.cli", "fix", "--repo", str(make_repo(BUGGY)),
               "--out", str(tmp_path / "out"), "--model", "local", "--quiet"]  # fmt: skip
    proc = subprocess.run(command, env={**env, "WORKER_LLAMA_SERVER": str(engine)},
                          capture_output=True, text=True, timeout=240)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    durations = json.loads((tmp_path / "out" / "report.json").read_text())["durations"]
    assert 0 < durations["model_start"] < durations["total"]
    words = parsed(browser(show(tmp_path / "out"), tmp_path / "profile")).section(
        "Where the time went"
    )
    assert f"model start {durations['model_start']:.1f} s" in words


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
