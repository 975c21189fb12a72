"""The Rust package's parts that need no container: the toolchain a project asks for, the
report of a run (what the code under test can and cannot make it say), the guard on the tests
inside a source file, the set-up plan, CI's JUnit ids, the places a failure names."""

from __future__ import annotations

import io
import json
import shlex
import tarfile

import pytest

from sandbox.ecosystems import language_paths
from sandbox.ecosystems.rust.choice import asked, pick_rust
from sandbox.ecosystems.rust.cireport import has_rust_test, read_rust_ci_report
from sandbox.ecosystems.rust.ecosystem import RUST
from sandbox.ecosystems.rust.errors import WrongRust
from sandbox.ecosystems.rust.guard import weakened_tests
from sandbox.ecosystems.rust.places import failure_places, frames
from sandbox.ecosystems.rust.report import parse_cargo_report
from sandbox.testrun.junit import TestFailure
from tests.rust_projects import CRATE, LIB, WORKSPACE


def _write(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("files", "version", "why"),
    [
        ({}, "1.96", "no Rust version asked for: the newest"),
        ({"Cargo.toml": '[package]\nname = "a"\nrust-version = "1.70"\n'}, "1.85",
         "Cargo.toml's rust-version needs at least 1.70: the lowest that satisfies it"),
        ({"Cargo.toml": '[workspace]\n[workspace.package]\nrust-version = "1.60"\n'}, "1.63",
         "Cargo.toml's rust-version needs at least 1.60: the lowest that satisfies it"),
        ({"rust-toolchain.toml": '[toolchain]\nchannel = "1.85.0"\n',
          "Cargo.toml": '[package]\nname = "a"\nrust-version = "1.60"\n'}, "1.85",
         "rust-toolchain.toml's channel asks for 1.85.0: that release line"),
        ({"rust-toolchain": "stable\n"}, "1.96", "stable in rust-toolchain: the newest"),
        ({".tool-versions": "nodejs 22\nrust 1.63.0\n"}, "1.63",
         ".tool-versions asks for 1.63.0: that release line"),
        ({".github/workflows/ci.yml": "steps:\n  - uses: dtolnay/rust-toolchain@1.80\n"},
         "1.85", ".github/workflows/ci.yml asks for 1.80: that release line"),
        ({".github/workflows/ci.yml": "steps:\n  - run: rustup toolchain install 1.63 --profile"
          " minimal\n"}, "1.63", ".github/workflows/ci.yml asks for 1.63: that release line"),
        # A nightly job beside the tests (anyhow's miri) is no pin; the next step's stable is.
        ({".github/workflows/ci.yml": "jobs:\n  test:\n    steps:\n      - uses: dtolnay/rust-"
          "toolchain@master\n        with:\n          toolchain: ${{matrix.rust}}\n  miri:\n"
          "    steps:\n      - uses: dtolnay/rust-toolchain@nightly\n  doc:\n    steps:\n"
          "      - uses: dtolnay/rust-toolchain@stable\n"}, "1.96",
         "stable in .github/workflows/ci.yml: the newest"),
        ({".github/workflows/ci.yml": "steps:\n  - uses: dtolnay/rust-toolchain@nightly\n",
          "Cargo.toml": '[package]\nname = "a"\nrust-version = "1.63.0"\n'}, "1.63",
         "Cargo.toml's rust-version needs at least 1.63.0: the lowest that satisfies it"),
    ],
)  # fmt: skip
def test_the_rust_a_project_asks_for(tmp_path, files, version, why):
    choice = pick_rust(asked(_write(tmp_path, files)))
    assert (choice.line, choice.why) == (version, why)


def test_a_project_that_fetches_crates_gets_a_cargo_that_reaches_crates_io(tmp_path):
    from sandbox.ecosystems.rust.choice import choose_rust

    # either 1.17.0: rust-version 1.63.0 and crates from crates.io, whose git index 1.63's
    # cargo would clone from github.com (refused by the fence): 1.85 instead.
    manifest = '[package]\nname = "a"\nrust-version = "1.63.0"\n[dev-dependencies]\nx = "1"\n'
    choice = choose_rust(_write(tmp_path / "deps", {"Cargo.toml": manifest}))
    assert choice.line == "1.85"
    assert choice.passed_over == (
        "Rust 1.63 (its cargo has no sparse index: crates.io is out of its reach here)",
    )
    local = '[package]\nname = "a"\nrust-version = "1.63.0"\n[dependencies]\nb = { path = "b" }\n'
    assert choose_rust(_write(tmp_path / "local", {"Cargo.toml": local})).line == "1.63"


