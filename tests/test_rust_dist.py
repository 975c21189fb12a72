"""A rustup dist server the user names (RUSTUP_DIST_SERVER): which toolchain comes from it, what
the line says, what is refused; and the image of one, built from a real dist server's files
(tests/rust_dist_server.py) served on loopback."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
import uuid
from pathlib import Path

import pytest

from sandbox.ecosystems.rust.choice import choose_rust
from sandbox.ecosystems.rust.dist import DistServer, DistToolchain, DistUnavailable, host_target
from sandbox.ecosystems.rust.dist import parse_manifest as parse
from sandbox.ecosystems.rust.dist_image import ensure_dist_image, installed
from sandbox.ecosystems.rust.errors import WrongRust
from tests.rust_dist_server import dist_server

CRATE = {
    "Cargo.toml": '[package]\nname = "ranges"\nversion = "0.1.0"\nedition = "2021"\n',
    "src/lib.rs": "pub fn one() -> u8 { 1 }\n",
}


def _repo(root: Path, toolchain: str) -> Path:
    for rel, text in {**CRATE, "rust-toolchain": toolchain}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture
def served(tmp_path):
    with dist_server(tmp_path / "dist", releases={"1.77.2": "2024-04-09"}) as server:
        yield server


def test_a_pin_debian_lacks_comes_from_the_users_server_exactly(tmp_path, served):
    environ = {"RUSTUP_DIST_SERVER": served.url + "/"}
    host = served.url.removeprefix("http://")
    choice = choose_rust(_repo(tmp_path / "a", "1.77.2\n"), environ=environ, cache=tmp_path / "c")
    assert isinstance(choice.source, DistToolchain)
    assert choice.source.release == "1.77.2" and choice.line == "1.77"
    line = choice.describe()
    assert line.startswith("Rust 1.77 (rust-toolchain asks for 1.77.2: that toolchain; "
                           f"from your RUSTUP_DIST_SERVER ({host})): image "
                           "worker-sandbox:rust-1.77.2-dist-"), line  # fmt: skip
    # Debian's 1.85 would build it too; the exact pin from the user's server wins.
    assert "1.85" not in line
    assert [c.name for c in choice.source.components] == ["rustc", "cargo", "rust-std"]
    assert all(c.url.startswith(served.url + "/dist/2024-04-09/") for c in choice.source.components)
    # A release Debian has is Debian's, offline: the server is not even asked.
    asked = list(served.requested)
    debian = choose_rust(_repo(tmp_path / "b", "1.85\n"), environ=environ, cache=tmp_path / "c")
    assert debian.image == "worker-sandbox:rust1.85" and served.requested == asked
    assert f"your RUSTUP_DIST_SERVER ({host}): not needed" in debian.describe()


def test_what_the_server_lacks_or_cannot_answer_is_one_line_naming_both(tmp_path, served):
    repo = _repo(tmp_path / "n", "nightly\n")
    environ = {"RUSTUP_DIST_SERVER": served.url}
    with pytest.raises(WrongRust) as lacking:
        choose_rust(repo, environ=environ, cache=tmp_path / "c")
    said = str(lacking.value)
    assert "rust-toolchain asks for Rust 'nightly'" in said and "available: 1.63" in said
    assert said.endswith(f"({served.url.removeprefix('http://')}) has no "
                         "dist/channel-rust-nightly.toml"), said  # fmt: skip
    assert "\n" not in said
    # A pin the server lacks falls back to Debian's newer release, the server named.
    older = choose_rust(_repo(tmp_path / "o", "1.70\n"), environ=environ, cache=tmp_path / "c")
    assert older.line == "1.85" and "has no dist/channel-rust-1.70.toml" in older.describe()
    with pytest.raises(WrongRust, match=r"did not answer .*Connection refused"):
        choose_rust(repo, environ={"RUSTUP_DIST_SERVER": "http://127.0.0.1:9"},
                    cache=tmp_path / "c")  # fmt: skip


def test_a_server_url_with_credentials_is_refused_without_repeating_them(tmp_path, served):
    url = served.url.replace("http://", "http://me:hunter2@")
    environ = {"RUSTUP_DIST_SERVER": url}
    # Not taken: the pin gets Debian's next release, the refusal said in the line.
    choice = choose_rust(_repo(tmp_path / "p", "1.77.2\n"), environ=environ, cache=tmp_path / "c")
    line = choice.describe()
    assert choice.line == "1.85" and "holds credentials in its URL: not taken" in line, line
    with pytest.raises(WrongRust) as raised:  # and a channel no other source has: exit 6
        choose_rust(_repo(tmp_path / "n", "nightly\n"), environ=environ, cache=tmp_path / "c")
    assert "holds credentials in its URL: not taken" in str(raised.value)
    for said in (line, str(raised.value)):
        assert "hunter2" not in said and "me:" not in said
    assert served.requested == []


def test_only_the_servers_own_files_are_fetched_and_installed(tmp_path):
    server = DistServer("https://mirror.example/rust")
    target = host_target()
    entry = (f'manifest-version = "2"\n[pkg.rustc]\nversion = "1.77.2 (x 2024-04-09)"\n'
             f"[pkg.rustc.target.{target}]\navailable = true\n"
             f'url = "{{url}}"\nhash = "{"0" * 64}"\n')  # fmt: skip
    with pytest.raises(DistUnavailable, match=r"another host \(evil.example\)"):
        parse(entry.format(url="https://evil.example/r.tar.gz"), server=server,
              channel="1.77.2", target=target)  # fmt: skip
    with pytest.raises(DistUnavailable, match="has no cargo"):  # upstream's URL is the server's
        parse(entry.format(url="https://static.rust-lang.org/dist/r.tar.gz"), server=server,
              channel="1.77.2", target=target)  # fmt: skip
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, text in (("t/components", "rustc\n"), ("t/rustc/manifest.in", "file:../x\n")):
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    out.seek(0)
    with tarfile.open(fileobj=out) as tar, pytest.raises(DistUnavailable, match="outside"):
        list(installed(tar, name="t.tar"))
    # What the repository writes reaches the server as a release or a channel name alone.
    with pytest.raises(WrongRust, match="'../../etc' is no toolchain name a dist server has"):
        choose_rust(_repo(tmp_path / "p", "../../etc\n"),
                    environ={"RUSTUP_DIST_SERVER": server.url}, cache=tmp_path / "c")  # fmt: skip


@pytest.mark.docker
def test_the_servers_toolchain_is_the_images_rustc_and_cargo(docker_client, sandbox_image,
                                                             tmp_path, served):  # fmt: skip
    environ = {"RUSTUP_DIST_SERVER": served.url}
    choice = choose_rust(_repo(tmp_path / "a", "1.77.2\n"), environ=environ, cache=tmp_path / "c")
    assert isinstance(choice.source, DistToolchain)
    name = f"worker-test-rustdist:{uuid.uuid4().hex[:8]}"
    said: list[str] = []
    try:
        built = ensure_dist_image(docker_client, choice.source, progress=said.append, name=name,
                                  cache=tmp_path / "c")  # fmt: skip
        assert built.rust == "1.77.2" and built.built_s is not None
        ran = subprocess.run(["docker", "run", "--rm", "--network", "none", name, "sh", "-c",
                              "rustc --version; cargo --version; id -u; echo $CARGO_HOME; "
                              "ls /usr/local/lib/rustlib/*/lib"],
                             capture_output=True, text=True, check=True)  # fmt: skip
        lines = ran.stdout.splitlines()
        assert lines[:2] == ["rustc 1.77.2 (0123456789 2024-04-09)",
                             "cargo 1.77.2 (abcdef0123 2024-04-09)"], ran.stdout  # fmt: skip
        assert lines[2] != "0" and lines[3] == "/home/worker/.cargo"
        assert lines[4] == "libstd-0123.rlib"
        fetched = len(served.requested)
        again = ensure_dist_image(docker_client, choice.source, progress=said.append, name=name,
                                  cache=tmp_path / "c")  # fmt: skip
        assert again.built_s is None and len(served.requested) == fetched  # built once
        assert any(re.search(r"downloading rustc-1\.77\.2-.*\.tar\.xz", s) for s in said)
    finally:
        docker_client.images.remove(name, force=True)
