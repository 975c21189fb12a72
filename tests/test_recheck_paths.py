"""Which files of a patch the eval's recheck counts as tests (worker/evaluate/recheck.py): a
test file the task's ids name, or one the policy protects; never the source file a doc-test
lives in. In-process: the patch's headers and the task's ids alone."""

from __future__ import annotations

import doctest

import worker.evaluate.recheck as recheck
from worker.evaluate.recheck import touched_tests
from worker.evaluate.tasks import EvalTask


def patch_of(*paths: str) -> str:
    return "".join(f"--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-old\n+new\n" for p in paths)


def test_a_doc_test_s_file_is_the_code_under_test_not_a_test_file():
    # strsim's task fails a doc-test of src/lib.rs: a fix of src/lib.rs must be judgeable.
    task = EvalTask(
        id="t",
        repo="/r",
        fail_to_pass=("src/lib.rs::jaro_winkler (line 195)", "strsim::tests::jw"),
        pass_to_pass=(
            "toolz/dicttoolz.py::toolz.dicttoolz.merge",
            "checks/t_x.py::test_x",
            "src/lib.rs::(line 37)",  # the crate's own docs (scopeguard's): a doc-test too
        ),
    )
    assert touched_tests(patch_of("src/lib.rs", "toolz/dicttoolz.py"), task) == []
    # A test file the ids name (outside the policy's globs) and a protected one still count.
    assert touched_tests(patch_of("checks/t_x.py", "tests/it.rs"), task) == [
        "checks/t_x.py",
        "tests/it.rs",
    ]


def test_the_doc_test_shapes_are_told_apart():
    assert doctest.testmod(recheck).failed == 0