def test_a_pin_no_source_has_is_passed_over_for_the_next():
    from sandbox.ecosystems.rust.choice import Ask

    choice = pick_rust(Ask("1.80", "rust-toolchain", pin=True))
    assert choice.line == "1.85" and choice.passed_over == ("Rust 1.80 (no source here has it)",)
    assert pick_rust(Ask("1.96.1", "rust-toolchain", pin=True)).passed_over == ()
    with pytest.raises(WrongRust):  # a minimum is cargo's rust-version check: the whole version
        pick_rust(Ask("1.96.1", "Cargo.toml's rust-version", pin=False))


@pytest.mark.parametrize(
    ("text", "said"),
    [("nightly-2024-05-01", "'nightly-2024-05-01' (a nightly toolchain: none is here)"),
     ("beta", "'beta' (a nightly toolchain: none is here)"),
     ("1.99", "Rust 1.99 or newer; the newest here is 1.96")],
)  # fmt: skip
def test_a_toolchain_no_source_has_names_what_was_asked_and_what_exists(text, said):
    from sandbox.ecosystems.rust.choice import Ask

    with pytest.raises(WrongRust) as raised:
        pick_rust(Ask(text, "rust-toolchain", pin=True))
    assert said in str(raised.value)
    assert "available: 1.63 (Debian bookworm's rustc), 1.85" in str(raised.value)
    assert "\n" not in str(raised.value)


def _report(*, cargo: list[dict], binaries: list[dict], doc: str = "", extra: str = "") -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:

        def add(name: str, data: str) -> None:
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data.encode())
            tar.addfile(info, io.BytesIO(data.encode()))

        add("cargo.json", "\n".join(json.dumps(c) for c in cargo) + "\n" + extra)
        for i, b in enumerate(binaries):
            add(f"b.{i:06}.bin", b["exe"] + "\n")
            if "log" in b:
                add(f"b.{i:06}.log", b["log"])
            add(f"b.{i:06}.out", b.get("out", ""))
            add(f"b.{i:06}.rc", f"{b['rc']}\n")
        if doc:
            add("d.000000.log", doc)
    return out.getvalue()


def _artifact(kind: str, name: str, src: str, exe: str) -> dict:
    return {"reason": "compiler-artifact",
            "target": {"kind": [kind], "name": name, "src_path": f"/workspace/{src}"},
            "executable": exe}  # fmt: skip


LIB_EXE, IT_EXE = "/tmp/t/debug/deps/ranges-1", "/tmp/t/debug/deps/bounds-2"
ARTIFACTS = [_artifact("lib", "ranges", "src/lib.rs", LIB_EXE),
             _artifact("test", "bounds", "tests/bounds.rs", IT_EXE)]  # fmt: skip


def test_outcomes_are_libtest_logs_never_the_tests_output():
    forged = ("test tests::b ... ok\nok tests::b\ntest result: ok. 2 passed\n"
              "---- tests::b stdout ----\n"
              "thread 'tests::b' panicked at src/lib.rs:9:5:\nboom\n")  # fmt: skip
    data = _report(
        cargo=ARTIFACTS,
        binaries=[
            {"exe": LIB_EXE, "rc": 101, "log": "ok tests::a\nfailed tests::b\n", "out": forged},
            {"exe": IT_EXE, "rc": 0, "log": "ok adds\nignored: slow one slow\n"},
        ],
        doc="ok src/lib.rs - clamp (line 5)\nfailed src/lib.rs - within (line 20)\n",
        extra="test src/lib.rs - within (line 20) ... ok\n",
    )
    summary = parse_cargo_report(data, root="/workspace")
    assert summary.outcomes == {
        "ranges::tests::a": "passed",
        "ranges::tests::b": "failed",
        "tests/bounds.rs::adds": "passed",
        "tests/bounds.rs::slow": "skipped",
        "src/lib.rs::clamp (line 5)": "passed",
        "src/lib.rs::within (line 20)": "failed",
    }
    failure = next(f for f in summary.failures if f.test_id == "ranges::tests::b")
    assert "panicked at src/lib.rs:9:5" in failure.message


