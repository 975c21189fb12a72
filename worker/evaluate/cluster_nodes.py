"""The nodes of a cluster eval as the driver sees them: found, self-checked, used, or refused."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(kw_only=True)
class Node:
    """One Ray node: `checking` until its self-check answers, then `ok` or `refused`; `dead`
    once Ray says so. Only an `ok` node gets tasks."""

    id: str
    name: str
    capacity: int  # tasks at once: the node's CPUs
    state: str = "checking"
    why: str = ""
    running: int = 0
    held_tasks: bool = False

    @property
    def free(self) -> int:
        return self.capacity - self.running if self.state == "ok" else 0


@dataclass(kw_only=True)
class NodeTable:
    """Every node seen in this eval, by Ray's node id."""

    nodes: dict[str, Node] = field(default_factory=dict)

    def update(self, listing: list[dict[str, Any]]) -> tuple[list[Node], list[Node]]:
        """Take in `ray.nodes()`: returns (nodes new and alive, nodes that just died)."""
        joined: list[Node] = []
        died: list[Node] = []
        for raw in listing:
            node_id = str(raw.get("NodeID", ""))
            known = self.nodes.get(node_id)
            if raw.get("Alive"):
                if known is None:
                    node = Node(
                        id=node_id,
                        name=node_label(raw),
                        capacity=int((raw.get("Resources") or {}).get("CPU", 0)),
                    )
                    self.nodes[node_id] = node
                    joined.append(node)
            elif known is not None and known.state != "dead":
                known.state = "dead"
                died.append(known)
        return joined, died

    def pick(self, *, avoid: set[str]) -> Node | None:
        """The least loaded node that passed its check and has room; one not in `avoid` first."""
        usable = [n for n in self.nodes.values() if n.free > 0]
        if not usable:
            return None
        usable.sort(key=lambda n: (n.id in avoid, n.running / max(n.capacity, 1), n.name))
        return usable[0]

    def any_usable(self) -> bool:
        return any(n.state == "ok" and n.capacity > 0 for n in self.nodes.values())

    def checking(self) -> bool:
        return any(n.state == "checking" for n in self.nodes.values())

    def capacity(self) -> int:
        return sum(n.capacity for n in self.nodes.values() if n.state == "ok")


def node_label(raw: dict[str, Any]) -> str:
    """How a node is named in lines and results: host, address and the start of its id."""
    host = raw.get("NodeManagerHostname") or raw.get("NodeName") or "?"
    address = raw.get("NodeManagerAddress") or ""
    return f"{host}/{address} ({str(raw.get('NodeID', ''))[:8]})"
