"""replace against a real sandbox: exact snippets, the slips small models make, and refusals."""

from __future__ import annotations

import pytest

from policies.truncation import Truncation
from sandbox.ecosystems import language_paths
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools

pytestmark = pytest.mark.docker

MID = (
    "def mid(lo, hi):\n"
    '    """The middle of lo and hi, rounded down."""\n'
    "    return (lo + hi) // 3\n"
    "\n"
    "\n"
    "class Box:\n"
    "    def area(self, w, h):\n"
    "        return w + h\n"
)
FILES = {
    "src/mid.py": MID,
    "src/dup.py": "def a():\n    x = 1\n\n\ndef b():\n    x = 1\n",
    "src/slug.py": 'import re\n\n\ndef slugify(text):\n    words = re.findall(r"\\w+", text)\n'
    '    return "-".join(words)\n',
    "tests/test_mid.py": "from src.mid import mid\n\n\ndef test_mid():\n"
    "    assert mid(2, 4) == 3\n",
}


@pytest.fixture
def env(make_repo, open_sandbox):
    session = open_sandbox(make_repo(FILES))
    ctx = ToolContext(
        workspace=session.workspace.path,
        box=session.box,
        paths=language_paths(),
        truncation=Truncation(max_bytes=4000, max_lines=100),
        test_cmd="python -m pytest",
        test_timeout_s=60,
    )
    registry = ToolRegistry(tools=default_tools("replace"))
    assert "apply_patch" not in registry.names and "replace" in registry.names

    def call(path: str, old: str, new: str, **more):
        return registry.call("replace", {"path": path, "old": old, "new": new, **more}, ctx)

    return call, session.workspace.path


def test_an_exact_snippet_is_replaced_once(env):
    call, ws = env
    obs = call("src/mid.py", "(lo + hi) // 3", "(lo + hi) // 2")
    assert obs.ok, obs.text
    assert obs.changed_files == ("src/mid.py",)
    assert (ws / "src/mid.py").read_text() == MID.replace("// 3", "// 2")


def test_a_path_written_with_a_leading_dot_slash_is_the_same_file(env):
    call, ws = env
    # Seen from the bundled model, in three evaluation tasks: git apply refused "a/./src/...".
    obs = call("./src/mid.py", "(lo + hi) // 3", "(lo + hi) // 2")
    assert obs.ok, obs.text
    assert obs.changed_files == ("src/mid.py",)
    assert (ws / "src/mid.py").read_text() == MID.replace("// 3", "// 2")


def test_line_numbers_and_wrong_indentation_copied_from_read_file_are_set_aside(env):
    call, ws = env
    # What a small model sends: read_file's numbered lines, indented by 2 instead of 8.
    obs = call("src/mid.py", "8|   return w + h", "8|   return w * h")
    assert obs.ok, obs.text
    assert "        return w * h\n" in (ws / "src/mid.py").read_text()
    assert "line-number prefixes" in obs.text and "indentation was shifted" in obs.text


def test_the_other_quote_style_and_spacing_still_match_one_place(env):
    call, ws = env
    # Seen from the bundled model: the file says "-", the model copies it as '-', four times.
    obs = call("src/slug.py", "return '-'.join( words )", "return '-'.join(words).lower()")
    assert obs.ok, obs.text
    assert '    return "-".join(words).lower()\n' in (ws / "src/slug.py").read_text()
    assert "quote style" in obs.text


def test_a_snippet_that_fits_two_places_changes_nothing(env):
    call, ws = env
    obs = call("src/dup.py", "x = 1", "x = 2")
    assert not obs.ok
    assert "2 times" in obs.text
    assert (ws / "src/dup.py").read_text() == FILES["src/dup.py"]
    # Each place with its neighbours, numbered as read_file numbers lines: one to copy from.
    assert "(lines 2, 6)" in obs.text
    assert "1| def a():\n2|     x = 1\n3| \n---\n5| def b():\n6|     x = 1" in obs.text


def test_a_snippet_not_in_the_file_shows_the_closest_lines(env):
    call, ws = env
    obs = call("src/mid.py", "    return (lo + hi) / 3", "    return (lo + hi) // 2")
    assert not obs.ok
    assert "not found" in obs.text and "3|     return (lo + hi) // 3" in obs.text
    assert (ws / "src/mid.py").read_text() == MID


