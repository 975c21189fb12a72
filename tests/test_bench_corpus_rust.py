"""The Rust corpus's reference reader (bench/corpus_rust.py): `cargo test`'s plain output read
into the ids the sandbox gives (docs/rust-tests.md, "Test ids"). The output is a real one's
(cargo 1.95, a workspace with a failing, an ignored and a should-panic test, a binary's test,
a `harness = false` target that exits 1, a test binary that exits inside a test, doc-tests)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"

OUTPUT = """\
     Running unittests src/lib.rs (target/debug/deps/demo_x-0e9959a2f8e92b33)

running 4 tests
test tests::ok ... ok
test tests::bad ... FAILED
test tests::panics - should panic ... ok
test tests::slow ... ignored, slow

failures:

---- tests::bad stdout ----
thread 'tests::bad' panicked at src/lib.rs:17:24:
test tests::forged ... ok

failures:
    tests::bad

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out
error: test failed, to rerun pass `-p demo-x --lib`
     Running unittests src/main.rs (target/debug/deps/demo_x-7261e1cdde8a6f4a)
running 1 test
test tests::parses ... ok
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
     Running tests/custom.rs (target/debug/deps/custom-77fdeec034ed1b9d)
error: test failed, to rerun pass `-p demo-x --test custom`
     Running tests/it.rs (target/debug/deps/it-6e4025d16f66ae60)
running 2 tests
test a ... ok
error: test failed, to rerun pass `-p demo-x --test it`
     Running tests/it.rs (target/debug/deps/it-135a22c2d6e83326)
running 1 test
test fine ... ok
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
   Doc-tests demo_x
running 2 tests
test src/lib.rs - add (line 4) - compile fail ... ok
test src/lib.rs - add (line 1) ... ok
test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
   Doc-tests member
running 1 test
test member/src/lib.rs - f (line 1) ... ok
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out
"""


@pytest.fixture(scope="module")
def cr():
    sys.path.insert(0, str(BENCH))  # it imports node_host, as bench/corpus.py runs it
    spec = importlib.util.spec_from_file_location("corpus_rust", BENCH / "corpus_rust.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_rust"] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop("corpus_rust", None)
        sys.path.remove(str(BENCH))


def test_plain_output_reads_into_the_sandbox_ids(cr):
    def target(name, kind, src):
        return cr._Target(name=name, kind=kind, src=src)

    by_file = {  # as `cargo test --no-run --message-format=json` names the executables
        "demo_x-0e9959a2f8e92b33": target("demo_x", "lib", "src/lib.rs"),
        "demo_x-7261e1cdde8a6f4a": target("demo_x", "bin", "src/main.rs"),
        "custom-77fdeec034ed1b9d": target("custom", "test", "tests/custom.rs"),
        "it-6e4025d16f66ae60": target("it", "test", "tests/it.rs"),
        "it-135a22c2d6e83326": target("it", "test", "member/tests/it.rs"),
    }
    assert cr.parse_cargo_output(OUTPUT, [], by_file) == {
        "demo_x::tests::ok": "passed",
        "demo_x::tests::bad": "failed",
        "demo_x::tests::panics": "passed",
        "demo_x::tests::slow": "skipped",
        "src/main.rs::tests::parses": "passed",
        "tests/custom.rs": "failed",  # harness = false: its exit status
        "tests/it.rs::a": "error",  # its binary exited inside a test: no pass trusted
        "tests/it.rs": "error",
        "member/tests/it.rs::fine": "passed",  # the other package's tests/it.rs
        "src/lib.rs::add (line 4)": "passed",
        "src/lib.rs::add (line 1)": "passed",
        "member/src/lib.rs::f (line 1)": "passed",
    }


def test_a_target_that_does_not_compile_is_one_error(cr):
    known = [cr._Target(name="it", kind="test", src="member/tests/it.rs")]
    text = 'error: could not compile `member` (test "it") due to 1 previous error\n'
    assert cr.parse_cargo_output(text, known, {}) == {"member/tests/it.rs": "error"}
    text = "error: could not compile `demo-x` (lib test) due to 2 previous errors\n"
    assert cr.parse_cargo_output(text, known, {}) == {"demo_x": "error"}
