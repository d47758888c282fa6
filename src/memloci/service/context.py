"""The prompt context of MemoryService (layer: service): gather, then render.

A mixin; it relies on what MemoryService sets up (``store``, ``settings``,
``search_now``, ``_run``). Rendering and the budget shares live in
:mod:`memloci.context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from memloci import validate as v
from memloci.config import Settings
from memloci.context import MAX_PROCEDURES, STABLE_SHARE, EntityProfile, build_context
from memloci.models import EdgeType, MemoryNode, NodeType, SearchHit
from memloci.retrieval.intent import COMPLEX, SIMPLE, is_complex
from memloci.service.core import ServiceCore
from memloci.storage.base import NodeFilter, Store

P = ParamSpec("P")
T = TypeVar("T")
FACT_TYPES = (NodeType.SEMANTIC, NodeType.OPINION)
EVIDENCE = 3  # top episodes quoted as evidence; the rest (and their neighbours) form the timeline
ENTITIES = 6  # entity profiles at most


class ContextMixin(ServiceCore):
    """``context`` / ``context_now``: procedures, facts, entity profiles, timeline, evidence."""

    store: Store
    settings: Settings
    if TYPE_CHECKING:  # provided by MemoryService

        def search_now(
            self, query: str, flt: NodeFilter, *, k: int = 10, recipe: str = "hybrid"
        ) -> list[SearchHit]: ...

    async def context(
        self, prompt: str | None, flt: NodeFilter, *, budget: int | None = None
    ) -> str:
        """The prompt block: procedures and "Your Memory" (cacheable), then what the prompt
        brings up: entity profiles, a timeline and the most relevant past turns."""
        return await self._run(self.context_now, prompt, flt, budget=budget)

    def context_now(self, prompt: str | None, flt: NodeFilter, *, budget: int | None = None) -> str:
        """:meth:`context` in the caller's thread.

        The cacheable part gets 40 % of ``budget`` (default ``context_budget``) and does
        not depend on the prompt. Without an explicit budget, the prompt-dependent part is
        sized by the query's complexity: a simple prompt's total is ``context_budget`` or
        1000 tokens, a complex one's 3000 (whichever is larger)."""
        fixed = budget is not None
        budget = v.limit(
            self.settings.context_budget if budget is None else budget, "budget", 100_000
        )
        facts = self.store.list_nodes(replace(flt, types=FACT_TYPES), limit=2000, order="category")
        procs = self.store.list_nodes(  # the 20 most recent (reference 004)
            replace(flt, types=(NodeType.PROCEDURAL,)), limit=MAX_PROCEDURES, order="-created"
        )
        if not (prompt and prompt.strip()):
            return build_context(facts=facts, procedures=procs, budget=budget)
        # a long prompt is searched by its most recent part
        query = prompt.strip()[-v.QUERY_MAX :]
        hits = self.search_now(query, replace(flt, types=None), k=12)
        episodes = [h.memory for h in hits if h.memory.type is NodeType.EPISODIC]
        evidence = episodes[:EVIDENCE]
        dynamic = None
        if not fixed:
            adaptive = (COMPLEX if is_complex(query) else SIMPLE)["budget"]
            dynamic = max(budget, int(adaptive)) - int(budget * STABLE_SHARE)
        return build_context(
            facts=facts,
            procedures=procs,
            entities=self._profiles(hits, flt),
            timeline=self._timeline(episodes, flt, exclude={n.id for n in evidence}),
            evidence=evidence,
            relevant=[h.memory for h in hits if h.memory.type in FACT_TYPES],
            budget=budget,
            dynamic_budget=dynamic,
        )

    def _profiles(self, hits: Sequence[SearchHit], flt: NodeFilter) -> list[EntityProfile]:
        """Entities linked to the hits, in hit order, each with its current facts."""
        profiles: list[EntityProfile] = []
        seen: set[str] = set()
        for ns in flt.namespaces:
            ids = [h.memory.id for h in hits if h.memory.namespace == ns]
            linked = self.store.node_entities(ns, ids) if ids else {}
            for node_id in ids:
                for entity in linked.get(node_id, []):
                    if entity.id in seen or len(profiles) >= ENTITIES:
                        continue
                    seen.add(entity.id)
                    own = replace(flt, namespaces=(ns,), types=FACT_TYPES)
                    facts = self.store.entity_nodes(own, entity.id, limit=2)
                    profiles.append(EntityProfile(entity, tuple(facts)))
        return profiles

    def _timeline(
        self, episodes: Sequence[MemoryNode], flt: NodeFilter, *, exclude: set[str]
    ) -> list[MemoryNode]:
        """The relevant turns beyond the evidence plus the turns just before and after
        each relevant turn (temporal edges), that the caller may see."""
        wanted: list[str] = []
        for ns in flt.namespaces:
            ids = [n.id for n in episodes if n.namespace == ns]
            around = self.store.neighbours(ns, ids, EdgeType.TEMPORAL.value) if ids else {}
            for node_id in ids:
                wanted.append(node_id)
                wanted.extend(around.get(node_id, []))
        keep = tuple(dict.fromkeys(i for i in wanted if i not in exclude))
        if not keep:
            return []
        visible = replace(flt, types=(NodeType.EPISODIC,), ids=keep)
        return self.store.list_nodes(visible, limit=len(keep))
