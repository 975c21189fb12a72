"""Which Node a run's sandbox gets, from what the repository says
(sandbox/ecosystems/node/pins.py) and the releases the npm registry lists
(sandbox/ecosystems/node/registry.py).

In order: the first file whose pins name a release the registry has and `engines.node` accepts
(`.nvmrc`, `.node-version`, `.tool-versions`, `volta.node`, then the CI workflows; an exact
version is taken as written, a line or a range as its newest release; within one file, a CI
matrix, the newest LTS line among them); else, where the pins name only lines older than any
release here (a CI matrix of 10, 12, 14; the registry's `node` package starts at 16), the
oldest LTS line here that `engines.node` accepts, nearest to what CI tests, rather than the
newest; else the newest release `engines.node` accepts (on an
LTS line when one is accepted); else, with no `engines.node`, the newest LTS. When
`engines.node` accepts nothing the registry has: `WrongNode` (exit 6), naming what was asked
and what exists.

LTS lines are the even majors, from the release their line became LTS: 22.11.0 and 24.11.0 were
their lines' first LTS releases (20.9.0 and 18.12.0 before them), so an even line counts once
the registry has a release of it numbered x.11 or later. The registry's publish times cannot
tell instead: for these packages they are the dates of a backfill (16.0.0 listed in 2024).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

from sandbox.ecosystems.node.errors import WrongNode
from sandbox.ecosystems.node.image import NodeImage, node_image_name
from sandbox.ecosystems.node.pins import NodePins, read_pins
from sandbox.ecosystems.node.registry import node_package, registry_url, releases
from sandbox.ecosystems.node.semver import Range, Version, parse_range

#: Older lines are left out: no npm or corepack release for them was tried here.
MIN_MAJOR = 16
LTS_FROM_MINOR = 11


@dataclass(frozen=True, kw_only=True)
class NodeChoice:
    """The Node (and so the image) a run gets, and why."""

    version: str  # the release chosen: "22.23.5"
    image_version: str  # what ensure_node_image is asked: "22" (its newest) or "22.12.0"
    why: str  # "engines.node >=18 in package.json", ".nvmrc 20.11.1", "the newest LTS"
    engines: str | None = None
    passed_over: tuple[str, ...] = ()  # pins no release has, or engines.node refuses

    @property
    def image(self) -> str:
        """The image's name: `worker-sandbox:node22`."""
        return node_image_name(self.image_version)

    def describe(self, image: NodeImage | None = None) -> str:
        """One line: the Node, why, and its image (built now, or there already)."""
        why = "; ".join((self.why, *(f"passed over {p}" for p in self.passed_over)))
        if image is None:
            return f"Node {self.version} ({why}): image {self.image}"
        how = "up to date" if image.built_s is None else f"built once in {image.built_s:.0f} s"
        return f"Node {image.node or self.version} ({why}): image {image.name}, {how}"

    def to_dict(self, *, image: NodeImage | None = None) -> dict[str, Any]:
        """The report's `setup.node_choice`; `image`: the one ensured for it."""
        return {
            "version": image.node if image and image.node else self.version,
            "npm": image.npm if image else None,
            "image": image.name if image else self.image,
            "why": self.why,
            "engines": self.engines,
            "passed_over": list(self.passed_over),
            "built_s": image.built_s if image else None,
        }


def choose_node(
    repo: Path, *, registry: str | None = None, progress: Callable[[str], None] = lambda _m: None
) -> NodeChoice:
    """The Node for a run on `repo`, from its files and the releases `registry` (else
    npm_config_registry, else the public registry) lists, the cached list when fresh or offline."""
    listed = releases(node_package(), registry=registry_url(registry), progress=progress)
    return pick_node(read_pins(repo), [r.release for r in listed.values()])


