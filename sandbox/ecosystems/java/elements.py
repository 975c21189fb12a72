"""Reading Maven's XML files (POMs, settings.xml) by element name, namespace or none."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

_NS = re.compile(r"^\{[^}]*\}")


def tag(element: ET.Element) -> str:
    """The element's name without its namespace (`{http://maven.apache.org/POM/4.0.0}`)."""
    return _NS.sub("", element.tag) if isinstance(element.tag, str) else ""


def child(element: ET.Element | None, name: str) -> ET.Element | None:
    """The first child named `name`; None when none (or no element)."""
    if element is None:
        return None
    return next((c for c in element if tag(c) == name), None)


def children(element: ET.Element | None, name: str) -> Iterator[ET.Element]:
    """Every child named `name`."""
    if element is not None:
        yield from (c for c in element if tag(c) == name)


def text(element: ET.Element | None) -> str | None:
    """The element's text, stripped; None when empty (or no element)."""
    if element is None or element.text is None:
        return None
    return element.text.strip() or None
