"""The prompt context (layer: service): ``MemoryService.context``; gather, then render.

It searches through :class:`~memloci.service.memories.Memories`. Rendering and the
budget shares live in :mod:`memloci.context`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TypeVar

from memloci import validate as v
from memloci.consolidation.profiles import matching_profiles
from memloci.context import (
    MAX_PROCEDURES,
    Candidate,
    EntityProfile,
    compose,
    day_heading,
    entity_line,
    episode_line,
    fact_line,
    procedure_line,
    report_of,
    time_key,
)
from memloci.errors import MemlociError
from memloci.kinds import FACT_TYPES
from memloci.models import (
    ContextReport,
    EdgeType,
    Entity,
    MemoryNode,
    NodeType,
    SearchHit,
    utcnow,
)
from memloci.procedures import has_triggers, matching
from memloci.providers.base import calibration_of
from memloci.retrieval.intent import COMPLEX, SIMPLE, is_complex
from memloci.retrieval.relevance import RELEVANT
from memloci.retrieval.timephrases import TimeWindow, time_window
from memloci.service.calls import threaded
from memloci.service.core import Core, Service
from memloci.service.memories import Memories
from memloci.storage.aliases import names_in_use
from memloci.storage.base import NodeFilter
from memloci.telemetry import observed

MAX_HITS = 60  # search hits read for the dynamic part at most
TOKENS_PER_HIT = 20  # hits read: one per this many tokens of its room (at least 10)
TURN_CHARS = 1200  # a turn longer than this is cut in the block
SHORT_REPLY = 80  # a turn this short is shown with the question it answers
ENTITIES = 6  # entity profiles at most
PROFILED = 10  # the best hits whose entities may get a profile
NEIGHBOURED = 30  # the best turns that may bring their neighbouring turn
PEEK = 200  # memories of an entity read to tell whether others' memories mention it too
NAMES_READ = 25  # of the caller's memories of a shared entity, read at a time for its names


T = TypeVar("T")


@dataclass(frozen=True)
class Tiers:
    """The tiers a context may show; one switched off is left out (an agent that has it
    off): ``facts`` (semantic and opinion memories), ``procedures``, ``episodes``."""

    facts: bool = True
    procedures: bool = True
    episodes: bool = True

    def types(self) -> set[NodeType]:
        """The memory types of the tiers switched on."""
        on = {
            NodeType.SEMANTIC: self.facts,
            NodeType.OPINION: self.facts,
            NodeType.PROCEDURAL: self.procedures,
            NodeType.EPISODIC: self.episodes,
        }
        return {kind for kind, shown in on.items() if shown}


EVERY_TIER = Tiers()


class Context(Service):
    """``context`` / ``context_report``: the cacheable part, then what answers the prompt."""

    def __init__(self, core: Core, memories: Memories) -> None:
        super().__init__(core)
        self.memories = memories

    @threaded
    def context(self, prompt: str | None, flt: NodeFilter, *, budget: int | None = None) -> str:
        """The prompt block: procedures and "Your Memory" (cacheable), then what the prompt
        brings up: entity profiles, a timeline and the most relevant past turns."""
        return self._report(prompt, flt, EVERY_TIER, budget=budget, loaded=None).block

    @threaded
    def context_parts(
        self,
        prompt: str | None,
        flt: NodeFilter,
        *,
        budget: int | None = None,
        facts: bool = True,
        procedures: bool = True,
        episodes: bool = True,
        loaded: str | None = None,
    ) -> tuple[str, str]:
        """:meth:`context` in two parts: ``(cacheable, dynamic)``. The cacheable part is
        what a conversation loads once (it changes only when the memory set does).
        ``facts`` / ``procedures`` / ``episodes`` False: leave that tier out (an agent
        that has it off). ``loaded``: the cacheable part the conversation holds (a fact
        written since it was loaded is then relevant, not taken for shown)."""
        tiers = Tiers(facts=facts, procedures=procedures, episodes=episodes)
        report = self._report(prompt, flt, tiers, budget=budget, loaded=loaded)
        return report.cacheable, report.dynamic

    @threaded
    def context_report(
        self,
        prompt: str | None,
        flt: NodeFilter,
        *,
        budget: int | None = None,
        loaded: str | None = None,
    ) -> ContextReport:
        """:meth:`context` with how it was composed: each section's tokens and items, and
        why each item is in the block (the web UI's Context view shows it)."""
        return self._report(prompt, flt, EVERY_TIER, budget=budget, loaded=loaded)

    @observed("context")
    def _report(
        self,
        prompt: str | None,
        flt: NodeFilter,
        tiers: Tiers,
        budget: int | None,
        loaded: str | None,
    ) -> ContextReport:
        """:meth:`context_report` with the tiers it may show.

        Procedures without trigger conditions are standing instructions (the 20 most
        recent, in the cacheable part); triggered ones appear, after it, only when the
        prompt matches their triggers (see :mod:`memloci.procedures`).

        With a prompt the cacheable part takes at most ``context_stable_share`` of
        ``budget`` (default ``context_budget``) and does not depend on the prompt; the
        rest is filled by relevance (:mod:`memloci.context`). Without an explicit
        budget, the prompt-dependent part is sized by the query's complexity: a simple
        prompt's total is ``context_budget`` (1000 tokens by default), a complex one's
        three times that (3000). With no prompt the cacheable part may take the whole
        budget."""
        fixed = budget is not None
        budget = v.limit(
            self.settings.context_budget if budget is None else budget, "budget", 100_000
        )
        asked = bool(prompt and prompt.strip())
        share = self.settings.context_stable_share if asked else 1.0
        shown = tiers.types()

        def stable_inputs() -> tuple[list[MemoryNode], list[MemoryNode]]:
            known_facts: list[MemoryNode] = []
            if tiers.facts:
                fact_flt = replace(flt, types=FACT_TYPES)
                # the facts the cacheable part can hold at most (a line is 16 characters
                # or more), in the order it keeps them (protected, then newest)
                most = int(budget * share) * 4 // 16 + 1
                known_facts = self.store.memories.list_nodes(
                    fact_flt, limit=most, order="protected"
                )
            known: list[MemoryNode] = []
            if tiers.procedures:
                procedural = replace(flt, types=(NodeType.PROCEDURAL,))
                known = self.store.memories.list_nodes(procedural, limit=10_000, order="-created")
            return known_facts, known

        # read while the prompt is searched (each thread reads on its own connection)
        reading = _in_background(stable_inputs) if asked and shown else None
        known_facts, known = stable_inputs() if reading is None else ([], [])
        threshold = self.settings.relevance_threshold
        total = budget
        hits: list[SearchHit] = []
        triggered: list[Candidate] = []
        candidates: list[Candidate] = []
        if asked:
            # a long prompt is searched by its most recent part
            query = (prompt or "").strip()[-v.QUERY_MAX :]
            if not fixed:  # a complex prompt gets more: 3000 to a simple one's 1000
                grow = COMPLEX["budget"] / SIMPLE["budget"] if is_complex(query) else 1
                total = int(budget * grow)
            room = total - int(budget * share)
            k = max(10, min(MAX_HITS, room // TOKENS_PER_HIT))
            search_flt = replace(flt, types=tuple(sorted(shown)))
            hits = self.memories.search.now(query, search_flt, k=k) if shown else []
            if reading is not None:
                known_facts, known = reading.result()
            relevant = [h for h in hits if h.score >= threshold]
            candidates = self._candidates(query, relevant, flt, profiles=tiers.facts)
            triggered = [
                Candidate(
                    "procedures",
                    (procedure_line(p),),
                    (p.id,),
                    1.0,
                    "its trigger matches the prompt",
                )
                for p in matching(known, prompt or "")[:MAX_PROCEDURES]
            ]
        procs = [p for p in known if not has_triggers(p)][:MAX_PROCEDURES]  # 20 most recent
        composed = compose(
            facts=known_facts,
            procedures=procs,
            candidates=[*triggered, *candidates],
            budget=budget,
            stable_share=share,
            total=total,
            loaded=loaded,
        )
        below = [h for h in hits if h.score < threshold]
        return report_of(composed, budget, threshold, left_out=below)

    def _candidates(
        self, query: str, hits: Sequence[SearchHit], flt: NodeFilter, *, profiles: bool
    ) -> list[Candidate]:
        """The relevant hits as candidates for the dynamic part, best first: facts, turns
        (with the neighbouring turn that carries their context; inside the time window
        the prompt names, for the timeline), and after the best hit the profiles of the
        entities the prompt names."""
        window = time_window(query, now=utcnow())
        turns = [h.memory for h in hits if h.memory.type is NodeType.EPISODIC]
        around = self._context_turns(turns[:NEIGHBOURED], flt)
        out: list[Candidate] = []
        for hit in hits:
            m = hit.memory
            if m.type is NodeType.EPISODIC:
                section = "timeline" if window is not None and _within(m, window) else "evidence"
                line = episode_line(m, TURN_CHARS, dated=False)
                day, order = day_heading(m), time_key(m)
                other = around.get(m.id)
                if other is None:
                    out.append(
                        Candidate(
                            section, (line,), (m.id,), hit.score, hit.why, group=day, order=order
                        )
                    )
                    continue
                pair = sorted((m, other), key=time_key)
                lines = tuple(episode_line(n, TURN_CHARS, dated=False) for n in pair)
                where = "after it" if time_key(other) > time_key(m) else "before it"
                why = f"{hit.why}; with the turn {where}"
                out.append(
                    Candidate(
                        section,
                        lines,
                        (m.id, other.id),
                        hit.score,
                        why,
                        short=(line,),
                        group=day,
                        order=order,
                    )
                )
            elif m.type is NodeType.PROCEDURAL:
                line = procedure_line(m)
                out.append(Candidate("procedures", (line,), (m.id,), hit.score, hit.why))
            else:
                out.append(Candidate("facts", (fact_line(m),), (m.id,), hit.score, hit.why))
        # profiles only when the search found hits through an entity the prompt names
        named: list[EntityProfile] = []
        if profiles and any("entity" in h.strategies for h in hits[:PROFILED]):
            named = self._profiles(query, hits[:PROFILED], flt)
            out[1:1] = [
                Candidate("entities", (entity_line(p),), (), hits[0].score, "the prompt names it")
                for p in named
            ]
        if profiles:  # and the entities whose profile says what the prompt asks about
            skip = {p.entity.id for p in named}
            for profile, cosine, score in self._described(query, flt, skip):
                why = f"its profile matches the prompt (cosine {cosine:.2f})"
                cand = Candidate("entities", (entity_line(profile),), (), score, why)
                at = next((i for i, c in enumerate(out) if c.score < score), len(out))
                out.insert(at, cand)
        return out

    def _described(
        self, query: str, flt: NodeFilter, skip: set[str]
    ) -> list[tuple[EntityProfile, float, float]]:
        """The entities whose profile (summary) matches ``query`` by meaning, as the
        caller may see them (a summary drawn from memories it cannot see is not
        matched), with the cosine and a relevance score (the embedder's ``answers``
        cosine scores the threshold); at most :data:`ENTITIES`."""
        if self.embedder is None:
            return []
        calibration = calibration_of(self.embedder)
        model = self.embedder.model_id
        vector = None
        out: list[tuple[EntityProfile, float, float]] = []
        for ns in flt.namespaces:
            known = self.store.jobs.profile_vectors(ns, model)
            if not known:
                continue
            if vector is None:
                try:
                    vector = self.embedder.embed_query(query)
                except MemlociError:  # search said so already; no profiles by meaning
                    return out
            found = matching_profiles(known, vector, min_cosine=calibration.answers, limit=ENTITIES)
            for entity_id, cosine in found:
                entity = self.store.entities.get_entity(ns, entity_id)
                if entity is None or entity.id in skip or len(out) >= ENTITIES:
                    continue
                shown = self._as_seen(entity, replace(flt, namespaces=(ns,), types=None))
                if not shown.summary:
                    continue
                own = replace(flt, namespaces=(ns,), types=FACT_TYPES)
                facts = self.store.entities.entity_nodes(own, entity.id, limit=2)
                span = max(1.0 - calibration.answers, 1e-6)
                score = RELEVANT + (1.0 - RELEVANT) * (cosine - calibration.answers) / span
                out.append((EntityProfile(shown, tuple(facts)), cosine, min(1.0, score)))
        return out

    def _context_turns(self, turns: Sequence[MemoryNode], flt: NodeFilter) -> dict[str, MemoryNode]:
        """For each turn that only asks (it ends with a question mark), the turn after it
        (its reply); for a short reply, the question just before it: the neighbouring
        turn that carries the answer's context, when the caller may see it."""
        wanted = [n for n in turns if _asks(n) or len(n.content) <= SHORT_REPLY]
        links: dict[str, list[str]] = {}
        for ns in flt.namespaces:
            ids = [n.id for n in wanted if n.namespace == ns]
            if ids:
                links |= self.store.memories.neighbours(ns, ids, EdgeType.TEMPORAL.value)
        found = sorted({i for near in links.values() for i in near})
        if not found:
            return {}
        visible = replace(flt, types=(NodeType.EPISODIC,), ids=tuple(found))
        nodes = {n.id: n for n in self.store.memories.list_nodes(visible, limit=len(found))}
        shown = {n.id for n in turns}
        out: dict[str, MemoryNode] = {}
        for turn in wanted:
            for other in (nodes.get(i) for i in links.get(turn.id, [])):
                if other is None or other.id in shown:
                    continue
                after = (other.event_time, other.created_at) > (turn.event_time, turn.created_at)
                if (_asks(turn) and after) or (not _asks(turn) and not after and _asks(other)):
                    out[turn.id] = other
                    break
        return out

    def _profiles(
        self, query: str, hits: Sequence[SearchHit], flt: NodeFilter
    ) -> list[EntityProfile]:
        """Profiles of the entities the prompt names that the relevant hits are linked
        to, each with its current facts (as the caller may see it)."""
        profiles: list[EntityProfile] = []
        seen: set[str] = set()
        for ns in flt.namespaces:
            ids = [h.memory.id for h in hits if h.memory.namespace == ns]
            if not ids:
                continue
            named = {e.id for _, e in self.store.graph.entities_in_text((ns,), query)}
            if not named:
                continue
            linked = self.store.entities.node_entities(ns, ids)
            for node_id in ids:
                for entity in linked.get(node_id, []):
                    if entity.id in seen or entity.id not in named or len(profiles) >= ENTITIES:
                        continue
                    seen.add(entity.id)
                    own = replace(flt, namespaces=(ns,), types=FACT_TYPES)
                    facts = self.store.entities.entity_nodes(own, entity.id, limit=2)
                    shown = self._as_seen(entity, replace(flt, namespaces=(ns,), types=None))
                    if shown.summary or facts:
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
        links = self.store.entities.entity_links_seen(
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
            found = self.store.memories.get_nodes(flt.namespaces, mine[start : start + NAMES_READ])
            names = names_in_use(every_name, [n.content for n in found])
            if names:
                break
        name = names[0] if names else entity.canonical_name
        aliases = [a for a in names if a != name]
        return entity.model_copy(
            update={
                "canonical_name": name,
                "aliases": aliases,
                "summary": None,
                "mention_count": len(mine),
            }
        )


def _asks(node: MemoryNode) -> bool:
    return node.content.rstrip().endswith("?")


def _within(node: MemoryNode, window: TimeWindow) -> bool:
    when = node.event_time
    return (window.start is None or when >= window.start) and (
        window.end is None or when < window.end
    )


_READER: ThreadPoolExecutor | None = None
_READER_LOCK = threading.Lock()


def _in_background(work: Callable[[], T]) -> Future[T] | None:
    """``work`` started on the context reader thread, or None when it cannot be (the
    interpreter is shutting down): the caller then does it itself."""
    global _READER
    with _READER_LOCK:
        if _READER is None:
            _READER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="memloci-context")
        try:
            return _READER.submit(work)
        except RuntimeError:
            return None