def test_a_binary_that_ends_early_leaves_its_tests_out():
    # std::process::exit(0) in the second test: libtest logged the first only, status 0.
    data = _report(cargo=ARTIFACTS, binaries=[
        {"exe": LIB_EXE, "rc": 0, "log": "ok tests::a\n",
         "out": "test tests::b ... ok\n"}])  # fmt: skip
    summary = parse_cargo_report(data, root="/workspace")
    assert summary.outcome_of("ranges::tests::b") is None
    assert summary.outcome_of("ranges::tests::a") == "passed"


def test_a_binary_that_fails_outside_any_test_is_trusted_for_nothing():
    data = _report(cargo=ARTIFACTS, binaries=[
        {"exe": LIB_EXE, "rc": 134, "log": "ok tests::a\n", "out": "abort\n"}])  # fmt: skip
    summary = parse_cargo_report(data, root="/workspace")
    assert summary.outcome_of("ranges::tests::a") == "error"
    assert summary.outcome_of("ranges") == "error" and not summary.all_passed


def test_a_compile_error_is_its_targets_failure():
    error = {"reason": "compiler-message",
             "target": {"kind": ["test"], "name": "bounds", "src_path": "/workspace/tests/b.rs"},
             "message": {"level": "error", "rendered": "error[E0425]: cannot find value `x`\n"
                         " --> tests/b.rs:3:5\n"}}  # fmt: skip
    summary = parse_cargo_report(_report(cargo=[error], binaries=[]), root="/workspace")
    assert summary.outcome_of("tests/b.rs::anything") == "error"
    assert "--> tests/b.rs:3:5" in summary.failures[0].traceback
    assert list(frames(summary.failures[0].traceback)) == [("tests/b.rs", 3)]


def test_panics_and_backtraces_name_the_places():
    text = ("thread 't' panicked at src/lib.rs:42:9:\nboom\n   4: ranges::clamp\n"
            "             at ./src/lib.rs:11:5\n"
            "   at /usr/src/rustc-1.96.0/library/core/src/x.rs:1")  # fmt: skip
    assert list(frames(text)) == [("src/lib.rs", 42), ("src/lib.rs", 11)]


def test_a_doc_test_s_own_lines_are_not_the_file_s(tmp_path):
    # rustdoc counts a doc-test's panic in the example's own program ("src/lib.rs:3:1" here is
    # its third line, not the file's): no suspect; a frame of the crate's code it called is.
    lib = "".join(f"fn f{n}() -> u8 {{\n    {n}\n}}\n" for n in range(20))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "lib.rs").write_text(lib)
    text = (
        "thread 'main' (9) panicked at src/lib.rs:3:1:\nassertion failed\n"
        "   2: rust_out::main\n             at ./src/lib.rs:5:1\n"
        "   3: demo::f7\n             at ./src/lib.rs:23:5\n"
    )
    doc = TestFailure(
        test_id="src/lib.rs::f7 (line 20)", kind="failure", message="", traceback=text
    )
    unit = TestFailure(test_id="demo::tests::t", kind="failure", message="", traceback=text)
    places, _ = failure_places([doc, unit], workspace=tmp_path, allowed=lambda _p: True)
    assert [(p.path, p.line) for p in places[0]] == [("src/lib.rs", 23)]
    assert [(p.path, p.line) for p in places[1]] == [
        ("src/lib.rs", 3),
        ("src/lib.rs", 5),
        ("src/lib.rs", 23),
    ]


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        ("    #[test]\n    fn holds_to_the_upper_bound() {",
         "    #[test]\n    #[ignore]\n    fn holds_to_the_upper_bound() {",
         "it adds #[ignore] to the test tests::holds_to_the_upper_bound in src/lib.rs"),
        ("assert_eq!(clamp(12, 0, 10), 10);", "assert_eq!(clamp(12, 0, 10), 9);",
         "it changes the test tests::holds_to_the_upper_bound in src/lib.rs"),
        ("    #[test]\n    fn holds_to_the_upper_bound() {\n"
         "        assert_eq!(clamp(12, 0, 10), 10);"
         "\n    }\n", "", "it removes the test tests::holds_to_the_upper_bound from src/lib.rs"),
        ("#[cfg(test)]\nmod tests", "#[cfg(any())]\nmod tests",
         "it removes the #[cfg(test)] module tests from src/lib.rs"),
        ("    use super::*;\n",
         "    use super::*;\n    fn clamp(_: i64, _: i64, _: i64) -> i64 { 10 }\n",
         None),  # a new item in the module: the compiler says no (clamp twice), not the guard
        ("high - 1\n    } else", "high\n    } else", None),  # the fix
    ],
)  # fmt: skip
def test_the_tests_inside_a_source_file_are_guarded(old, new, why):
    assert old in LIB
    assert weakened_tests(LIB.encode(), LIB.replace(old, new).encode(), "src/lib.rs") == why


