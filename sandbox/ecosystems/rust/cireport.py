"""What CI wrote of a cargo build, read into this ecosystem's test ids (report.py), and whether a
test id CI named is in the repository.

CI's JUnit is `cargo nextest`'s (`[profile.ci.junit] path = "junit.xml"`): a <testsuite> per
test binary, named by its binary id, a <testcase> per test with that classname and the test's
libtest name. A binary id is `pkg` for the package's library (its unit tests), `pkg::bin/name`
for a binary's, `pkg::name` for the integration test tests/name.rs (an example's, a bench's:
`pkg::example/name`, `pkg::bench/name`). Ids: the library's crate name (`pkg` with `_` for `-`),
else the target's file from the repository's root, as a run names them: the package's folder
from the workspace's manifests.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from sandbox.ecosystems.rust.choice import manifests
from sandbox.ecosystems.rust.source import definitions, parse_rust
from sandbox.testrun.junit import TestIdOf, TestSummary, parse_junit
from sandbox.worktree.repo_files import RepoFiles

MAX_FILES = 300
_KIND_FOLDERS = {"bin": "src/bin", "example": "examples", "bench": "benches"}


def package_folders(repo: Path) -> dict[str, str]:
    """Each package's name -> its folder from the root ("" for the root's)."""
    files = RepoFiles(repo)
    out: dict[str, str] = {}
    for name, manifest in manifests(files):
        package = manifest.get("package")
        if isinstance(package, dict) and isinstance(package.get("name"), str):
            folder = name.removesuffix("Cargo.toml").rstrip("/")
            out[package["name"]] = folder
    return out


def junit_test_id(folders: dict[str, str]) -> TestIdOf:
    """A nextest JUnit case's id (the module docstring)."""

    def test_id(case: ET.Element, suites: Sequence[ET.Element]) -> str:
        binary = case.get("classname") or (suites[-1].get("name") or "" if suites else "")
        name = case.get("name") or ""
        package, _, rest = binary.partition("::")
        base = folders.get(package, "")
        prefix = f"{base}/" if base else ""
        if not rest:
            target = package.replace("-", "_")
        elif "/" in rest:
            kind, _, stem = rest.partition("/")
            if kind == "bin" and stem == package:
                target = f"{prefix}src/main.rs"
            else:
                target = f"{prefix}{_KIND_FOLDERS.get(kind, kind)}/{stem}.rs"
        else:
            target = f"{prefix}tests/{rest}.rs"
        return f"{target}::{name}" if name else target

    return test_id


def read_rust_ci_report(data: bytes, repo: Path) -> TestSummary:
    """cargo nextest's JUnit; ValueError when it is not JUnit."""
    return parse_junit(data, test_id=junit_test_id(package_folders(repo)))


def has_rust_test(repo: Path, test_id: str) -> bool:
    """Is the test `test_id` in the repository? A `#[test]` function of that name (its module
    path's last parts matching) in the target's file, or for a library's id in the package's
    src/ files; a doc-test's id, its file. Static: a test a macro makes is not found."""
    files = RepoFiles(repo)
    head, sep, name = test_id.partition("::")
    if head.endswith(".rs"):
        if not files.exists(head):
            return False
        if not sep or " (line " in name:
            return True
        candidates = [head]
    else:
        folders = package_folders(repo)
        folder = next((f for p, f in folders.items() if p.replace("-", "_") == head), None)
        if folder is None:
            return False
        if not sep:
            return True
        candidates = _rs_files(files, f"{folder}/src" if folder else "src")
    want = name.split("::")
    for rel in candidates:
        text = files.read(rel)
        src = parse_rust(rel, text.encode()) if text is not None else None
        if src is None:
            continue
        for d in definitions(src):
            owner = d.owner.split("::") if d.owner else []
            if (
                d.is_test
                and d.name == want[-1]
                and (not owner or want[:-1][-len(owner) :] == owner)
            ):
                return True
    return False


def _rs_files(files: RepoFiles, folder: str) -> list[str]:
    out: list[str] = []
    pending = [folder]
    while pending and len(out) < MAX_FILES:
        here = pending.pop(0)
        for name in files.listed(here):
            rel = f"{here}/{name}"
            if files.exists(rel):
                if name.endswith(".rs"):
                    out.append(rel)
            else:
                pending.append(rel)
    return out


_NAME = re.compile(r"^[\w:]+$")


def deselect_args(ids: Sequence[str]) -> list[str] | None:
    """libtest's arguments that leave out the tests `ids` name, each by its whole name
    (`--exact --skip tests::adds`); None where one is not a unit or integration test's id (a
    doc-test's, a target's: libtest cannot skip it by an exact name)."""
    out = ["--exact"]
    for test_id in ids:
        _, sep, name = test_id.partition("::")
        if not sep or not _NAME.match(name):
            return None
        out += ["--skip", name]
    return out
