"""Memory decay (layer: consolidation): the retention formula, shared by ``weak_facts``
and the maintenance job.

``r = confidence · exp(−decay_rate · days^0.8)``, where ``days`` counts from the last
access or update, whichever is later. A decay rate of 0 means protected; episodes never
decay. Both keep their confidence as it is.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from datetime import datetime

from memloci.models import MemoryNode, NodeType

FORGET_BELOW = 0.05  # the maintenance job soft-deletes memories whose retention drops below


def is_protected(node: MemoryNode) -> bool:
    """Whether the memory never decays (an episode, or a decay rate of 0)."""
    return node.type is NodeType.EPISODIC or node.decay_rate <= 0


def retention(node: MemoryNode, now: datetime) -> float:
    """The memory's confidence after decay at ``now`` (0–1, higher is stronger)."""
    if is_protected(node):
        return node.confidence
    last = max(node.updated_at, node.last_accessed or node.updated_at)
    days = max(0.0, (now - last).total_seconds() / 86_400)
    return node.confidence * math.exp(-node.decay_rate * days**0.8)


def weakest(
    nodes: Iterable[MemoryNode], now: datetime, *, limit: int, threshold: float
) -> list[tuple[MemoryNode, float]]:
    """The ``limit`` unprotected memories with the lowest retention below ``threshold``,
    weakest first, with their retention (streams: memory stays O(limit))."""
    scored = ((n, retention(n, now)) for n in nodes if not is_protected(n))
    return heapq.nsmallest(limit, (p for p in scored if p[1] < threshold), key=lambda p: p[1])
