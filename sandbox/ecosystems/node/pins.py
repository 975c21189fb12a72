"""What a repository says of the Node it runs on: `engines.node` in package.json (the versions it
accepts), and the versions it pins, in this order: `.nvmrc`, `.node-version`, `.tool-versions`
(asdf, mise), `volta.node` in package.json, then the `node-version` of its CI workflows (the
`actions/setup-node` input; a matrix's values through the matrix key it names).

Read, never run, through sandbox/worktree/repo_files.py (no symlinks, 1 MB per file, at most
MAX_WORKFLOWS workflows). nvm's words are understood: `lts/*`, `node`, `latest`, `stable` and
`current` mean "the newest LTS there is" here, `lts/iron` its line (20); `system` and the like
pin nothing.

>>> pin_for("v20.11.1", ".nvmrc").spec, pin_for("lts/iron", ".nvmrc").spec
('20.11.1', '20')
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.ecosystems.node.semver import parse_range, parse_version
from sandbox.worktree.ci_jobs import GITLAB, gitlab_image_versions
from sandbox.worktree.repo_files import RepoFiles
from sandbox.worktree.workflows import workflow_texts, workflow_values

MAX_PINS = 100
KEY = "node-version"
#: nvm's names of the LTS lines (`lts/iron`): https://github.com/nodejs/Release#release-schedule
LTS_NAMES = {
    "argon": 4,
    "boron": 6,
    "carbon": 8,
    "dubnium": 10,
    "erbium": 12,
    "fermium": 14,
    "gallium": 16,
    "hydrogen": 18,
    "iron": 20,
    "jod": 22,
    "krypton": 24,
}
NEWEST_WORDS = {"lts/*", "lts", "node", "latest", "stable", "current"}


@dataclass(frozen=True, kw_only=True)
class Pin:
    """One Node version a file of the repository names."""

    source: str  # ".nvmrc", "package.json volta.node", ".github/workflows/ci.yml"
    text: str  # as written there: "v20.11.1", "lts/*", "18.x"
    spec: str | None  # the range it stands for ("20.11.1", "20"); None: the newest LTS

    @property
    def exact(self) -> bool:
        """It names one release: `20.11.1`."""
        return self.spec is not None and parse_version(self.spec) is not None

    def describe(self) -> str:
        """ ".nvmrc 20.11.1"."""
        return f"{self.source} {self.text}"


@dataclass(frozen=True, kw_only=True)
class NodePins:
    """The project's word on its Node; `pins` in the order they count."""

    engines: str | None = None  # package.json's engines.node, as written
    pins: tuple[Pin, ...] = ()
    notes: tuple[str, ...] = ()


def read_pins(repo: Path) -> NodePins:
    """What `repo`'s files say of its Node (nothing in it is run)."""
    files = RepoFiles(repo)
    package = _package_json(files)
    engines = _field(package, "engines", "node")
    pins: list[Pin] = []
    for name in (".nvmrc", ".node-version"):
        line = _first_line(files.read(name))
        pins += _pins([line] if line else [], name)
    for line in (files.read(".tool-versions") or "").splitlines():
        words = re.sub(r"#.*", "", line).split()
        if len(words) > 1 and words[0] in ("nodejs", "node"):
            pins += _pins(words[1:2], ".tool-versions")
    if volta := _field(package, "volta", "node"):
        pins += _pins([volta], "package.json volta.node")
    for rel, workflow in workflow_texts(files):
        pins += _pins(workflow_values(workflow, KEY), rel)
    pins += _pins(gitlab_image_versions(files, "node"), GITLAB)
    return NodePins(engines=engines, pins=tuple(pins[:MAX_PINS]), notes=tuple(files.notes))


def pin_for(text: str, source: str) -> Pin | None:
    """`text` as a pin, None when it names no version a release has (`system`, `iojs`, a
    matrix expression, an unknown LTS name)."""
    word = text.strip().lower()
    if word in NEWEST_WORDS:
        return Pin(source=source, text=text, spec=None)
    if word.startswith("lts/"):
        major = LTS_NAMES.get(word[4:])
        return None if major is None else Pin(source=source, text=text, spec=str(major))
    if not re.match(r"[v=<>~^\d]", word) or "${{" in word:
        return None
    try:
        parse_range(word)
    except ValueError:
        return None
    return Pin(source=source, text=text, spec=word.lstrip("v") if parse_version(word) else word)


def _pins(texts: list[str], source: str) -> list[Pin]:
    out: list[Pin] = []
    for text in texts:
        pin = pin_for(text, source)
        if pin is not None and all(p.text != pin.text for p in out):
            out.append(pin)
    return out


def _first_line(text: str | None) -> str | None:
    """The first line that is neither blank nor a comment."""
    for line in (text or "").splitlines():
        if bare := re.sub(r"#.*", "", line).strip():
            return bare
    return None


def _package_json(files: RepoFiles) -> dict[str, object] | None:
    text = files.read("package.json")
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        files.notes.append(f"package.json: not valid JSON ({exc}); ignored")
        return None
    return data if isinstance(data, dict) else None


def _field(package: dict[str, object] | None, table: str, key: str) -> str | None:
    """`package[table][key]` when it is a string."""
    section = (package or {}).get(table)
    value = section.get(key) if isinstance(section, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None
