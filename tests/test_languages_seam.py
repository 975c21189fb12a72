"""A language is one package (docs/languages.md): outside sandbox/ecosystems/<language>/ no
module of ours imports a language package (the registry, sandbox/ecosystems/__init__.py, alone
loads them) and none switches on a language's name. The check reads the source as Python's
parser sees it, so a new module that leaks fails here, named, whatever its layer."""

from __future__ import annotations

import ast
from pathlib import Path

from sandbox.ecosystems import ECOSYSTEMS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("worker", "sandbox", "tools", "policies")
REGISTRY = ROOT / "sandbox" / "ecosystems" / "__init__.py"


def language_packages() -> dict[str, str]:
    """Each registered language's package (`sandbox.ecosystems.go`) by its name (`go`)."""
    return {k.load().name: k.module.rsplit(".", 1)[0] for k in ECOSYSTEMS}


def outside_modules() -> list[Path]:
    inside = {ROOT / Path(*p.split(".")) for p in language_packages().values()}
    return [
        path
        for name in PACKAGES
        for path in sorted((ROOT / name).rglob("*.py"))
        if path != REGISTRY and not any(path.is_relative_to(folder) for folder in inside)
    ]


def leaks(path: Path, packages: dict[str, str]) -> list[str]:
    """Where `path` imports a language package or compares a value with a language's name."""
    found = []
    names = set(packages)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        for module in modules:
            if any(module == p or module.startswith(p + ".") for p in packages.values()):
                found.append(f"line {node.lineno}: imports {module}")
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                values = (
                    operand.elts
                    if isinstance(operand, (ast.Tuple, ast.Set, ast.List))
                    else [operand]
                )
                said = {v.value for v in values if isinstance(v, ast.Constant)} & names
                if said:
                    found.append(f"line {node.lineno}: compares with {', '.join(sorted(said))}")
    return found


def test_no_module_outside_a_language_package_names_a_language():
    packages = language_packages()
    assert {"python", "node", "go"} <= set(packages)
    found = {
        str(path.relative_to(ROOT)): where
        for path in outside_modules()
        if (where := leaks(path, packages))
    }
    assert found == {}, found


def test_a_leak_is_caught_by_its_line(tmp_path):
    packages = language_packages()
    leaky = tmp_path / "leaky.py"
    leaky.write_text(
        "from sandbox.ecosystems.node.image import ensure_node_image\n"
        "def pick(language):\n"
        "    return 1 if language in ('node', 'go') else 2\n"
    )
    assert leaks(leaky, packages) == [
        "line 1: imports sandbox.ecosystems.node.image",
        "line 1: imports sandbox.ecosystems.node.image.ensure_node_image",
        "line 3: compares with go, node",
    ]


def test_each_language_owns_its_protected_files_and_the_run_gets_them_all(tmp_path):
    """A language's manifests and test spellings live in its package (paths.py), not in the
    policy's neutral defaults; the policy a run loads has every language's, so a Python
    project's run cannot edit a go.mod or a `*.test.ts` either."""
    from policies.config import load_config
    from policies.paths import DEFAULT_WRITE_DENY, TEST_GLOBS
    from sandbox.ecosystems import language_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    paths = load_config(tmp_path, paths=language_paths()).paths
    for known in ECOSYSTEMS:
        write_deny, test_globs = known.paths()
        assert write_deny or test_globs, known.module
        assert not set(write_deny) & set(DEFAULT_WRITE_DENY), known.module
        assert not set(test_globs) & set(TEST_GLOBS), known.module
        assert set(write_deny) <= set(paths.write_deny), known.module
        assert set(test_globs) <= set(paths.test_globs), known.module
    for protected in ("go.mod", "web/app.test.ts", "Cargo.lock", "core/pom.xml", "conftest.py"):
        assert not paths.is_writable(protected), protected
    assert paths.is_writable("src/app.py")
