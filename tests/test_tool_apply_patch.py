"""apply_patch against a real sandbox: good, sloppy, failing, breaking and forbidden diffs."""

from __future__ import annotations

import os
import textwrap

import pytest

from policies.truncation import Truncation
from sandbox.ecosystems import language_paths
from tools.base import ToolContext
from tools.registry import ToolRegistry, default_tools

pytestmark = pytest.mark.docker

CAP = Truncation(max_bytes=4000, max_lines=100)
APP = (
    "import math\n"
    "\n"
    "\n"
    "def add(a, b):\n"
    "    return a - b\n"
    "\n"
    "\n"
    "def area(r):\n"
    "    return math.pi * r * r\n"
    "\n"
    "\n"
    "def mul(a, b):\n"
    "    return a + b\n"
)
FILES = {
    "src/app.py": APP,
    "src/util.py": "def noop():    \n    pass\n",
    "src/dup.py": "x = 1\ny = 2\nx = 1\ny = 2\n",
    "src/old.py": "GONE = True\n",
    "tests/test_app.py": "def test_x():\n    assert True\n",
    "conftest.py": "",
    "src/mean.js": (
        "export function mean(xs) {\n  return xs.reduce((a, b) => a + b) / (xs.length - 1);\n}\n"
    ),
    "calc/add.go": "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n",
}


