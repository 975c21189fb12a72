"""No two modules of ours import each other, directly or round a longer circle.

Imports under TYPE_CHECKING and inside functions count too (grimp sees them): a circle there
still means neither module can be read, tested or moved without the other. In-process, no Docker.
"""

from __future__ import annotations

import grimp

PACKAGES = ("worker", "sandbox", "tools", "policies")


def test_no_two_modules_of_ours_import_each_other():
    graph = grimp.build_graph(*PACKAGES, include_external_packages=False)
    circles: dict[frozenset[str], str] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is None:
                continue
            circle = (importer, *back)  # importer -> imported -> ... -> importer
            line = graph.get_import_details(importer=importer, imported=imported)[0]
            where = f"{importer} line {line['line_number']}: {line['line_contents']}"
            circles.setdefault(frozenset(circle), f"{' -> '.join(circle)} ({where})")
    assert not circles, "modules of ours that import each other:\n" + "\n".join(circles.values())
