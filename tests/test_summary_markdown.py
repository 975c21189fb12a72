"""summary.md from hostile input (test ids from a crafted JUnit file, a patch, a reason),
parsed by a real Markdown renderer in GitHub's flavour (markdown-it-py's gfm-like preset:
tables, autolinks, raw HTML allowed): no link, image or HTML element comes from them, and each
id reads back as it was (cut when over-long)."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from worker.ci.failures import read_junit_files
from worker.ci.summary import MAX_ID_CHARS, code, render_summary, write_summary

markdown_it = pytest.importorskip("markdown_it", reason="pip install -e '.[dev]'")
pytest.importorskip("linkify_it", reason="pip install -e '.[dev]' (gfm-like autolinks)")

HOSTILE_IDS = [
    # The measured one (issue 29): a live link and image outside a single-backtick span.
    "tests/test_x.py::test_y` [click me](https://example.invalid/phish) "
    "![p](https://example.invalid/p.png) `",
    "tests/test_x.py::test_p[a|b|[x](https://example.invalid)]",
    "tests/test_x.py::test_h[<img src=x onerror=alert(1)>]",
    "tests/test_x.py::test_s[\n<script>alert(1)</script>\n]",
    "tests/test_x.py::test_t[```` ``` ` <b>bold</b>]",
    "tests/test_x.py::test_a[<https://example.invalid/auto> www.example.invalid]",
    "tests/test_x.py::test_r[\n[ref]: https://example.invalid/ref\n[ref]]",
    "tests/test_x.py::test_e[&lt;script&gt; &#60;i&#62;]",
    "`",
    "tests/test_x.py::test_long[" + "[a](https://example.invalid)" * 40 + "]",
]
HOSTILE_PATCH = """\
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
-x = 1
+x = 2
````
```
~~~
</pre><script>alert(1)</script>
![p](https://example.invalid/p.png) [l](https://example.invalid)
"""
HOSTILE_REASON = (
    "verification failed: tests/test_x.py::test_y` [click](https://example.invalid) "
    "![p](https://example.invalid/p.png) <script>alert(1)</script> https://example.invalid "
    "www.example.invalid a@example.invalid\n# heading\n| a | b |"
)


def junit_file(path: Path, ids: list[str]) -> Path:
    """A JUnit file as pytest writes one, naming each id as a failure."""
    cases = []
    for test_id in ids:
        file, _, name = test_id.partition("::")
        classname = file.removesuffix(".py").replace("/", ".")
        cases.append(
            f"<testcase classname={quoteattr(classname)} name={quoteattr(name or file)} "
            f'file={quoteattr(file)}><failure message="boom">boom</failure></testcase>'
        )
    path.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
        f'tests="{len(ids)}" failures="{len(ids)}">{"".join(cases)}</testsuite></testsuites>',
        encoding="utf-8",
    )
    return path


def report_with(ids: list[str]) -> dict:
    tests = [{"test_id": t, "kind": kind, "passes": 1, "fails": 1}
             for t in ids for kind in ("failing", "flaky", "unknown")]  # fmt: skip
    return {
        "status": "not_fixed",
        "reason": HOSTILE_REASON,
        "exit_code": 1,
        "steps": 3,
        "tokens_in": 10,
        "tokens_out": 5,
        "cost_usd": None,
        "model": "m` [x](https://example.invalid) |",
        "patch": "fix.patch",
        "verdict": {"rule": "<b>rule</b> | [r](https://example.invalid)"},
        "durations": {"total": 1.5},
        "ci": {"tests": tests, "reruns": 2, "head_sha": "abc|<i>x</i>"},
    }


def tokens(markdown: str):
    parser = markdown_it.MarkdownIt("gfm-like")
    assert parser.options["html"] and parser.options["linkify"]  # the dangerous parts are on
    for token in parser.parse(markdown):
        yield token
        yield from token.children or ()


def test_crafted_junit_ids_patch_and_reason_make_no_markup(tmp_path):
    ids = list(read_junit_files([junit_file(tmp_path / "ci.xml", HOSTILE_IDS)]).failing)
    assert any("[click me](https://example.invalid/phish)" in t for t in ids)
    markdown = render_summary(report_with(ids), HOSTILE_PATCH)
    found = list(tokens(markdown))
    kinds = {t.type for t in found}
    assert not kinds & {"link_open", "image", "html_inline", "html_block"}, markdown
    html = markdown_it.MarkdownIt("gfm-like").render(markdown)
    for tag in ("<a ", "<img", "<script", "<b>", "<i>", "<pre><script"):
        assert tag not in html
    # Each id is read back whole inside a code span, cut when over-long, on one line.
    spans = [t.content for t in found if t.type == "code_inline"]
    for test_id in ids:
        one_line = " ".join(test_id.split("\n"))
        shown = one_line if len(one_line) <= MAX_ID_CHARS else one_line[: MAX_ID_CHARS - 1] + "…"
        assert shown.strip() in [s.strip() for s in spans], test_id
    # The patch is one fenced block, whole: none of its lines closed it.
    fences = [t for t in found if t.type == "fence"]
    assert len(fences) == 1 and fences[0].content == HOSTILE_PATCH and fences[0].info == "diff"
    # The tables kept their shape: every row of the flaky table has its three cells.
    cells = [t for t in found if t.type in ("td_open", "th_open")]
    assert len(cells) == 3 * (len(ids) + 1) + 2 * 9


def test_a_code_span_outlasts_every_backtick_run():
    assert code("a``b") == "```a``b```"
    assert code("``") == "``` `` ```"
    assert code("x" * 500).endswith("…`") and len(code("x" * 500)) == MAX_ID_CHARS + 2
    assert code("a\nb\r\nc") == "`a b c`"


def test_the_page_is_named_and_linked_to_the_runs_artifacts(tmp_path):
    report = {**report_with([]), "patch": None}
    (tmp_path / "page.html").write_text("<!DOCTYPE html>")
    actions = {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
               "GITHUB_RUN_ID": "42"}  # fmt: skip
    markdown = write_summary(tmp_path, report, actions).read_text()
    links = [t for t in tokens(markdown) if t.type == "link_open"]
    assert [t.attrs["href"] for t in links] == ["https://github.com/o/r/actions/runs/42#artifacts"]
    assert "`page.html`" in markdown
    # A repository name that is not one (the variables are the runner's, but still): no link.
    hostile = {**actions, "GITHUB_REPOSITORY": "o/r)](https://example.invalid"}
    markdown = write_summary(tmp_path, report, hostile).read_text()
    assert not [t for t in tokens(markdown) if t.type == "link_open"]
    assert "this run's artifacts" in markdown
    (tmp_path / "page.html").unlink()  # no page (a run that wrote none): not named
    assert "page.html" not in write_summary(tmp_path, report, actions).read_text()
