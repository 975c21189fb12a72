"""PathPolicy on real directories with real links: nothing outside the workspace may be reached."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from policies.paths import PathPolicy, PathRefused
from sandbox.ecosystems import language_paths


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A small repository inside `tmp_path/repo`, with a secret sibling outside it."""
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "pkg" / "app.py").write_text("x = 1\n")
    (root / "tests" / "test_app.py").write_text("def test(): pass\n")
    (root / ".env").write_text("TOKEN=hunter2\n")
    (tmp_path / "outside.txt").write_text("host secret\n")
    (tmp_path / "outside_dir").mkdir()
    (tmp_path / "outside_dir" / "f.py").write_text("secret = 1\n")
    return root


def refusal(policy: PathPolicy, root: Path, rel: str, *, write: bool = False) -> PathRefused:
    with pytest.raises(PathRefused) as info:
        policy.resolve(root, rel, write=write)
    return info.value


# --- plain allowed paths ------------------------------------------------------------------------


def test_resolves_a_source_file_to_its_real_absolute_path(repo: Path) -> None:
    real = language_paths().resolve(repo, "src/pkg/app.py")
    assert real == (repo / "src" / "pkg" / "app.py").resolve()
    assert real.is_absolute()


def test_redundant_separators_and_dots_are_normalized(repo: Path) -> None:
    assert language_paths().resolve(repo, "./src//pkg/./app.py") == language_paths().resolve(
        repo, "src/pkg/app.py"
    )


def test_root_itself_is_readable_but_not_writable(repo: Path) -> None:
    policy = language_paths()
    assert policy.resolve(repo, "") == repo.resolve()
    assert policy.resolve(repo, ".") == repo.resolve()
    assert refusal(policy, repo, ".", write=True).rule == "root"


def test_new_file_in_existing_or_new_directory_may_be_written(repo: Path) -> None:
    policy = language_paths()
    assert policy.resolve(repo, "src/pkg/new.py", write=True) == repo.resolve() / "src/pkg/new.py"
    assert policy.resolve(repo, "src/brand/new/mod.py", write=True).is_relative_to(repo.resolve())


# --- spelling: absolute, traversal, NUL, control characters -------------------------------------


@pytest.mark.parametrize("rel", ["/etc/passwd", "/", "C:/Windows/x", "~/.ssh/id_rsa"])
def test_absolute_and_home_paths_are_refused(repo: Path, rel: str) -> None:
    err = refusal(language_paths(), repo, rel)
    assert err.rule in ("absolute-path", "home-path")
    assert "relative" in err.reason


@pytest.mark.parametrize(
    "rel", ["..", "../outside.txt", "src/../../outside.txt", "src/pkg/../../../outside.txt"]
)
def test_parent_escapes_are_refused_even_when_they_would_land_inside(repo: Path, rel: str) -> None:
    for write in (False, True):
        err = refusal(language_paths(), repo, rel, write=write)
        assert err.rule == "parent-escape"
        assert "'..'" in str(err)


def test_dotdot_that_stays_inside_is_still_refused(repo: Path) -> None:
    assert refusal(language_paths(), repo, "src/../src/pkg/app.py").rule == "parent-escape"


@pytest.mark.parametrize(
    ("rel", "rule"),
    [
        ("src/app.py\x00.txt", "nul-byte"),
        ("src/\napp.py", "control-character"),
        ("src/\x1b[31mapp.py", "control-character"),
        ("te\u200bsts/test_app.py", "control-character"),  # zero-width space
        ("src/\u202eyp.ppa", "control-character"),  # right-to-left override
        ("src\\pkg\\app.py", "backslash"),
    ],
)
def test_hostile_characters_are_refused(repo: Path, rel: str, rule: str) -> None:
    assert refusal(language_paths(), repo, rel).rule == rule


def test_overlong_path_is_refused(repo: Path) -> None:
    assert refusal(language_paths(), repo, "a/" * 3000).rule == "too-long"


# --- links ---------------------------------------------------------------------------------------


def test_file_link_inside_root_resolves_to_its_target(repo: Path) -> None:
    os.symlink("pkg/app.py", repo / "src" / "alias.py")
    assert language_paths().resolve(repo, "src/alias.py") == (repo / "src/pkg/app.py").resolve()


def test_directory_link_inside_root_is_followed(repo: Path) -> None:
    os.symlink("src/pkg", repo / "pkglink")
    assert (
        language_paths().resolve(repo, "pkglink/app.py", write=True)
        == (repo / "src/pkg/app.py").resolve()
    )


@pytest.mark.parametrize("target", ["/etc/passwd", "/", "/etc", "../../outside.txt"])
def test_links_to_outside_are_refused_for_read_and_write(repo: Path, target: str) -> None:
    os.symlink(target, repo / "src" / "evil")
    for write in (False, True):
        err = refusal(language_paths(), repo, "src/evil", write=write)
        assert err.rule == "link-outside-root"
        assert "outside the repository" in str(err)


