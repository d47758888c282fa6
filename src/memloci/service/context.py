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
from memloci.context import (
    MAX_PROCEDURES,
    STABLE_SHARE,
    EntityProfile,
    build_context_parts,
    join_parts,
)
from memloci.errors import NotFoundError
from memloci.kinds import FACT_TYPES
from memloci.models import (
    EdgeType,
    Entity,
    MemoryNode,
    NodeType,
    ProcedureDetails,
    SearchHit,
)
from memloci.procedures import has_triggers, matching, record_use
from memloci.retrieval.intent import COMPLEX, SIMPLE, is_complex
from memloci.service.core import ServiceCore
from memloci.storage.aliases import names_in_use
from memloci.storage.base import NodeFilter, NodePatch, Store

P = ParamSpec("P")
T = TypeVar("T")
EVIDENCE = 3  # top episodes quoted as evidence; the rest (and their neighbours) form the timeline
ENTITIES = 6  # entity profiles at most
PEEK = 200  # memories of an entity read to tell whether others' memories mention it too
NAMES_READ = 25  # of the caller's memories of a shared entity, read at a time for its names


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

    async def context_parts(
        self, prompt: str | None, flt: NodeFilter, *, budget: int | None = None,
        facts: bool = True, procedures: bool = True, episodes: bool = True,
        loaded: str | None = None,
    ) -> tuple[str, str]:  # fmt: skip
        """:meth:`context` in two parts: ``(cacheable, dynamic)``. The cacheable part is
        what a conversation loads once (it changes only when the memory set does).
        ``facts`` / ``procedures`` / ``episodes`` False: leave that tier out (an agent
        that has it off). ``loaded``: the cacheable part the conversation holds (a fact
        written since it was loaded is then relevant, not taken for shown)."""
        return await self._run(
            self.context_parts_now, prompt, flt, budget=budget, facts=facts,
            procedures=procedures, episodes=episodes, loaded=loaded,
        )  # fmt: skip

    def context_now(self, prompt: str | None, flt: NodeFilter, *, budget: int | None = None) -> str:
        """:meth:`context` in the caller's thread."""
        return join_parts(*self.context_parts_now(prompt, flt, budget=budget))

    def context_parts_now(
        self, prompt: str | None, flt: NodeFilter, *, budget: int | None = None,
        facts: bool = True, procedures: bool = True, episodes: bool = True,
        loaded: str | None = None,
    ) -> tuple[str, str]:  # fmt: skip
        """:meth:`context_parts` in the caller's thread.

        Procedures without trigger conditions are standing instructions (the 20 most
        recent, in the cacheable part); triggered ones appear, after it, only when the
        prompt matches their triggers (see :mod:`memloci.procedures`).

        The cacheable part gets 40 % of ``budget`` (default ``context_budget``) and does
        not depend on the prompt. Without an explicit budget, the prompt-dependent part is
        sized by the query's complexity: a simple prompt's total is ``context_budget``
        (1000 tokens by default), a complex one's three times that (3000)."""
        fixed = budget is not None
        budget = v.limit(
            self.settings.context_budget if budget is None else budget, "budget", 100_000
        )
        shown = {
            t for t, on in ((NodeType.SEMANTIC, facts), (NodeType.OPINION, facts),
                            (NodeType.PROCEDURAL, procedures), (NodeType.EPISODIC, episodes))
            if on
        }  # fmt: skip
        known_facts: list[MemoryNode] = []
        if facts:
            fact_flt = replace(flt, types=FACT_TYPES)
            # the 2000 facts the cacheable part would keep first (protected, then newest)
            known_facts = self.store.list_nodes(fact_flt, limit=2000, order="protected")
        known: list[MemoryNode] = []
        if procedures:
            procedural = replace(flt, types=(NodeType.PROCEDURAL,))
            known = self.store.list_nodes(procedural, limit=10_000, order="-created")
        procs = [p for p in known if not has_triggers(p)][:MAX_PROCEDURES]  # 20 most recent
        if not (prompt and prompt.strip()):
            return build_context_parts(
                facts=known_facts, procedures=procs, budget=budget, loaded=loaded
            )
        # a long prompt is searched by its most recent part
        query = prompt.strip()[-v.QUERY_MAX :]
        hits = (
            self.search_now(query, replace(flt, types=tuple(sorted(shown))), k=12) if shown else []
        )
        turns = [h.memory for h in hits if h.memory.type is NodeType.EPISODIC]
        evidence = turns[:EVIDENCE]
        dynamic = None
        if not fixed:  # a complex prompt gets more: 3000 to a simple one's 1000
            grow = COMPLEX["budget"] / SIMPLE["budget"] if is_complex(query) else 1
            dynamic = int(budget * grow) - int(budget * STABLE_SHARE)
        return build_context_parts(
            facts=known_facts,
            procedures=procs,
            entities=self._profiles(hits, flt) if facts else [],
            timeline=self._timeline(turns, flt, exclude={n.id for n in evidence}),
            evidence=evidence,
            relevant=[h.memory for h in hits if h.memory.type in FACT_TYPES],
            task_procedures=matching(known, prompt)[:MAX_PROCEDURES],
            budget=budget,
            dynamic_budget=dynamic,
            loaded=loaded,
        )

    async def record_procedure_use(
        self, memory_id: str, *, namespace: str | None = None, success: bool | None = None,
        duration_ms: float | None = None,
    ) -> MemoryNode:  # fmt: skip
        """Count one use of a learned procedure, with its outcome and duration when known
        (``times_used``, ``success_rate``, ``avg_duration_ms``; atomic across writers)."""
        ns, mid = self._ns(namespace), v.memory_id(memory_id)
        if success is not None:
            success = v.flag(success, "success")
        ms = v.non_negative(duration_ms, "duration_ms") if duration_ms is not None else None

        def run() -> MemoryNode:
            with self.store.exclusive(f"procedure:{ns}:{mid}"):
                node = self.store.get_node(ns, mid)
                if node is None or node.type is not NodeType.PROCEDURAL:
                    raise NotFoundError(f"no procedure with id {mid!r}")
                details = record_use(
                    node.procedure or ProcedureDetails(), success=success, duration_ms=ms
                )
                patch = NodePatch(extra={"procedure": details, "updated_at": node.updated_at})
                return self.store.update_node(ns, mid, patch)

        return await self._run(run)

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
                    shown = self._as_seen(entity, replace(flt, namespaces=(ns,), types=None))
                    profiles.append(EntityProfile(shown, tuple(facts)))
        return profiles

    def _as_seen(self, entity: Entity, flt: NodeFilter) -> Entity:
        """``entity`` as the caller (``flt``) may see it. When memories it cannot see
        (another user's, agent's or session's) mention the entity too, its summary (drawn
        from every memory) is left out and only the names its own memories use are shown
        (the canonical name, or the first alias they use in its place)."""
        if flt == NodeFilter(namespaces=flt.namespaces):  # the caller sees every memory
            return entity
        # forgotten and superseded memories count too: their words gave names and summary;
        # ids first (one light read), the memories themselves only for a shared entity
        links = self.store.entity_links_seen(
            replace(flt, include_invalid=True), entity.id, limit=PEEK
        )
        mine = [i for i, seen in links if seen]
        if len(mine) == len(links):
            return entity
        # the names the caller's newest memories of it use (older ones read only while
        # none is found): a name only others' words gave is never shown
        every_name = [entity.canonical_name, *entity.aliases]
        names: list[str] = []
        for start in range(0, len(mine), NAMES_READ):
            found = self.store.get_nodes(flt.namespaces, mine[start : start + NAMES_READ])
            names = names_in_use(every_name, [n.content for n in found])
            if names:
                break
        name = names[0] if names else entity.canonical_name
        aliases = [a for a in names if a != name]
        return entity.model_copy(
            update={"canonical_name": name, "aliases": aliases, "summary": None,
                    "mention_count": len(mine)}
        )  # fmt: skip

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
