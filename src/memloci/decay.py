"""Memory decay (layer: consolidation): the retention formula, shared by ``weak_facts``
and the maintenance job.

``r = confidence · exp(−decay_rate · days^0.8)``, where ``days`` counts from the last
access or update, whichever is later. A decay rate of 0 means protected; episodes never
decay. Both keep their confidence as it is.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from datetime import datetime

from memloci.models import MemoryNode, NodeType

FORGET_BELOW = 0.05  # the maintenance job soft-deletes memories whose retention drops below


def is_protected(node: MemoryNode) -> bool:
    """Whether the memory never decays (an episode, or a decay rate of 0)."""
    return node.type is NodeType.EPISODIC or node.decay_rate <= 0


def last_activity(node: MemoryNode) -> datetime:
    """When the memory was last accessed or updated, whichever is later."""
    return max(node.updated_at, node.last_accessed or node.updated_at)


def decayed(confidence: float, rate: float, since: datetime, now: datetime) -> float:
    """``confidence · exp(−rate · days^0.8)`` for the days from ``since`` to ``now``."""
    days = max(0.0, (now - since).total_seconds() / 86_400)
    return confidence * math.exp(-rate * days**0.8)


def curve(node: MemoryNode, base: float | None, anchor: datetime | None) -> tuple[float, datetime]:
    """The ``(base, anchor)`` a memory decays from. Maintenance records them (its
    ``decay_state``) and lowers ``confidence`` as it goes; while the memory has been
    neither accessed nor updated since, the recorded curve holds — otherwise the curve
    restarts at the current confidence and the last activity."""
    activity = last_activity(node)
    if base is not None and anchor is not None and abs((anchor - activity).total_seconds()) < 1e-3:
        return base, anchor
    return node.confidence, activity


def retention(
    node: MemoryNode, now: datetime, base: float | None = None, anchor: datetime | None = None
) -> float:
    """The memory's confidence after decay at ``now`` (0–1, higher is stronger), on the
    curve maintenance recorded (``base`` / ``anchor``), so decay is never applied twice."""
    if is_protected(node):
        return node.confidence
    start, since = curve(node, base, anchor)
    return decayed(start, node.decay_rate, since, now)


def weakest(
    nodes: Iterable[MemoryNode],
    now: datetime,
    *,
    limit: int,
    threshold: float,
    curves: Mapping[str, tuple[float | None, datetime | None]] | None = None,
) -> list[tuple[MemoryNode, float]]:
    """The ``limit`` unprotected memories with the lowest retention below ``threshold``,
    weakest first, with their retention (streams: memory stays O(limit)). ``curves``:
    the recorded ``(base, anchor)`` per memory id (see :func:`curve`)."""
    known = curves or {}
    scored = (
        (n, retention(n, now, *known.get(n.id, (None, None)))) for n in nodes if not is_protected(n)
    )
    return heapq.nsmallest(limit, (p for p in scored if p[1] < threshold), key=lambda p: p[1])
