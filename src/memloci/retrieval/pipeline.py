"""The search pipeline (layer: retrieval): strategies → weighted RRF → hits.

Named recipes pick the strategies: ``hybrid`` (default: full text + vector +
fuzzy key + neighbouring turns), ``fulltext`` (BM25 only) and ``vector``
(dense only) — the last two are the baselines the benchmarks compare against.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from memloci.config import Settings
from memloci.errors import ValidationError
from memloci.models import MemoryNode, SearchHit
from memloci.providers.base import Embedder
from memloci.retrieval.fusion import Fused, rrf
from memloci.retrieval.query import fts_match, key_form, terms
from memloci.storage.base import NodeFilter, Store

RECIPES: dict[str, tuple[str, ...]] = {
    "hybrid": ("fulltext", "vector", "key"),
    "fulltext": ("fulltext",),
    "vector": ("vector",),
}
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memloci-query")
_LABELS = {
    "fulltext": "full text",
    "vector": "meaning",
    "key": "key",
}


@dataclass
class Retriever:
    """Runs one search: every interface's search ends here."""

    store: Store
    embedder: Embedder | None
    settings: Settings
    embed_query: Callable[[str], npt.NDArray[np.float32]] | None = None

    def search(
        self, query: str, flt: NodeFilter, k: int = 10, *, recipe: str = "hybrid"
    ) -> list[SearchHit]:
        if recipe not in RECIPES:
            raise ValidationError(
                f"unknown search recipe {recipe!r}", hint=f"use one of {sorted(RECIPES)}"
            )
        strategies = RECIPES[recipe]
        n = max(self.settings.candidates, k * 3)
        ranked: dict[str, list[tuple[str, float]]] = {}
        vector: Future[npt.NDArray[np.float32]] | None = None
        if "vector" in strategies and self.embedder is not None:
            # embed the query on another core while SQLite runs the full-text search
            vector = _POOL.submit(self.embed_query or self.embedder.embed_query, query)
        if "fulltext" in strategies:
            ranked["fulltext"] = self.store.fulltext(flt, fts_match(query), n)
        if vector is not None:
            ranked["vector"] = self.store.vector_search(flt, vector.result(), n)
        if "key" in strategies and 0 < len(terms(query)) <= 6:
            ranked["key"] = self.store.key_search(flt, key_form(query), n)
        weights = {
            "fulltext": self.settings.weight_fulltext,
            "vector": self.settings.weight_vector,
            "key": self.settings.weight_key,
        }
        fused = rrf(ranked, weights, k=self.settings.rrf_k)
        top = fused[:k]
        nodes = {m.id: m for m in self.store.get_nodes(flt.namespaces, [f.id for f in top])}
        return [_hit(nodes[f.id], f) for f in top if f.id in nodes]


def _hit(node: MemoryNode, fused: Fused) -> SearchHit:
    parts = []
    for name, rank in sorted(fused.ranks.items(), key=lambda r: r[1]):
        raw = fused.raw.get(name)
        detail = f" ({raw:.3g})" if raw is not None and name in ("vector", "fulltext") else ""
        parts.append(f"{_LABELS.get(name, name)} #{rank}{detail}")
    return SearchHit(
        memory=node, score=round(fused.score, 6), strategies=fused.ranks, why="; ".join(parts)
    )
