"""The Java grounding's call following on small sources (no Docker): a call reaches the
overloads that take its number of arguments, not every method of its name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sandbox.ecosystems import language_paths
from sandbox.ecosystems.java.grounding import implicated_code
from sandbox.ecosystems.java.source import calls, definitions, parse_java
from sandbox.testrun.junit import TestFailure, TestSummary

STORE = """package com.example;

public class Store {
    public Store put(boolean value) { return put(value ? "yes" : "no"); }

    public Store put(String value) { return this; }

    public Store put(int index, String value) { return at(index); }

    public Store put(int index, String value, String note) { return this; }

    public Store all(String... values) { return this; }

    public Store at(int index) { return this; }

    public Store(int size) { }

    public Store() { this(0); }
}
"""
STORE_TEST = """package com.example;

import org.junit.Test;

public class StoreTest {
    @Test
    public void putsAtAnIndex() {
        new Store().put(1, /* at */ "a").all();
    }
}
"""


@dataclass(frozen=True)
class Run:
    summary: TestSummary


def test_a_call_reaches_the_overloads_of_its_arity_and_what_they_call(tmp_path: Path):
    for rel, text in (
        ("src/main/java/com/example/Store.java", STORE),
        ("src/test/java/com/example/StoreTest.java", STORE_TEST),
    ):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    failure = TestFailure(
        test_id=".::com.example.StoreTest#putsAtAnIndex", kind="failure", message="", traceback=""
    )
    run = Run(TestSummary(passed=0, failed=1, errors=0, skipped=0, failures=(failure,)))
    shown = implicated_code(run, workspace=tmp_path, paths=language_paths())  # type: ignore[arg-type]
    lines = shown.text.splitlines()
    heads = [line.split(": ", 1)[1].split(",")[0] for line in lines if line.startswith("src/")]
    # put(1, "a") is put(int, String), which calls at(int); the varargs all() takes none; new
    # Store() is the constructor of no parameters. Not put(boolean) or put(String), not the
    # three-argument put, not Store(int).
    assert heads[0] == "StoreTest.putsAtAnIndex"
    assert sorted(heads[1:]) == ["Store.Store", "Store.all", "Store.at", "Store.put"]
    assert any("put(int index, String value)" in line for line in lines)
    assert not any("put(boolean value)" in line or "String note" in line for line in lines)
    assert not any("put(String value)" in line for line in lines)
    assert not any("Store(int size)" in line for line in lines)


def test_arity_is_read_from_the_parse():
    src = parse_java("Store.java", STORE.encode())
    assert src is not None
    params = {(d.name, d.params) for d in definitions(src) if d.kind == "method"}
    assert ("all", (1, True)) in params and ("put", (3, False)) in params
    put = next(d for d in definitions(src) if d.name == "all")
    assert [put.accepts(n) for n in (0, 1, 5, None)] == [True, True, True, True]
    at = next(d for d in definitions(src) if d.name == "at")
    assert [at.accepts(n) for n in (0, 1, 2, None)] == [False, True, False, True]
    body = next(d for d in definitions(src) if d.name == "put" and d.params == (2, False))
    assert [(c.name, c.arity) for c in calls(src, body.node)] == [("at", 1)]
    boolean = next(d for d in definitions(src) if d.name == "put" and d.params == (1, False))
    assert [(c.name, c.arity) for c in calls(src, boolean.node)] == [("put", 1)]