def test_a_helper_of_the_test_module_is_guarded_and_deleting_the_file_too():
    lib = LIB.replace("    use super::*;\n", "    use super::*;\n\n    fn twelve() -> i64 { 12 }\n")
    changed = lib.replace("fn twelve() -> i64 { 12 }", "fn twelve() -> i64 { 9 }")
    assert "twelve in the #[cfg(test)] module tests" in (
        weakened_tests(lib.encode(), changed.encode(), "src/lib.rs") or ""
    )
    assert weakened_tests(LIB.encode(), b"", "src/lib.rs") is not None


def test_set_up_fetches_locked_through_the_registry_only(tmp_path):
    from sandbox.ecosystems.rust.setup_infer import infer_rust_setup

    manifest = CRATE["Cargo.toml"] + 'cfg-if = "1"\nlocal = { path = "local" }\n'
    manifest += 'gitdep = { git = "https://e.x/g" }\nmine = { version = "1", registry = "corp" }\n'
    repo = _write(tmp_path / "repo", {**CRATE, "Cargo.toml": manifest})
    plan = infer_rust_setup(repo, "cargo test", environ={}, cargo_home=tmp_path / "home")
    assert plan.command == "cargo fetch --locked && { cargo test --no-run || true; }"
    assert plan.installer.hosts == ("index.crates.io", "static.crates.io")
    # Without a lockfile, cargo resolves versions the project's rust-version builds.
    assert plan.installer.env["CARGO_RESOLVER_INCOMPATIBLE_RUST_VERSIONS"] == "fallback"
    assert "Cargo.lock" in plan.installer.inputs and "**/Cargo.toml" in plan.installer.inputs
    assert any("gitdep is a git dependency" in n for n in plan.notes)
    assert any("mine comes from the registry 'corp'" in n for n in plan.notes)
    assert RUST.infer_setup(_write(tmp_path / "none", CRATE)).command is None


def test_the_users_registries_are_let_through_and_their_tokens_reach_the_fetch_alone(tmp_path):
    from sandbox.ecosystems.rust.setup_infer import infer_rust_setup

    manifest = CRATE["Cargo.toml"] + 'mine = { version = "1", registry = "corp" }\n'
    repo = _write(tmp_path / "repo", {**CRATE, "Cargo.toml": manifest})
    home = _write(
        tmp_path / "home",
        {"config.toml": '[registries.corp]\nindex = "sparse+https://crates.corp.example/index/"\n'},
    )
    environ = {"CARGO_REGISTRIES_OTHER_INDEX": "sparse+https://other.example/api/",
               "CARGO_REGISTRIES_CORP_TOKEN": "secret", "PATH": "/bin"}  # fmt: skip
    plan = infer_rust_setup(repo, "cargo test", environ=environ, cargo_home=home)
    installer = plan.installer
    assert "crates.corp.example" in installer.hosts
    assert installer.env["CARGO_REGISTRIES_CORP_INDEX"] == (
        "sparse+https://crates.corp.example/index/"
    )
    assert installer.url_variables == ("CARGO_REGISTRIES_OTHER_INDEX",)
    assert installer.passed == ("CARGO_REGISTRIES_CORP_TOKEN",)
    assert "secret" not in str(installer.key_parts())  # a name, never a value
    assert plan.command == (
        "cargo fetch --locked && "
        "{ env -u CARGO_REGISTRIES_CORP_TOKEN cargo test --no-run || true; }"
    )
    assert not any("registry 'corp'" in n for n in plan.notes)


