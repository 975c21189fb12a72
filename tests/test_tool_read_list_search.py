"""read_file, list_dir and search on a real sandboxed workspace copy."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from policies.truncation import Truncation
from sandbox.ecosystems import language_paths
from tests.conftest import git
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools

pytestmark = pytest.mark.docker

CAP = Truncation(max_bytes=6000, max_lines=150)
APP = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"


def context(session) -> ToolContext:
    return ToolContext(
        workspace=session.workspace.path,
        box=session.box,
        paths=language_paths(),
        truncation=CAP,
        test_cmd="python -m pytest",
        test_timeout_s=60,
    )


@pytest.fixture
def tools(make_repo, open_sandbox):
    files = {
        "src/app.py": APP,
        "src/long.py": "".join(f"value_{i} = {i}\n" for i in range(1, 451)),
        "src/wide.py": "x = '" + "w" * 5000 + "'\n",
        "src/slug.py": 'SEP = "-"\n\n\ndef slug(words):\n    return SEP.join(words)\n',
        "tests/test_app.py": "def test_add():\n    assert 1 + 2 == 3\n",
        ".env": "SECRET=hunter2\n",
        "deploy/server.pem": "-----BEGIN PRIVATE KEY-----\n",
        "README.md": "# demo\nadd numbers\n",
        "many/.keep": "",
    }
    files.update({f"many/m{i:03d}.txt": "needle\n" * 3 for i in range(260)})
    repo = make_repo(files, commit=False)
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0binary")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    session = open_sandbox(repo)
    ws = session.workspace.path
    os.symlink("/etc/passwd", ws / "passwd_link")  # as if a test run had left it behind
    os.symlink("/etc", ws / "etc_dir_link")
    (ws / "src" / "__pycache__").mkdir()
    (ws / "src" / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0cache")
    registry = ToolRegistry(tools=default_tools())
    ctx = context(session)

    def call(name: str, **args):
        obs = registry.call(name, args, ctx)
        assert len(obs.text.encode()) <= CAP.max_bytes
        assert len(obs.text.splitlines()) <= CAP.max_lines
        return obs

    return call


def test_read_file_windows_refusals_and_mistakes(tools) -> None:
    obs = tools("read_file", path="src/app.py")
    assert obs.ok
    assert obs.text.splitlines()[0] == "src/app.py: lines 1-6 of 6"
    assert "2|     return a - b" in obs.text

    obs = tools("read_file", path="src/long.py")
    assert obs.text.splitlines()[0] == "src/long.py: lines 1-200 of 450 (next: start_line=201)"
    assert "200| value_200 = 200" in obs.text and "value_201" not in obs.text
    obs = tools("read_file", path="src/long.py", start_line=440, end_line=999)
    assert obs.text.splitlines()[0] == "src/long.py: lines 440-450 of 450"
    assert obs.data["end_line"] == 450
    assert "has only 450 lines" in tools("read_file", path="src/long.py", start_line=451).text

    wide = tools("read_file", path="src/wide.py")
    assert "chars cut]" in wide.text and len(wide.text) < 1000

    for secret in (".env", "deploy/server.pem"):
        obs = tools("read_file", path=secret)
        assert not obs.ok and "hunter2" not in obs.text and "PRIVATE" not in obs.text
        assert obs.refusals and obs.refusals[0].rule.startswith("read_deny")
    for outside in ("passwd_link", "etc_dir_link/passwd", "/etc/passwd", "../../etc/passwd"):
        obs = tools("read_file", path=outside)
        assert not obs.ok and "root:" not in obs.text, outside
        assert obs.refusals, outside

    binary = tools("read_file", path="logo.png")
    assert not binary.ok and "binary file" in binary.text
    missing = tools("read_file", path="src/apps.py")
    assert not missing.ok and "Did you mean: src/app.py" in missing.text
    assert "is a directory" in tools("read_file", path="src").text


def test_list_dir_marks_dirs_and_hides_noise_and_secrets(tools) -> None:
    root = tools("list_dir")
    assert root.ok
    entries = root.text.splitlines()[1:]
    assert {"src/", "tests/", "deploy/", "README.md", "logo.png", "many/"} <= set(entries)
    assert ".env" not in root.text and "passwd_link" not in root.text
    assert "etc_dir_link" not in root.text

    src = tools("list_dir", path="src")
    assert src.text.splitlines()[1:5] == ["app.py", "long.py", "slug.py", "wide.py"]
    assert "(left out: __pycache__)" in src.text
    deploy = tools("list_dir", path="deploy")
    assert "server.pem" not in deploy.text and "(empty)" in deploy.text

    many = tools("list_dir", path="many")
    assert many.data == {"path": "many/", "entries": 261, "shown": 100}
    assert "[... 161 more entries not shown" in many.text

    assert tools("list_dir", path="etc_dir_link").refusals
    assert "is a file" in tools("list_dir", path="README.md").text


def test_search_groups_caps_and_survives_bad_patterns(tools) -> None:
    obs = tools("search", pattern=r"def \w+\(a, b\)")
    assert obs.ok
    assert obs.text.splitlines()[:4] == [
        r"2 matches in 1 file for /def \w+\(a, b\)/",
        "src/app.py (2 matches)",
        "  1: def add(a, b):",
        "  5: def mul(a, b):",
    ]
    secret = tools("search", pattern="hunter2|PRIVATE|root:")
    assert secret.data["matches"] == 0
    assert "SECRET=" not in secret.text and "BEGIN" not in secret.text

    capped = tools("search", pattern="needle")
    assert capped.data["matches"] == 780 and capped.data["files_matched"] == 260
    assert capped.data["shown_matches"] <= 80
    assert "more matches not shown (in 235 more files)" in capped.text

    scoped = tools("search", pattern="value_4[0-9]{2}", path="src/long.py")
    assert scoped.data["matches"] == 51 and "(51 matches)" in scoped.text

    bad = tools("search", pattern="def (")
    assert not bad.ok and "invalid regular expression" in bad.text

    started = time.monotonic()
    slow = tools("search", pattern=r"(w+)+y")
    assert time.monotonic() - started < 12
    assert slow.data["timed_out"] and "search stopped" in slow.text

    assert tools("search", pattern="x", path="../").refusals


def test_search_falls_back_to_plain_text_when_the_regex_finds_nothing(tools) -> None:
    obs = tools("search", pattern="def mul(a, b):")
    assert obs.ok and obs.data["matches"] == 1
    assert obs.text.startswith("no matches as a regular expression; searched as plain text")
    assert "  5: def mul(a, b):" in obs.text
    nothing = tools("search", pattern="def div(a, b):")
    assert nothing.data["matches"] == 0 and "plain text" not in nothing.text


def test_search_tries_either_quote_and_any_spacing_when_nothing_matches(tools) -> None:
    # What pytest's failure shows ('-') is not what the source says ("-").
    obs = tools("search", pattern="SEP = '-'")
    assert obs.ok and obs.data["matches"] == 1
    assert obs.text.startswith("no matches as written; searched as text with either quote")
    assert '  1: SEP = "-"' in obs.text
    assert tools("search", pattern="SEP = '+'").data["matches"] == 0


def test_search_skips_binary_files(tools, tmp_path: Path) -> None:
    obs = tools("search", pattern="PNG|binary")
    assert obs.data["matches"] == 0
    assert "skipped 1 binary" in obs.text
