"""Which cluster node an instance goes to: pure bookkeeping, no Ray in here.

Each node offers slots (its ``sandbox_slots``: instances at once on that Docker host). An
instance goes to a node with a free slot, preferring one that already holds the environment
of its (repo, version), so that the environment is built once per node at most and mostly
once in the cluster; among equals, the node with the most free slots, then the smaller id.
With no free slot anywhere, no node is chosen and the cluster queues the instance.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


@dataclass
class Placement:
    """The driver's view of the cluster: slots per alive node, what runs where, which
    environments each node holds."""

    slots: dict[str, int] = field(default_factory=dict)  # alive node id -> slots
    busy: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    holders: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))

    def set_nodes(self, slots: dict[str, int]) -> None:
        """The alive nodes and their slots (nodes that died drop out)."""
        self.slots = {node: n for node, n in slots.items() if n > 0}

    def holds(self, node: str, repo_versions: list[str]) -> None:
        for repo_version in repo_versions:
            self.holders[repo_version].add(node)

    def free(self, node: str) -> int:
        return self.slots.get(node, 0) - self.busy[node]

    def choose(self, repo_version: str) -> str | None:
        """The node for an instance of ``repo_version``; taken until :meth:`release`."""
        candidates = [node for node in self.slots if self.free(node) > 0]
        if not candidates:
            return None
        preferred = [node for node in candidates if node in self.holders[repo_version]]
        pool = preferred or candidates
        node = min(pool, key=lambda n: (-self.free(n), n))
        self.busy[node] += 1
        return node

    def release(self, node: str | None) -> None:
        """The instance placed on ``node`` ended (wherever a retry moved it)."""
        if node is not None and self.busy[node] > 0:
            self.busy[node] -= 1
