"""docs/architecture.md stays current: it names every package of ours (as `worker/loop/`), and
every path of ours it names in backticks exists. In-process, no Docker."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "architecture.md"
PACKAGES = ("worker", "sandbox", "tools", "policies")
#: A backticked span that starts with one of these is a path of the repository's.
OURS = (*(f"{p}/" for p in PACKAGES), "tests/", "bench/", "docs/", "scripts/")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")


def packages(root: Path = ROOT) -> list[str]:
    """Every folder holding an `__init__.py` under the four packages, as `worker/loop/`."""
    found = {
        f"{init.parent.relative_to(root).as_posix()}/"
        for name in PACKAGES
        for init in (root / name).rglob("__init__.py")
    }
    return sorted(found)


def spans(text: str) -> list[str]:
    """The page's backticked spans, fenced code blocks left out."""
    return SPAN.findall(FENCE.sub("", text))


def missing_packages(text: str, root: Path = ROOT) -> list[str]:
    """The packages the page does not name as a backticked path of their own."""
    named = set(spans(text))
    return [p for p in packages(root) if p not in named]


def broken_paths(text: str, root: Path = ROOT) -> list[str]:
    """Backticked paths of ours that name no file or folder (a glob: that matches none); a
    trailing slash asks for a folder."""
    broken = []
    for span in spans(text):
        if not span.startswith(OURS) or " " in span:
            continue
        if any(c in span for c in "*?["):
            exists = any(root.glob(span.rstrip("/")))
        elif span.endswith("/"):
            exists = (root / span).is_dir()
        else:
            exists = (root / span).exists()
        if not exists:
            broken.append(span)
    return sorted(set(broken))


def unknown_file_names(text: str, root: Path = ROOT) -> list[str]:
    """Bare file names (`pins.py`, in the languages' table) that no file of ours has."""
    ours = {f.name for name in PACKAGES for f in (root / name).rglob("*.py")}
    bare = {s for s in spans(text) if re.fullmatch(r"[\w.-]+\.py", s)}
    return sorted(bare - ours)


def test_the_page_names_every_package():
    missing = missing_packages(PAGE.read_text(encoding="utf-8"))
    assert not missing, f"docs/architecture.md does not name these packages: {missing}"


def test_every_path_the_page_names_exists():
    broken = broken_paths(PAGE.read_text(encoding="utf-8"))
    assert not broken, f"docs/architecture.md names paths that do not exist: {broken}"


def test_every_bare_file_name_the_page_names_is_one_of_ours():
    unknown = unknown_file_names(PAGE.read_text(encoding="utf-8"))
    assert not unknown, f"docs/architecture.md names files no package has: {unknown}"


def test_a_package_left_out_of_the_page_is_caught():
    text = PAGE.read_text(encoding="utf-8").replace("`sandbox/source/`", "the shared source")
    assert missing_packages(text) == ["sandbox/source/"]


def test_a_package_named_only_through_its_files_is_not_named():
    # `worker/loop/agent.py` names a file; the package itself must be named as `worker/loop/`.
    text = PAGE.read_text(encoding="utf-8").replace("`worker/loop/`", "`worker/loop/agent.py`")
    assert missing_packages(text) == ["worker/loop/"]


def test_a_stale_path_is_caught():
    text = "The old page: `sandbox/workspace.protect_files`, `sandbox/ecosystems/*/nothing.py`."
    assert broken_paths(text) == [
        "sandbox/ecosystems/*/nothing.py",
        "sandbox/workspace.protect_files",
    ]
    assert unknown_file_names("read by `python_pins.py` and `pins.py`") == ["python_pins.py"]


def test_a_new_package_is_caught(tmp_path):
    for name in PACKAGES:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").touch()
    (tmp_path / "sandbox" / "rust").mkdir()
    (tmp_path / "sandbox" / "rust" / "__init__.py").touch()
    text = "`worker/`, `sandbox/`, `tools/`, `policies/`"
    assert missing_packages(text, root=tmp_path) == ["sandbox/rust/"]