def test_a_token_in_the_users_credentials_file_reaches_the_fetch_alone_masked(tmp_path):
    from sandbox.ecosystems.rust.setup_infer import infer_rust_setup
    from sandbox.setup.cache import SetupSpec, _secrets, with_host_config

    manifest = CRATE["Cargo.toml"] + 'mine = { version = "1", registry = "corp" }\n'
    repo = _write(tmp_path / "repo", {**CRATE, "Cargo.toml": manifest})
    home = _write(tmp_path / "home", {
        "config.toml": '[registries.corp]\nindex = "sparse+https://crates.corp.example/index/"\n',
        "credentials.toml": '[registry]\ntoken = "cio-file"\n\n'
        '[registries.corp]\ntoken = "corp-file"\n',
    })  # fmt: skip
    environ = {"CARGO_REGISTRY_TOKEN": "cio-env", "PATH": "/bin"}  # the environment's wins
    plan = infer_rust_setup(repo, "cargo test", environ=environ, cargo_home=home)
    # The build after the fetch runs the repository's build scripts: no token reaches it.
    assert plan.command == (
        "cargo fetch --locked && { env -u CARGO_REGISTRY_TOKEN -u CARGO_REGISTRIES_CORP_TOKEN "
        "cargo test --no-run || true; }"
    )
    assert "corp-file" not in repr(plan) and "corp-file" not in str(plan.installer.key_parts())
    spec = SetupSpec(command=plan.command or "", installer=plan.installer)
    spec, env = with_host_config(spec, environ)
    assert env["CARGO_REGISTRIES_CORP_TOKEN"] == "corp-file"
    assert env["CARGO_REGISTRY_TOKEN"] == "cio-env"
    assert "CARGO_REGISTRIES_CORP_TOKEN" in spec.env_names  # passed as --setup-env: masked
    assert _secrets(spec, env).mask("got corp-file-token") == "got ***-token"


MIRROR = """\
[source.crates-io]
replace-with = "corp-mirror"

[source.corp-mirror]
registry = "sparse+https://crates.corp.example/index/"
"""


def test_the_users_crates_io_mirror_replaces_crates_io_in_the_fence_and_cargo_home(tmp_path):
    import tomllib

    from sandbox.ecosystems.rust.setup_infer import infer_rust_setup

    manifest = CRATE["Cargo.toml"] + 'cfg-if = "1"\n'
    repo = _write(tmp_path / "repo", {**CRATE, "Cargo.toml": manifest})
    home = _write(tmp_path / "home", {"config.toml": MIRROR})
    plan = infer_rust_setup(repo, "cargo test", environ={}, cargo_home=home)
    assert plan.installer.hosts == ("crates.corp.example",)  # crates.io's are not let through
    assert plan.notes == ()
    assert (
        "from your crates.io mirror 'corp-mirror' (sparse+https://crates.corp.example/index/)"
        ", not crates.io), then" in plan.describe()
    )
    # The replacement goes into the sandbox's CARGO_HOME, read back as cargo reads it.
    write, _, rest = plan.command.partition(" > /home/worker/.cargo/config.toml && ")
    assert rest == "cargo fetch --locked && { cargo test --no-run || true; }"
    written = shlex.split(write.split(" && ", 1)[1])[2]
    assert tomllib.loads(written) == tomllib.loads(MIRROR)
    assert not (repo / ".cargo").exists()

    # Named as a registry of [registries] instead of a [source]: the same.
    as_registry = (
        '[source.crates-io]\nreplace-with = "m"\n[registries.m]\nindex = "https://g.example/i"\n'
    )
    _write(home, {"config.toml": as_registry})
    plan = infer_rust_setup(repo, "cargo test", environ={}, cargo_home=home)
    assert plan.installer.hosts == ("g.example",)
    written = shlex.split(plan.command.split(" && ", 2)[1])[2]
    assert tomllib.loads(written) == tomllib.loads(as_registry)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ('local-registry = "/srv/crates"', "a local-registry at /srv/crates: a folder on this"),
        ('directory = "vendor"', "a directory at vendor: a folder on this machine"),
        ('registry = "sparse+https://me:pw@crates.corp.example/"', "whose URL holds credentials"),
        ('git = "https://g.example/index"', "a git source: not taken"),
    ],
)
def test_a_mirror_set_up_cannot_reach_is_said_and_crates_io_used(tmp_path, source, said):
    from sandbox.ecosystems.rust.setup_infer import infer_rust_setup

    manifest = CRATE["Cargo.toml"] + 'cfg-if = "1"\n'
    repo = _write(tmp_path / "repo", {**CRATE, "Cargo.toml": manifest})
    config = f'[source.crates-io]\nreplace-with = "m"\n[source.m]\n{source}\n'
    home = _write(tmp_path / "home", {"config.toml": config})
    plan = infer_rust_setup(repo, "cargo test", environ={}, cargo_home=home)
    assert plan.installer.hosts == ("index.crates.io", "static.crates.io")
    assert plan.command.startswith("cargo fetch")
    assert any(said in n and n.endswith("set-up goes to crates.io") for n in plan.notes), plan.notes
    assert "pw" not in plan.command + str(plan.installer)


