"""Rank fusion (layer: retrieval): weighted Reciprocal Rank Fusion; higher is better."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    id: str
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    raw: dict[str, float] = field(default_factory=dict)


def rrf(
    ranked: Mapping[str, Sequence[tuple[str, float]]],
    weights: Mapping[str, float],
    *,
    k: float = 60.0,
) -> list[Fused]:
    """``score(d) = Σ_s w_s / (k + rank_s(d))`` over strategies ``s`` (ranks from 1).

    Ties break by best single rank, then id, so the order is deterministic.
    """
    table: dict[str, Fused] = {}
    for name, results in ranked.items():
        weight = weights.get(name, 1.0)
        if weight <= 0:
            continue
        for rank, (node_id, raw) in enumerate(results, start=1):
            entry = table.setdefault(node_id, Fused(node_id))
            if name in entry.ranks:
                continue
            entry.ranks[name] = rank
            entry.raw[name] = raw
            entry.score += weight / (k + rank)
    return sorted(table.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))
