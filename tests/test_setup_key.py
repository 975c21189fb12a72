"""The set-up image's key belongs to the plan: each language's installer names the files that
decide what it installs (sandbox/setup/key.py), and the key hashes exactly those. Changing a Go
module's go.sum or what it vendors sets up anew; a file no installer reads does not. The key is
the real one `worker fix` caches under, over the real daemon's base image id."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.ecosystems import ecosystem_for
from sandbox.setup.cache import SetupSpec, setup_key
from sandbox.setup.key import input_files

pytestmark = pytest.mark.docker

GO_MOD = "module example.com/app\n\ngo 1.22\n\nrequire example.com/greet v1.0.0\n"
GO_SUM = "example.com/greet v1.0.0 h1:AAAA=\nexample.com/greet v1.0.0/go.mod h1:BBBB=\n"
MODULES_TXT = "# example.com/greet v1.0.0\n## explicit; go 1.22\nexample.com/greet\n"


def key_of(docker_client, sandbox_image: str, repo: Path) -> str:
    """The key `worker fix` would cache this repository's inferred set-up under."""
    ecosystem = ecosystem_for(repo, None)
    assert ecosystem is not None
    plan = ecosystem.infer_setup(repo)
    spec = SetupSpec(command=plan.command or "true", installer=plan.installer)
    return setup_key(docker_client, base_image=sandbox_image, spec=spec, repo=repo, environ={})


def edit(repo: Path, rel: str, text: str) -> None:
    (repo / rel).parent.mkdir(parents=True, exist_ok=True)
    (repo / rel).write_text(text)


@pytest.mark.parametrize(
    ("rel", "text"),
    [
        ("go.sum", GO_SUM.replace("AAAA", "CCCC")),
        ("go.mod", GO_MOD.replace("v1.0.0", "v1.1.0")),
        ("vendor/modules.txt", MODULES_TXT + "# example.com/other v0.1.0\n"),
        ("tools/go.mod", "module example.com/app/tools\n\ngo 1.22\n"),
    ],
)
def test_a_go_requirement_changed_is_a_new_set_up(
    docker_client, sandbox_image, make_repo, rel, text
):
    repo = make_repo(
        {"go.mod": GO_MOD, "go.sum": GO_SUM, "vendor/modules.txt": MODULES_TXT,
         "app.go": "package app\n"}
    )  # fmt: skip
    before = key_of(docker_client, sandbox_image, repo)
    edit(repo, rel, text)
    assert key_of(docker_client, sandbox_image, repo) != before


def test_source_and_other_languages_files_do_not_change_a_go_set_up(
    docker_client, sandbox_image, make_repo
):
    repo = make_repo({"go.mod": GO_MOD, "go.sum": GO_SUM, "app.go": "package app\n"})
    before = key_of(docker_client, sandbox_image, repo)
    edit(repo, "app.go", "package app\n\nfunc Add(a, b int) int { return a + b }\n")
    edit(repo, "requirements.txt", "requests\n")
    edit(repo, "package-lock.json", "{}\n")
    assert key_of(docker_client, sandbox_image, repo) == before


def test_a_node_lockfile_is_its_set_ups_input_and_a_python_file_is_not(
    docker_client, sandbox_image, make_repo
):
    package = '{"name": "app", "version": "1.0.0", "dependencies": {"left-pad": "1.3.0"}}\n'
    repo = make_repo({"package.json": package, "package-lock.json": '{"lockfileVersion": 3}\n'})
    before = key_of(docker_client, sandbox_image, repo)
    edit(repo, "requirements.txt", "requests\n")
    assert key_of(docker_client, sandbox_image, repo) == before
    edit(repo, "package-lock.json", '{"lockfileVersion": 3, "packages": {}}\n')
    assert key_of(docker_client, sandbox_image, repo) != before


def test_a_python_requirement_file_anywhere_it_is_read_from_is_an_input(
    docker_client, sandbox_image, make_repo
):
    repo = make_repo(
        {"pyproject.toml": '[project]\nname = "app"\nversion = "1"\n',
         "requirements/test.txt": "pytest\n", "app.py": "X = 1\n"}
    )  # fmt: skip
    before = key_of(docker_client, sandbox_image, repo)
    edit(repo, "app.py", "X = 2\n")
    assert key_of(docker_client, sandbox_image, repo) == before
    edit(repo, "requirements/test.txt", "pytest\nhypothesis\n")
    assert key_of(docker_client, sandbox_image, repo) != before


def test_a_glob_at_any_depth_skips_what_set_up_writes(tmp_path):
    for rel in ("go.mod", "a/go.mod", "a/b/go.mod", "node_modules/x/go.mod", ".git/go.mod"):
        edit(tmp_path, rel, "module x\n")
    assert input_files(tmp_path, ("**/go.mod", "go.work")) == [
        "a/b/go.mod", "a/go.mod", "go.mod", "go.work"
    ]  # fmt: skip
