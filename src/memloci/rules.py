"""Domain rules every store applies the same way (layer: models).

Pure functions over the value types, so each backend's SQL carries out one rule instead
of restating it: a memory reinforced by being read, and an edit that makes a new version.
"""

from __future__ import annotations

import math
from typing import Any

from memloci.models import MemoryNode

REINFORCE_STEP = 0.05  # confidence gained at the reinforcement curve's unit
REINFORCE_SCALE = 20.0  # reads over which that unit is reached (log-shaped)


def reinforced(confidence: float, accesses: int) -> float:
    """A memory's confidence once read again after ``accesses`` earlier reads: it grows
    with the log of the reads, slower and slower, and never past 1."""
    return min(1.0, confidence + REINFORCE_STEP * math.log1p((accesses + 1) / REINFORCE_SCALE))


def revised(
    node: MemoryNode,
    changes: dict[str, Any],
    *,
    content: str | None,
    set_value: bool,
    value: Any,
) -> bool:
    """Complete the ``changes`` an edit of ``node`` makes (in place): a new text or a
    value set is a new version, and a new text must be embedded again. Returns whether
    the text changed."""
    if set_value:
        changes["value"] = value
    new_content = content is not None and content != node.content
    if new_content or set_value:
        changes["version"] = node.version + 1
    if new_content:
        changes["content"] = content
        changes["embedded"] = False
    return new_content
