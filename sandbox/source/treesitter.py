"""One file parsed by a tree-sitter grammar, bounded in time: what the languages that parse with
tree-sitter (sandbox/ecosystems/node/source.py, go/source.py) share."""

from __future__ import annotations

import time
from dataclasses import dataclass

import tree_sitter

PARSE_S = 1.0  # one file's parse, at most (tree-sitter parses about 10 MB/s here)
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class ParsedFile:
    """One parsed file: its workspace-relative path, its bytes and its syntax tree."""

    path: str
    data: bytes
    tree: tree_sitter.Tree

    @property
    def root(self) -> tree_sitter.Node:
        return self.tree.root_node

    def text(self, node: tree_sitter.Node | None) -> str:
        if node is None:
            return ""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def lines(self) -> list[str]:
        """The file's lines, split as read_file splits them."""
        return self.data.decode("utf-8", "replace").splitlines()


def parse_tree(
    language: tree_sitter.Language, data: bytes, *, timeout_s: float = PARSE_S
) -> tree_sitter.Tree | None:
    """`data` parsed with `language`; None when the parse took longer than `timeout_s`."""
    parser = tree_sitter.Parser(language)
    deadline = time.monotonic() + timeout_s
    try:
        return parser.parse(
            lambda at, _point: data[at : at + _CHUNK],
            progress_callback=lambda _at, _errors: time.monotonic() > deadline,
        )
    except ValueError:  # tree-sitter's word for a parse the callback stopped
        return None