def diff(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@pytest.fixture
def env(make_repo, open_sandbox):
    session = open_sandbox(make_repo(FILES))
    ctx = ToolContext(
        workspace=session.workspace.path,
        box=session.box,
        paths=language_paths(),
        truncation=CAP,
        test_cmd="python -m pytest",
        test_timeout_s=60,
    )
    registry = ToolRegistry(tools=default_tools())

    def apply(patch: str):
        obs = registry.call("apply_patch", {"patch": patch}, ctx)
        assert len(obs.text.encode()) <= CAP.max_bytes
        return obs

    return apply, session.workspace


def read(ws, rel: str) -> str:
    return (ws.path / rel).read_text()


def test_good_diff_with_wrong_numbers_and_counts_across_files(env) -> None:
    apply, ws = env
    obs = apply(
        diff("""
        --- a/src/app.py
        +++ b/src/app.py
        @@ -40,9 +40,9 @@
         def add(a, b):
        -    return a - b
        +    return a + b
        @@ -1,1 +1,1 @@
         def mul(a, b):
        -    return a + b
        +    return a * b
        --- src/util.py
        +++ src/util.py
        @@ -7 +7 @@
        -    pass
        +    return None
    """)
    )
    assert obs.ok, obs.text
    assert obs.text.splitlines()[:3] == [
        "patch applied: 2 files changed",
        "  M src/app.py (+2 -2)",
        "  M src/util.py (+1 -1)",
    ]
    assert obs.changed_files == ("src/app.py", "src/util.py")
    assert "return a + b\n" in read(ws, "src/app.py") and "return a * b\n" in read(ws, "src/app.py")
    assert read(ws, "src/util.py") == "def noop():    \n    return None\n"
    assert sorted(ws.changed_files()) == ["src/app.py", "src/util.py"]
    # Files are written by the sandbox user, not by the host.
    assert (ws.path / "src/app.py").stat().st_uid == 1000


def test_trailing_whitespace_differences_and_markdown_fence(env) -> None:
    apply, ws = env
    obs = apply(
        "```diff\n--- a/src/util.py\n+++ b/src/util.py\n@@ -1,2 +1,2 @@\n"
        " def noop():\n-    pass   \n+    return 1\n```\n"
    )
    assert obs.ok, obs.text
    assert "trailing whitespace" in obs.text
    assert read(ws, "src/util.py").endswith("    return 1\n")


def test_hunk_that_does_not_apply_shows_real_lines(env) -> None:
    apply, ws = env
    obs = apply(
        diff("""
        --- a/src/app.py
        +++ b/src/app.py
        @@ -4,2 +4,2 @@
         def add(a, b):
        -    return a - b
        +    return a + b
        @@ -8,2 +8,2 @@
         def area(radius):
        -    return math.pi * radius ** 2
        +    return math.tau * radius
    """)
    )
    assert not obs.ok
    assert "hunk 2 of src/app.py (@@ -8 @@) does not match the file." in obs.text
    assert "At line 8 the hunk expects 'def area(radius):' but the file has 'def area(r):'" in (
        obs.text
    )
    assert " 8| def area(r):" in obs.text and " 9|     return math.pi * r * r" in obs.text
    assert obs.data == {"file": "src/app.py", "hunk": 2}
    assert read(ws, "src/app.py") == APP  # hunk 1 was fine, but nothing was written
    assert ws.changed_files() == []


def test_ambiguous_context_is_refused_not_guessed(env) -> None:
    apply, ws = env
    obs = apply("--- a/src/dup.py\n+++ b/src/dup.py\n@@ -30,2 +30,2 @@\n x = 1\n-y = 2\n+y = 3\n")
    assert not obs.ok
    assert "matches the file in 2 places (lines 1, 3)" in obs.text
    assert read(ws, "src/dup.py") == FILES["src/dup.py"]
    # With the right line number there is nothing to guess.
    obs = apply("--- a/src/dup.py\n+++ b/src/dup.py\n@@ -3,2 +3,2 @@\n x = 1\n-y = 2\n+y = 3\n")
    assert obs.ok, obs.text
    assert read(ws, "src/dup.py") == "x = 1\ny = 2\nx = 1\ny = 3\n"


def test_syntax_breaking_diff_is_rolled_back_byte_for_byte(env) -> None:
    apply, ws = env
    before = (ws.path / "src/app.py").read_bytes()
    obs = apply(
        diff("""
        --- /dev/null
        +++ b/src/fine.py
        @@ -0,0 +1 @@
        +OK = 1
        --- a/src/app.py
        +++ b/src/app.py
        @@ -4,2 +4,2 @@
         def add(a, b):
        -    return a - b
        +    return (a + b
    """)
    )
    assert not obs.ok
    assert "patch rolled back" in obs.text and "SyntaxError at src/app.py:5" in obs.text
    assert (ws.path / "src/app.py").read_bytes() == before
    assert not (ws.path / "src/fine.py").exists()
    assert ws.changed_files() == []


def test_a_diff_breaking_javascript_or_go_syntax_is_rolled_back(env) -> None:
    # Each language's own parser (tree-sitter's grammars, through sandbox/ecosystems/) checks
    # its files after an edit, as Python's does `.py` files.
    apply, ws = env
    before = {rel: (ws.path / rel).read_bytes() for rel in ("src/mean.js", "calc/add.go")}
    obs = apply(
        diff("""
        --- a/src/mean.js
        +++ b/src/mean.js
        @@ -1,2 +1,2 @@
         export function mean(xs) {
        -  return xs.reduce((a, b) => a + b) / (xs.length - 1);
        +  return xs.reduce((a, b) => a + b) / (xs.length;
    """)
    )
    assert not obs.ok and "SyntaxError at src/mean.js:2" in obs.text, obs.text
    obs = apply(
        diff("""
        --- a/calc/add.go
        +++ b/calc/add.go
        @@ -3,2 +3,2 @@
         func Add(a, b int) int {
        -\treturn a - b
        +\treturn a + b +
    """)
    )
    assert not obs.ok and "SyntaxError at calc/add.go:" in obs.text, obs.text
    assert {rel: (ws.path / rel).read_bytes() for rel in before} == before
    assert ws.changed_files() == []


def test_a_go_edit_of_comments_alone_is_rolled_back_and_a_real_one_applies(env) -> None:
    apply, ws = env
    comment = apply(
        diff("""
        --- a/calc/add.go
        +++ b/calc/add.go
        @@ -3,2 +3,2 @@
         func Add(a, b int) int {
        -\treturn a - b
        +\treturn a - b // the sum
    """)
    )
    assert not comment.ok and comment.data["no_code_change"], comment.text
    fixed = apply(
        diff("""
        --- a/calc/add.go
        +++ b/calc/add.go
        @@ -3,2 +3,2 @@
         func Add(a, b int) int {
        -\treturn a - b
        +\treturn a + b
    """)
    )
    assert fixed.ok, fixed.text
    assert "return a + b" in (ws.path / "calc/add.go").read_text()


def test_a_diff_that_changes_no_code_is_rolled_back_and_said_so(env) -> None:
    apply, ws = env
    before = (ws.path / "src/app.py").read_bytes()
    obs = apply(
        diff("""
        --- a/src/app.py
        +++ b/src/app.py
        @@ -4,2 +4,2 @@
         def add(a, b):
        -    return a - b
        +    return (a - b)  # the difference
    """)
    )
    assert not obs.ok and obs.data["no_code_change"]
    assert "compiles exactly as before" in obs.text
    assert (ws.path / "src/app.py").read_bytes() == before
    assert ws.changed_files() == []


def test_a_diff_that_changes_code_and_a_comment_applies(env) -> None:
    apply, ws = env
    obs = apply(
        diff("""
        --- a/src/app.py
        +++ b/src/app.py
        @@ -4,2 +4,2 @@
         def add(a, b):
        -    return a - b
        +    return a + b  # the sum
    """)
    )
    assert obs.ok, obs.text
    assert "return a + b  # the sum" in read(ws, "src/app.py")


def test_new_and_deleted_files(env) -> None:
    apply, ws = env
    obs = apply(
        diff("""
        --- /dev/null
        +++ b/src/pkg/new_mod.py
        @@ -0,0 +1,2 @@
        +def hello():
        +    return "hi"
        --- a/src/old.py
        +++ /dev/null
        @@ -1 +0,0 @@
        -GONE = True
    """)
    )
    assert obs.ok, obs.text
    assert "  A src/pkg/new_mod.py (+2)" in obs.text and "  D src/old.py (-1)" in obs.text
    assert read(ws, "src/pkg/new_mod.py") == 'def hello():\n    return "hi"\n'
    assert not (ws.path / "src/old.py").exists()
    again = apply("--- /dev/null\n+++ b/src/app.py\n@@ -0,0 +1 @@\n+x = 1\n")
    assert not again.ok and "src/app.py already exists" in again.text
    missing = apply("--- a/src/nope.py\n+++ b/src/nope.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert not missing.ok and "src/nope.py does not exist" in missing.text


@pytest.mark.parametrize(
    ("target", "rule"),
    [
        ("tests/test_app.py", "tests:"),
        ("conftest.py", "tests:"),
        ("../outside.py", "parent-escape"),
        ("/etc/passwd", "absolute-path"),
        ("linkdir/evil.py", "link-outside-root"),
    ],
)
def test_protected_and_outside_paths_are_refused_whole(env, target: str, rule: str) -> None:
    apply, ws = env
    os.symlink("/tmp", ws.path / "linkdir")
    prefix = "" if target.startswith("/") else "a/"
    patch = (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n"
        "-    return a - b\n+    return a + b\n"
        f"--- {prefix}{target}\n+++ {prefix.replace('a', 'b')}{target}\n@@ -1 +1 @@\n-x\n+y\n"
    )
    obs = apply(patch)
    assert not obs.ok
    assert obs.text.startswith("patch refused, nothing was changed.")
    assert target in obs.text and obs.data == {"refused": [target]}
    assert obs.refusals[0].rule.startswith(rule)
    assert read(ws, "src/app.py") == APP
    assert not (ws.path / "linkdir" / "evil.py").exists()


def test_unreadable_patch_explains_the_format(env) -> None:
    apply, _ = env
    obs = apply("please change add to use +")
    assert not obs.ok and "'--- a/PATH'" in obs.text


def test_sloppy_but_unambiguous_diffs_apply(env) -> None:
    apply, ws = env
    # Blank context lines without their leading space, no a/ b/ prefixes, no counts at all.
    obs = apply(
        "--- src/app.py\n+++ src/app.py\n@@ -8 +8 @@\n def area(r):\n-    return math.pi * r * r\n"
        "+    return math.pi * r**2\n\n\n def mul(a, b):\n"
    )
    assert obs.ok, obs.text
    assert "    return math.pi * r**2\n\n\ndef mul" in read(ws, "src/app.py")
    no_context = apply("--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1,2 @@\n+import os\n")
    assert not no_context.ok and "no unchanged context lines" in no_context.text
    assert read(ws, "src/app.py").startswith("import math\n")


def test_hunk_indented_uniformly_wrong_is_shifted_when_unambiguous(env) -> None:
    apply, ws = env
    # What a small model sent: every line 4 spaces too deep, counts wrong.
    obs = apply(
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -4,7 +4,7 @@\n"
        "     def add(a, b):\n"
        "-        return a - b\n"
        "+        return a + b\n"
    )
    assert obs.ok, obs.text
    assert "indented 4 spaces more than the file" in obs.text
    assert "def add(a, b):\n    return a + b\n" in read(ws, "src/app.py")


def test_shift_that_would_match_twice_is_not_guessed(env) -> None:
    apply, ws = env
    before = read(ws, "src/dup.py")
    obs = apply(
        "--- a/src/dup.py\n+++ b/src/dup.py\n@@ -1,2 +1,2 @@\n     x = 1\n-    y = 2\n+    y = 3\n"
    )
    assert not obs.ok
    assert read(ws, "src/dup.py") == before


MID = (
    "def mid(lo, hi):\n"
    '    """Midpoint of two integers."""\n'
    "    return (lo + hi) // 3\n"
    "\n"
    "\n"
    "def first(items):\n"
    "    return items[1]\n"
)


@pytest.mark.parametrize(
    ("hunk", "said"),
    [
        # The one-line bug of issue 11: the docstring line skipped.
        (
            " def mid(lo, hi):\n-    return (lo + hi) // 3\n+    return (lo + hi) // 2\n",
            "1 file line(s) the hunk skipped were kept as context",
        ),
        # Test output pasted into the hunk as context.
        (
            " def mid(lo, hi):\n     E   assert 3 == 2\n-    return (lo + hi) // 3\n"
            "+    return (lo + hi) // 2\n",
            "1 context line(s) not in the file were dropped",
        ),
        # A context line from another version of the file, and wrong line numbers.
        (
            " def mid(low, high):\n"
            '     """Midpoint of two integers."""\n'
            "-    return (lo + hi) // 3\n+    return (lo + hi) // 2\n",
            "1 context line(s) differing from the file were taken as the file's",
        ),
        # Indentation off by a different amount on different lines.
        (
            " def mid(lo, hi):\n"
            '   """Midpoint of two integers."""\n'
            "-  return (lo + hi) // 3\n+  return (lo + hi) // 2\n",
            "matched only when indentation is ignored",
        ),
    ],
)
def test_a_hunk_a_little_off_applies_where_one_place_fits(make_repo, open_sandbox, hunk, said):
    session = open_sandbox(make_repo({"mid.py": MID}))
    apply = _applier(session)
    obs = apply(f"--- a/mid.py\n+++ b/mid.py\n@@ -40,3 +40,3 @@\n{hunk}")
    assert obs.ok, obs.text
    assert said in obs.text and "applied at line 1" in obs.text
    assert read(session.workspace, "mid.py") == MID.replace("// 3", "// 2")


def test_a_hunk_a_little_off_that_fits_two_places_is_not_applied(make_repo, open_sandbox):
    twice = "def a(x):\n    y = x\n    return y + 1\n\n\ndef b(x):\n    y = x\n    return y + 1\n"
    session = open_sandbox(make_repo({"two.py": twice}))
    apply = _applier(session)
    # `def c(x):` is near both `def a(x):` and `def b(x):`: two places fit, none is guessed.
    obs = apply(
        "--- a/two.py\n+++ b/two.py\n@@ -1,2 +1,2 @@\n def c(x):\n     y = x\n"
        "-    return y + 1\n+    return y - 1\n"
    )
    assert not obs.ok and "would fit 2 places" in obs.text
    assert read(session.workspace, "two.py").endswith("    y = x\n    return y + 1\n")
    # Skips the `y = x` line, but `def a(x):` pins it to one place.
    obs = apply(
        "--- a/two.py\n+++ b/two.py\n@@ -1,2 +1,2 @@\n def a(x):\n"
        "-    return y + 1\n+    return y\n"
    )
    assert obs.ok, obs.text
    assert read(session.workspace, "two.py").startswith("def a(x):\n    y = x\n    return y\n")


def _applier(session):
    ctx = ToolContext(
        workspace=session.workspace.path,
        box=session.box,
        paths=language_paths(),
        truncation=CAP,
        test_cmd="python -m pytest",
        test_timeout_s=60,
    )
    registry = ToolRegistry(tools=default_tools())
    return lambda patch: registry.call("apply_patch", {"patch": patch}, ctx)