def pick_node(pins: NodePins, available: Sequence[Version]) -> NodeChoice:
    """The release for a project that says `pins` of its Node, among `available` (the module's
    order)."""
    there = sorted(v for v in available if v[0] >= MIN_MAJOR)
    if not there:
        raise WrongNode("the registry lists no Node release to choose from")
    engines = _range(pins.engines)
    lts = _lts_lines(there)

    def newest(versions: list[Version]) -> Version:  # on an LTS line when there is one
        return max([v for v in versions if v[0] in lts] or versions)

    ok = [v for v in there if engines is None or engines.accepts(v)]
    passed_over: list[str] = []
    if pins.engines and engines is None:
        passed_over.append(f"engines.node {pins.engines} (not a version range)")
    for _source, group in groupby(pins.pins, key=lambda p: p.source):
        here = list(group)
        found: list[tuple[Version, str]] = []
        for pin in here:
            spec = None if pin.spec is None else parse_range(pin.spec)
            hits = [v for v in ok if spec is None or spec.accepts(v)]
            if hits:
                found.append((newest(hits), pin.describe()))
        if found:
            version, why = max(found, key=lambda f: (f[0][0] in lts, f[0]))
            return _choice(version, why, there, pins, passed_over)
        passed_over += [p.describe() for p in here]
    if (nearest := _nearest_to_older(pins, there, ok, lts)) is not None:
        version, why = nearest
        return _choice(version, why, there, pins, passed_over)
    if pins.engines and engines is not None:
        if not ok:
            raise WrongNode(
                f"the project asks for Node {pins.engines} (engines.node in package.json); "
                f"the registry has {_span(there)}"
            )
        why = f"engines.node {pins.engines} in package.json"
        return _choice(newest(ok), why, there, pins, passed_over)
    line = max(lts, default=there[-1][0])
    why = "the newest LTS" if line in lts else "the newest release"
    return _choice(max(v for v in there if v[0] == line), why, there, pins, passed_over)


def _nearest_to_older(
    pins: NodePins, there: list[Version], ok: list[Version], lts: set[int]
) -> tuple[Version, str] | None:
    """Where the pins name only lines older than any release here (a CI matrix of 10, 12 and
    14), the release nearest the newest of them: the oldest line here that engines.node
    accepts (an LTS one when there is), at its newest release. None when no pin is older."""
    older = []
    for pin in pins.pins:
        major = pin.spec.split(".", 1)[0] if pin.spec else ""
        if major.isdigit() and ok and int(major) < there[0][0]:
            older.append((int(major), pin))
    if not older:
        return None
    _major, pin = max(older, key=lambda o: o[0])
    lines = sorted({v[0] for v in ok})
    line = next((n for n in lines if n in lts), lines[0])
    version = max(v for v in ok if v[0] == line)
    return version, f"the nearest to {pin.describe()}, which is older than any release here"


def _choice(
    version: Version, why: str, there: list[Version], pins: NodePins, passed_over: list[str]
) -> NodeChoice:
    newest_of_line = max(v for v in there if v[0] == version[0])
    return NodeChoice(
        version=_dotted(version),
        image_version=str(version[0]) if version == newest_of_line else _dotted(version),
        why=why,
        engines=pins.engines,
        passed_over=tuple(passed_over),
    )


def _lts_lines(there: list[Version]) -> set[int]:
    return {v[0] for v in there if v[0] % 2 == 0 and v[1] >= LTS_FROM_MINOR}


def _range(text: str | None) -> Range | None:
    """engines.node parsed; None when absent or unreadable (it then refuses nothing)."""
    if text is None:
        return None
    try:
        return parse_range(text)
    except ValueError:
        return None


def _span(there: list[Version]) -> str:
    """ "16.0.0 to 26.12.1", "only 22.12.0"."""
    low, high = _dotted(there[0]), _dotted(there[-1])
    return f"only {low}" if low == high else f"{low} to {high}"


def _dotted(version: Version) -> str:
    return ".".join(map(str, version))