def test_lines_copied_from_a_test_into_the_source_are_named_as_the_tests(env):
    call, ws = env
    # Seen from the bundled model: the failing assertion sent as an edit of the source file.
    obs = call("src/mid.py", "assert mid(2, 4) == 3", "assert mid(2, 4) == 2")
    assert not obs.ok
    assert "tests/test_mid.py (line 5)" in obs.text and "not to be changed" in obs.text
    assert (ws / "src/mid.py").read_text() == MID


def test_lines_sent_with_the_wrong_path_name_the_file_that_has_them(env):
    call, ws = env
    obs = call("src/dup.py", "    return (lo + hi) // 3", "    return (lo + hi) // 2")
    assert not obs.ok
    assert "src/mid.py (line 3)" in obs.text and "path src/mid.py" in obs.text
    assert (ws / "src/mid.py").read_text() == MID


def test_sending_an_edit_already_made_says_so(env):
    call, ws = env
    assert call("src/mid.py", "(lo + hi) // 3", "(lo + hi) / 3").ok
    again = call("src/mid.py", "(lo + hi) // 3", "(lo + hi) / 3")
    assert not again.ok and "this edit was made already" in again.text
    assert "3|     return (lo + hi) / 3" in again.text


def test_a_snippet_like_nothing_in_a_short_file_shows_the_whole_file(env):
    call, ws = env
    # Seen from the bundled model: an example's text, copied instead of the file's.
    obs = call("src/slug.py", "    return a - b", "    return a + b")
    assert not obs.ok
    assert "The file:" in obs.text and '6|     return "-".join(words)' in obs.text


def test_a_replacement_that_breaks_syntax_is_rolled_back(env):
    call, ws = env
    obs = call("src/mid.py", "    return (lo + hi) // 3", "    return (lo + hi // 2")
    assert not obs.ok and "SyntaxError" in obs.text
    assert (ws / "src/mid.py").read_text() == MID


def test_an_equivalent_spelling_of_the_line_is_rolled_back_as_no_change(env):
    call, ws = env
    obs = call("src/mid.py", "return (lo + hi) // 3", "return ((lo) + hi) // 3")
    assert not obs.ok and "compiles exactly as before" in obs.text
    assert obs.changed_files == ()
    assert (ws / "src/mid.py").read_text() == MID


def test_tests_and_paths_outside_are_refused_by_the_same_policy(env):
    call, ws = env
    obs = call("tests/test_mid.py", "== 3", "== 2")
    assert not obs.ok and obs.refusals
    assert (ws / "tests/test_mid.py").read_text() == FILES["tests/test_mid.py"]
    assert call("../etc/passwd", "root", "toor").refusals


def test_a_line_number_picks_one_of_the_places_a_snippet_fits(env):
    call, ws = env
    dup = "def a():\n    x = 1\n\n\ndef b():\n    x = 1\n"
    obs = call("src/dup.py", "x = 1", "x = 2", line=6)
    assert obs.ok, obs.text
    assert (ws / "src/dup.py").read_text() == dup[: dup.rindex("x = 1")] + "x = 2\n"
    assert "old appears 2 times; changed the one at line 6, as asked" in obs.text
    # Also where old fits only once spaces are set aside.
    obs = call("src/dup.py", "x=1", "x=3", line=2)
    assert obs.ok, obs.text
    assert (ws / "src/dup.py").read_text().startswith("def a():\n    x=3\n")


def test_a_line_number_that_is_in_no_place_changes_nothing(env):
    call, ws = env
    obs = call("src/dup.py", "x = 1", "x = 2", line=4)
    assert not obs.ok and "old appears 2 times in the file (lines 2, 6)" in obs.text
    assert "or give line" in obs.text
    assert (ws / "src/dup.py").read_text() == FILES["src/dup.py"]
    # A snippet that fits once is replaced there, whatever line is given.
    obs = call("src/mid.py", "(lo + hi) // 3", "(lo + hi) // 2", line=99)
    assert obs.ok and "// 2" in (ws / "src/mid.py").read_text()