def test_paths_through_a_directory_link_to_outside_are_refused(repo: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside_dir", repo / "lib")  # not vendor/: Go's, never writable
    assert refusal(language_paths(), repo, "lib/f.py").rule == "link-outside-root"
    assert refusal(language_paths(), repo, "lib/new.py", write=True).rule == "link-outside-root"
    os.symlink("/", repo / "rootfs")
    assert refusal(language_paths(), repo, "rootfs/etc/passwd").rule == "link-outside-root"


def test_chain_of_links_ending_outside_is_refused(repo: Path) -> None:
    os.symlink("../outside.txt", repo / "c")  # c -> outside
    os.symlink("c", repo / "b")  # b -> c
    os.symlink("../b", repo / "src" / "a")  # src/a -> b
    assert refusal(language_paths(), repo, "src/a").rule == "link-outside-root"


def test_chain_of_links_staying_inside_is_followed(repo: Path) -> None:
    os.symlink("src/pkg/app.py", repo / "c")
    os.symlink("c", repo / "b")
    assert language_paths().resolve(repo, "b") == (repo / "src/pkg/app.py").resolve()


def test_dangling_link_to_outside_cannot_be_created_through(repo: Path, tmp_path: Path) -> None:
    os.symlink(tmp_path / "not_yet_there.py", repo / "src" / "planted.py")
    err = refusal(language_paths(), repo, "src/planted.py", write=True)
    assert err.rule == "link-outside-root"
    assert not (tmp_path / "not_yet_there.py").exists()


def test_link_loop_is_refused(repo: Path) -> None:
    os.symlink("loop_b", repo / "loop_a")
    os.symlink("loop_a", repo / "loop_b")
    assert refusal(language_paths(), repo, "loop_a/x.py").rule == "symlink-loop"


def test_link_inside_root_cannot_smuggle_a_write_into_tests(repo: Path) -> None:
    os.symlink("../tests", repo / "src" / "t")
    os.symlink("../tests/test_app.py", repo / "src" / "innocent.py")
    assert refusal(language_paths(), repo, "src/t/test_app.py", write=True).rule.startswith(
        "tests:"
    )
    assert refusal(language_paths(), repo, "src/innocent.py", write=True).rule.startswith("tests:")


def test_link_inside_root_cannot_expose_a_secret(repo: Path) -> None:
    os.symlink("../.env", repo / "src" / "settings.txt")
    assert refusal(language_paths(), repo, "src/settings.txt").rule == "read_deny:**/.env*"


def test_root_given_through_a_link_still_works(repo: Path, tmp_path: Path) -> None:
    os.symlink(repo, tmp_path / "repo_link")
    assert (
        language_paths().resolve(tmp_path / "repo_link", "src/pkg/app.py")
        == (repo / "src/pkg/app.py").resolve()
    )


# --- protected tests and CI config ---------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [
        "tests/test_app.py",
        "tests/data/fixture.json",
        "src/pkg/tests/helpers.py",
        "test_top.py",
        "src/pkg/test_mod.py",
        "src/pkg/mod_test.py",
        "conftest.py",
        "src/conftest.py",
        "pkg/server/handler_test.go",
        "pkg/server/testdata/golden.txt",
        "web/src/app.test.ts",
        "web/src/App.test.tsx",
        "web/src/app.test.js",
        "web/src/app.test.mjs",
        "web/src/app.spec.ts",
        "web/src/App.spec.jsx",
        "web/src/__tests__/app.js",
        "test.js",  # a small library's one test file, at its root
        "lib/test.mjs",
        "tests.ts",
        "src/test/java/com/example/AppTest.java",
        "spec/models/user_spec.rb",
        "lib/user_spec.rb",
    ],
)
def test_tests_are_readable_but_not_writable(rel: str) -> None:
    policy = language_paths()
    assert policy.is_readable(rel)
    decision = policy.check(rel, write=True)
    assert not decision.allowed
    assert decision.rule.startswith("tests:")
    assert "fix the code under test" in decision.reason


@pytest.mark.parametrize(
    "rel",
    [
        "pkg/server/handler.go",
        "web/src/app.ts",
        "web/src/contest.tsx",
        "web/src/latest.js",
        "testing.js",
        "lib/user.rb",
        "src/main/App.java",
    ],
)
def test_code_beside_other_ecosystems_tests_stays_writable(rel: str) -> None:
    assert language_paths().is_writable(rel)


