"""A Go module proxy for tests: the static file tree GOPROXY reads, built from modules made here.

`GOPROXY=<url>` asks `<module>/@v/list`, `<version>.info`, `<version>.mod` and `<version>.zip`
(the zip's files under `<module>@<version>/`); any folder server serves that tree
(tests/pkg_index.py's `serve_folder`, in a container on the test's network). `go_sum` gives
the go.sum lines of the modules as the go command computes them (dirhash's h1), so a module
that requires them verifies without a checksum database: its users set GONOSUMDB, as a private
proxy's do.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from collections.abc import Mapping
from pathlib import Path

#: module path -> version -> file name -> text or bytes (go.mod included).
Modules = Mapping[str, Mapping[str, Mapping[str, str | bytes]]]


def build_proxy(root: Path, modules: Modules) -> None:
    """Write the proxy tree of `modules` under `root`."""
    for module, versions in modules.items():
        folder = root / escape_path(module) / "@v"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "list").write_text("".join(f"{v}\n" for v in versions))
        for version, files in versions.items():
            info = {"Version": version, "Time": "2024-01-01T00:00:00Z"}
            (folder / f"{version}.info").write_text(json.dumps(info))
            (folder / f"{version}.mod").write_bytes(_bytes(files["go.mod"]))
            (folder / f"{version}.zip").write_bytes(_zip(module, version, files))


def escape_path(module: str) -> str:
    """The module path as a proxy's URL has it: each capital as `!` and its small letter
    (golang.org/x/mod/module.EscapePath: `github.com/!burnt!sushi/toml`)."""
    return "".join(f"!{c.lower()}" if c.isupper() else c for c in module)


def go_sum(modules: Modules) -> str:
    """The go.sum lines for every version of `modules`."""
    lines = []
    for module, versions in modules.items():
        for version, files in versions.items():
            prefix = f"{module}@{version}/"
            tree = {prefix + name: _bytes(text) for name, text in files.items()}
            lines.append(f"{module} {version} {_h1(tree)}")
            lines.append(f"{module} {version}/go.mod {_h1({'go.mod': _bytes(files['go.mod'])})}")
    return "".join(f"{line}\n" for line in lines)


def _bytes(text: str | bytes) -> bytes:
    return text.encode() if isinstance(text, str) else text


def _h1(files: Mapping[str, bytes]) -> str:
    summary = "".join(
        f"{hashlib.sha256(files[name]).hexdigest()}  {name}\n" for name in sorted(files)
    )
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def _zip(module: str, version: str, files: Mapping[str, str | bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, text in sorted(files.items()):
            archive.writestr(f"{module}@{version}/{name}", text)
    return out.getvalue()