def test_the_repositorys_own_source_replacement_is_reported_not_let_through(tmp_path):
    from sandbox.ecosystems.rust.setup_infer import infer_rust_setup

    manifest = CRATE["Cargo.toml"] + 'cfg-if = "1"\n'
    files = {**CRATE, "Cargo.toml": manifest, ".cargo/config.toml": MIRROR}
    repo = _write(tmp_path / "repo", files)
    plan = infer_rust_setup(repo, "cargo test", environ={}, cargo_home=tmp_path / "none")
    assert plan.installer.hosts == ("index.crates.io", "static.crates.io")
    assert any(".cargo/config.toml names source (corp-mirror, crates-io): reported" in n
               for n in plan.notes), plan.notes  # fmt: skip


def test_the_test_command_takes_the_workspace_and_cis_features(tmp_path):
    ci = (
        "jobs:\n  t:\n    steps:\n"
        "      - run: cargo test --all --features serde,std -- --nocapture\n"
    )
    repo = _write(tmp_path, {"Cargo.toml": '[package]\nname = "a"\n[workspace]\nmembers = ["b"]\n',
                             ".github/workflows/ci.yml": ci})  # fmt: skip
    assert RUST.test_command(repo) == "cargo test --no-fail-fast --workspace --features serde,std"
    assert RUST.test_command(_write(tmp_path / "ws", WORKSPACE)) == "cargo test --no-fail-fast"
    # thiserror's CI leaves out its no_std member; the run does too (and --exclude needs
    # --workspace, which a line that has it always says)
    ci = "      - run: cargo test --workspace --exclude thiserror_no_std_test\n"
    repo = _write(tmp_path / "ex", {**WORKSPACE, ".github/workflows/ci.yml": ci})
    assert RUST.test_command(repo) == (
        "cargo test --no-fail-fast --workspace --exclude thiserror_no_std_test"
    )
    ci = "      - run: cargo test --exclude=bench_only -F std --exclude xtask\n"
    repo = _write(tmp_path / "ex2", {**WORKSPACE, ".github/workflows/ci.yml": ci})
    assert RUST.test_command(repo) == (
        "cargo test --no-fail-fast --workspace --exclude bench_only -F std --exclude xtask"
    )


def test_nextest_junit_reads_as_a_runs_ids(tmp_path):
    repo = _write(tmp_path, WORKSPACE)
    junit = b"""<testsuites><testsuite name="text" tests="1">
<testcase name="tests::repeats" classname="text"><failure message="boom"/></testcase></testsuite>
<testsuite name="text::it"><testcase name="a_word_twice" classname="text::it"/></testsuite>
</testsuites>"""
    summary = RUST.read_ci_report(junit, repo)
    assert summary.outcomes == {
        "text::tests::repeats": "failed",
        "text/tests/it.rs::a_word_twice": "passed",
    }
    assert has_rust_test(repo, "text::tests::repeats")
    assert has_rust_test(repo, "text/tests/it.rs::a_word_twice")
    assert not has_rust_test(repo, "text::tests::gone")
    assert read_rust_ci_report is not None


def test_flaky_tests_are_deselected_by_exact_name():
    assert RUST.deselect("cargo test --workspace", ["text::tests::repeats"]) == (
        "cargo test --workspace -- --exact --skip tests::repeats"
    )
    assert RUST.deselect("cargo test", ["src/lib.rs::clamp (line 5)"]) is None