@pytest.mark.parametrize(
    "rel",
    ["pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "sub/pyproject.toml", ".github/x.yml"],
)
def test_test_and_ci_config_is_not_writable(rel: str) -> None:
    decision = language_paths().check(rel, write=True)
    assert not decision.allowed and decision.rule.startswith("write_deny:")


@pytest.mark.parametrize(
    "rel", ["TESTS/test_app.py", "Tests/Test_App.py", "CONFTEST.PY", "PyProject.toml"]
)
def test_case_tricks_do_not_evade_write_protection(rel: str) -> None:
    assert not language_paths().is_writable(rel)


@pytest.mark.parametrize(
    "rel",
    [
        "\uff54\uff45\uff53\uff54\uff53/helpers.py",  # fullwidth "tests"
        "tests\uff0fhelpers.py",  # fullwidth solidus: NFKC makes it "/"
        "src/\uff54est_x.py",  # fullwidth "t": NFKC gives src/test_x.py
        "src/x_te\ufb06.py",  # "st" ligature: NFKC gives src/x_test.py
        "\u1d40ESTS/helpers.py",  # modifier letter T: NFKC gives "TESTS"
    ],
)
def test_unicode_tricks_do_not_evade_write_protection(rel: str) -> None:
    decision = language_paths().check(rel, write=True)
    assert not decision.allowed
    assert decision.rule.startswith("tests:")


def test_nfd_spelling_of_a_denied_name_is_denied() -> None:
    policy = language_paths().with_overrides(write_deny=["caf\u00e9/**"])  # NFC é
    assert not policy.is_writable("cafe\u0301/menu.py")  # NFD é


def test_git_internals_are_neither_readable_nor_writable() -> None:
    policy = language_paths()
    for rel in (".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".git"):
        assert not policy.is_readable(rel)
        assert not policy.is_writable(rel)


# --- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rel",
    [".env", ".env.local", "deploy/.env.production", "certs/server.pem", "k/tls.key"]
    + ["id_rsa", "home/.ssh/id_ed25519", "x/ID_RSA.pub", ".ENV"],
)
def test_secrets_are_not_readable_at_any_depth(repo: Path, rel: str) -> None:
    decision = language_paths().check(rel)
    assert not decision.allowed
    assert decision.rule.startswith("read_deny:")
    assert not language_paths().is_writable(rel)


def test_reading_a_real_secret_file_raises_with_the_rule(repo: Path) -> None:
    err = refusal(language_paths(), repo, ".env")
    assert err.rule == "read_deny:**/.env*"
    assert ".env" in str(err)


@pytest.mark.parametrize("rel", ["src/environment.py", "docs/keys.md", "src/pem_utils.py"])
def test_names_that_only_look_like_secrets_stay_readable(rel: str) -> None:
    assert language_paths().is_readable(rel)


# --- widening and narrowing ----------------------------------------------------------------------


def test_allow_edit_tests_widens_to_tests_but_not_ci_config_or_git(repo: Path) -> None:
    policy = language_paths(PathPolicy(allow_edit_tests=True))
    assert (
        policy.resolve(repo, "tests/test_app.py", write=True)
        == (repo / "tests/test_app.py").resolve()
    )
    assert not policy.is_writable("pyproject.toml")
    assert not policy.is_writable(".git/config")


def test_removing_the_git_rules_still_keeps_git_unreadable_and_unwritable() -> None:
    # The copy's .git is the container's own repository: no setting hands it to the tools.
    policy = language_paths().with_overrides(read_deny=["!**/.git/**"], write_deny=["!**/.git/**"])
    assert policy.check(".git/config").rule == "git-internals"
    assert policy.check("sub/.git/HEAD").rule == "git-internals"
    assert policy.check(".git/hooks/pre-commit", write=True).rule == "git-internals"


def test_narrowing_write_allow_confines_edits() -> None:
    policy = language_paths().with_overrides(write_allow=["src/**"])
    assert policy.is_writable("src/pkg/app.py")
    decision = policy.check("docs/index.md", write=True)
    assert decision.rule == "write_allow"
    assert "src/**" in decision.reason


def test_narrowing_read_allow_hides_everything_else() -> None:
    policy = language_paths().with_overrides(read_allow=["src/**"])
    assert policy.is_readable("src/pkg/app.py")
    assert not policy.is_readable("README.md")
    assert not policy.is_writable("README.md")  # writing needs reading


def test_deny_lists_add_to_the_defaults_and_bang_removes_one() -> None:
    policy = language_paths().with_overrides(read_deny=["private/**"], write_deny=["!**/setup.cfg"])
    assert not policy.is_readable("private/notes.md")
    assert not policy.is_readable(".env")  # defaults kept
    assert policy.is_writable("setup.cfg")
    assert not policy.is_writable("tox.ini")


def test_removing_an_unknown_glob_is_an_error() -> None:
    with pytest.raises(ValueError, match="removes nothing"):
        language_paths().with_overrides(write_deny=["!tests/**"])


def test_allow_globs_are_case_sensitive_so_they_never_widen_by_accident() -> None:
    policy = language_paths().with_overrides(write_allow=["src/**"])
    assert not policy.is_writable("SRC/app.py")


def test_a_string_instead_of_a_list_is_rejected() -> None:
    with pytest.raises(ValueError, match="list of non-empty glob strings"):
        language_paths(PathPolicy(read_deny="*.pem"))  # type: ignore[arg-type]


def test_policy_is_frozen() -> None:
    with pytest.raises(AttributeError):
        language_paths().allow_edit_tests = True  # type: ignore[misc]


def test_refusal_carries_a_recordable_decision(repo: Path) -> None:
    err = refusal(language_paths(), repo, "tests/test_app.py", write=True)
    assert err.decision.allowed is False
    assert err.decision.rule == err.rule == "tests:**/tests/**"
    assert err.path == "tests/test_app.py"
    assert isinstance(err, ValueError)