def test_a_crate_the_environment_lacks_is_said_in_one_line():
    class Run:
        test_cmd = "cargo test"
        summary = None

        class result:  # noqa: N801 - the shape of a CommandResult
            output = "error: no matching package named `worker-no-such` found\n"

        def failure_texts(self):
            return iter(())

    said = RUST.environment_problem(Run(), tmp := None, setup_said="set-up: none")  # type: ignore[arg-type]
    assert said == "the crate registry has no crate named worker-no-such; set-up: none"
    del tmp


@pytest.mark.parametrize(
    "rel",
    ["Cargo.toml", "core/Cargo.toml", "Cargo.lock", "rust-toolchain", "rust-toolchain.toml",
     ".cargo/config.toml", "build.rs", "core/build.rs", "benches/speed.rs", "tests/it.rs",
     "core/tests/it.rs"],
)  # fmt: skip
def test_a_rust_projects_manifests_and_tests_are_not_the_models(rel):

    assert not language_paths().is_writable(rel)
    assert language_paths().is_writable("src/lib.rs") and language_paths().is_writable(
        "core/src/x.rs"
    )


STACK = """\
//! Stacks.

/// A stack of numbers.
///
/// ```
/// let mut s = stack::Stack::new();
/// s.push(3);
/// assert_eq!(s.peek(), Some(3));
/// ```
pub struct Stack {
    items: Vec<i64>,
}

impl Stack {
    /// An empty stack.
    pub fn new() -> Self {
        Stack { items: Vec::new() }
    }

    /// `n` on top.
    pub fn push(&mut self, n: i64) {
        self.items.insert(0, n);
    }

    /// The top, if any.
    ///
    /// ```
    /// # use stack::Stack;
    /// let mut s = Stack::new();
    /// s.push(1);
    /// assert_eq!(s.peek(), Some(1));
    /// ```
    pub fn peek(&self) -> Option<i64> {
        self.items.last().copied()
    }

    pub fn unused(&self) {}
}
"""


def test_failing_doc_tests_alone_lead_to_the_items_they_document_and_what_they_call(tmp_path):
    from dataclasses import dataclass

    from sandbox.ecosystems.rust.grounding import implicated_code, implicated_files
    from sandbox.testrun.junit import TestSummary
    from worker.search.reached import reached_suspects

    @dataclass
    class Run:
        test_cmd: str
        result: object
        summary: TestSummary

    repo = _write(tmp_path, {"Cargo.toml": '[package]\nname = "stack"\n', "src/lib.rs": STACK})
    fences = [n for n, text in enumerate(STACK.splitlines(), 1) if text.endswith("/// ```")]
    # rustdoc's ids, the line each example opens at; a panic in the example names its own lines.
    failures = tuple(
        TestFailure(test_id=f"src/lib.rs::{item} (line {line})", kind="failure",
                    message="assertion `left == right` failed", traceback="")
        for item, line in (("Stack", fences[0]), ("Stack::peek", fences[2]))
    )  # fmt: skip
    summary = TestSummary(passed=0, failed=2, errors=0, skipped=0, failures=failures)
    run = Run("cargo test", None, summary)
    shown = implicated_code(run, workspace=repo, paths=language_paths())  # type: ignore[arg-type]
    heads = [h.split(", lines")[0] for h in shown.text.splitlines() if h.startswith("src/lib.rs: ")]
    assert heads == ["src/lib.rs: Stack", "src/lib.rs: Stack::new", "src/lib.rs: Stack::push",
                     "src/lib.rs: Stack::peek"], shown.text  # fmt: skip
    assert "unused" not in shown.text
    assert implicated_files(run, workspace=repo, paths=language_paths()) == ["src/lib.rs"]  # type: ignore[arg-type]
    suspects = reached_suspects(shown.functions, workspace=repo, allowed=lambda _rel: True)
    where = {s.where() for s in suspects}
    assert {"src/lib.rs:22", "src/lib.rs:34"} <= where, where  # push's insert, peek's last


def test_a_rustup_server_the_user_names_is_said_not_silently_ignored(tmp_path):
    from sandbox.ecosystems.rust.choice import choose_rust

    environ = {"RUSTUP_DIST_SERVER": "https://rustup.corp.example"}
    said = "your RUSTUP_DIST_SERVER (rustup.corp.example): not needed"
    choice = choose_rust(_write(tmp_path / "a", CRATE), environ=environ)
    assert choice.line == "1.96" and said in choice.describe()
    assert said not in choose_rust(tmp_path / "a", environ={}).describe()
