"""Consolidation (layer: consolidation): a session's episodes → durable memories.

For each pending session, oldest first, in batches of episodes (the turns an owner stored
without a session are consolidated the same way, as one group per owner):

1. read the unconsolidated episodes and ask the extractor for facts, opinions,
   procedures and entities (no transaction is open while it thinks);
2. embed the new facts and entity names (when there is an embedder);
3. in **one** store transaction holding the namespace's dedupe lock
   (``store.exclusive``, shared with ``remember``): claim the episodes (if another
   process claimed one meanwhile, roll back and skip), store each fact — a duplicate
   confirms the existing one (the rule of
   :func:`~memloci.consolidation.dedupe.match_fact`, shared with ``remember``), a fact
   holding a known key with other content, a ``correction`` of a same-subject fact, or
   one that contradicts an unkeyed fact of the owner (the same subject's same property
   with an incompatible value: :mod:`memloci.consolidation.contradiction`),
   *supersedes* it (new → old edge, the old one's validity ends, both histories stay)
   — link it ``derived_from`` its source episodes, resolve its entities and link them
   to the fact and its episodes, and mark the session.

An extractor or provider error, or a malformed reply, leaves the store unchanged and the
session pending. Consolidating again finds nothing pending, so it creates nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from memloci import validate as v
from memloci.config import Settings
from memloci.consolidation.base import ExtractedFact, Extraction, Extractor
from memloci.consolidation.contradiction import contradicted, contradiction
from memloci.consolidation.dedupe import (
    MatchKind,
    details,
    duplicate_threshold,
    fact_lock,
    fact_owner,
    match_fact,
    restatement,
    same_text,
)
from memloci.consolidation.entities import EntityResolver
from memloci.errors import MemlociError, StorageError, ValidationError
from memloci.exiting import exiting
from memloci.kinds import FACT_TYPES
from memloci.models import (
    Edge,
    EdgeType,
    Entity,
    FactType,
    MemoryNode,
    NodeType,
    ProcedureDetails,
    Scope,
    SourceType,
    short_id,
    utcnow,
)
from memloci.providers.base import Embedder, Vector, calibration_of
from memloci.retrieval.query import document_text
from memloci.storage.base import NodeFilter, PendingEmbedding, PendingSession, Store
from memloci.storage.locks import entities_lock
from memloci.storage.rows import content_hash

log = logging.getLogger("memloci.consolidation")

EPISODE_BATCH = 200  # episodes per extraction call and transaction
MAX_BATCHES = 50  # per session and run: a session that keeps growing waits for the next run
KNOWN_FACTS = 50  # stored memories shown to the extractor (newest first)


class ConsolidationReport(BaseModel):
    """What a consolidation run did. ``failed`` maps a session to the error that left it
    pending; ``skipped`` sessions had nothing pending (or another run took them);
    ``partial`` sessions (also in ``sessions``) still have episodes pending because the
    run's ``max_episodes`` was reached."""

    model_config = ConfigDict(defer_build=True)

    namespace: str
    extractor: str = ""
    sessions: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    partial: list[str] = Field(default_factory=list)
    failed: dict[str, str] = Field(default_factory=dict)
    episodes: int = 0
    created: list[str] = Field(default_factory=list)
    confirmed: int = 0
    superseded: list[str] = Field(default_factory=list)
    entities_created: int = 0
    entities_linked: int = 0
    rejected: int = 0  # proposed facts that failed validation

    def merge(self, other: ConsolidationReport) -> None:
        """Add another namespace's or run's counts to this one."""
        self.sessions += other.sessions
        self.skipped += other.skipped
        self.partial += other.partial
        self.failed.update(other.failed)
        self.created += other.created
        self.superseded += other.superseded
        self.episodes += other.episodes
        self.confirmed += other.confirmed
        self.entities_created += other.entities_created
        self.entities_linked += other.entities_linked
        self.rejected += other.rejected


class SessionTaken(Exception):
    """Another run claimed some of the episodes first; this run stored nothing."""


@dataclass
class _Run:
    """In-transaction bookkeeping: what this batch made and ended, so a fact said twice
    in one batch is stored once."""

    namespace: str
    now: datetime
    report: ConsolidationReport
    resolver: EntityResolver
    made: dict[tuple[object, ...], MemoryNode] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    edges: list[Edge] = field(default_factory=list)

    def edge(
        self, source_id: str, target_id: str, relation: EdgeType, confidence: float = 1.0
    ) -> Edge:
        """A new edge of this batch, valid from now."""
        return Edge(
            id=short_id() + short_id(),
            namespace=self.namespace,
            source_id=source_id,
            target_id=target_id,
            relation=relation,
            confidence=confidence,
            valid_from=self.now,
            created_at=self.now,
        )


class Consolidator:
    """Turns pending sessions into memories with one extractor."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        extractor: Extractor,
        *,
        embedder: Embedder | None = None,
    ) -> None:
        self.store, self.settings, self.extractor = store, settings, extractor
        self.embedder = embedder
        self._known_cache: dict[tuple[str, str | None, str | None], list[MemoryNode]] = {}

    def run(
        self,
        namespace: str,
        sessions: Sequence[str | PendingSession],
        *,
        keep_going: Callable[[], bool] | None = None,
        max_episodes: int | None = None,
    ) -> ConsolidationReport:
        """Consolidate these sessions (ids, or entries of ``Store.pending_sessions``: one
        whose ``session`` is None stands for the turns its owner stored without a
        session); errors are reported per session, never raised.
        ``keep_going()`` is asked before each session (maintenance renews its lock).
        ``max_episodes`` caps the episodes read in this run (oldest first); what is left
        stays pending for the next run."""
        report = ConsolidationReport(
            namespace=namespace, extractor=getattr(self.extractor, "name", "")
        )
        for target in sessions:
            if isinstance(target, str):
                target = PendingSession(namespace, target, None, None, 0)
            label = target.label
            if keep_going is not None and not keep_going():
                break
            if max_episodes is not None and report.episodes >= max_episodes:
                break
            left = None if max_episodes is None else max_episodes - report.episodes
            try:
                done = self.session(namespace, target, report, max_episodes=left)
            except SessionTaken:
                report.skipped.append(label)
            except StorageError:  # the store itself (closed, busy): no session would pass
                raise
            except Exception as exc:  # the extractor is third-party code: contain it
                if exiting():  # the interpreter is shutting down: it stays pending, quietly
                    log.debug("consolidating %s/%s stopped by exit: %s", namespace, label, exc)
                elif not isinstance(exc, MemlociError):
                    log.warning("consolidating %s/%s failed", namespace, label, exc_info=True)
                report.failed[label] = str(exc) or type(exc).__name__
            else:
                (report.sessions if done else report.skipped).append(label)
        return report

    def session(
        self,
        namespace: str,
        target: PendingSession,
        report: ConsolidationReport,
        *,
        max_episodes: int | None = None,
    ) -> bool:
        """Consolidate one session's pending episodes (at most ``max_episodes``), or
        those its owner stored without a session (``target.session`` None); False when
        none were pending. A session cut short by ``max_episodes`` is listed in
        ``report.partial`` and stays pending."""
        session = target.session
        batches, left = 0, max_episodes

        def pending(limit: int) -> list[MemoryNode]:
            return self.store.jobs.session_episodes(
                namespace, session, limit=limit, user=target.user, agent=target.agent
            )

        while batches < MAX_BATCHES:
            room = EPISODE_BATCH if left is None else min(EPISODE_BATCH, left)
            if room <= 0:
                report.partial.append(target.label)
                break
            if left is None:
                episodes = pending(room)
                more = len(episodes) == room  # maybe: the next read tells
            else:  # read one more to know whether the session ends within the budget
                episodes = pending(room + 1)
                more, episodes = len(episodes) > room, episodes[:room]
            if not episodes:
                if batches and session is not None:  # the last batch was full: record it
                    now = utcnow()
                    self.store.jobs.finish_session(
                        namespace, session, user=None, agent=None, now=now
                    )
                break
            # one owner's turns at a time: users (or agents) may share a session id, and
            # the extractor must never read one's words to write another's facts
            owners = _by_owner(episodes)
            for i, theirs in enumerate(owners):
                last = not more and i == len(owners) - 1
                self._batch(namespace, session, theirs, report, last=last)
            batches += 1
            if left is not None:
                left -= len(episodes)
            if not more:
                break
        return batches > 0

    # ------------------------------------------------------------------ one batch
    def _batch(
        self,
        ns: str,
        session: str | None,
        episodes: list[MemoryNode],
        report: ConsolidationReport,
        *,
        last: bool,
    ) -> None:
        current = [e for e in episodes if e.valid_until is None]
        extraction = Extraction()
        if current:
            extraction = self.extractor.extract(current, known=self._known(ns, current[0]))
            if not isinstance(extraction, Extraction):
                raise ValidationError("the extractor returned no Extraction")
        facts: list[tuple[ExtractedFact, str]] = []
        for fact in extraction.facts:
            try:
                facts.append((fact, v.fact(fact.content)))
            except ValidationError:
                report.rejected += 1
        now = utcnow()
        resolver = EntityResolver(
            self.store,
            ns,
            now=now,
            embedder=self.embedder,
            threshold=calibration_of(self.embedder).names,
        )
        resolver.prepare(e.name for e in extraction.entities)
        vectors = self._embed(facts)
        run = _Run(ns, now, report, resolver)
        owner, before = episodes[0], len(report.created)
        with (
            self.store.batch(),
            self.store.exclusive(fact_lock(ns)),
            self.store.exclusive(entities_lock(ns)),
        ):
            claimed = self.store.jobs.claim_episodes(ns, [e.id for e in episodes], now=now)
            if claimed != len(episodes):
                raise SessionTaken(session or "")
            entities = self._entities(run, extraction)
            for (fact, text), vector in zip(facts, vectors, strict=True):
                self._fact(run, fact, text, vector, current or episodes, session, entities)
            if run.edges:
                self.store.memories.insert_edges(run.edges)
            if last and session is not None:
                self.store.jobs.finish_session(
                    ns, session, user=owner.user, agent=owner.agent, now=now
                )
        report.episodes += len(episodes)
        report.entities_created += len(resolver.created)
        known = self._known_cache.get((ns, owner.user, owner.agent))
        if known is not None:  # keep the extractor's view current for the next batch
            new = set(report.created[before:])
            fresh = list({n.id: n for n in run.made.values() if n.id in new}.values())
            known[:] = [n for n in [*fresh, *known] if n.id not in run.ended][:KNOWN_FACTS]

    def _known(self, ns: str, episode: MemoryNode) -> list[MemoryNode]:
        """What the extractor is told is already known: read once per owner and run,
        then kept up to date with what this run stores."""
        owner = (ns, episode.user, episode.agent)
        if owner not in self._known_cache:
            flt = NodeFilter(
                namespaces=(ns,),
                types=(*FACT_TYPES, NodeType.PROCEDURAL),
                user=episode.user,
                agent=episode.agent,
            )
            self._known_cache[owner] = self.store.memories.list_nodes(
                flt, limit=KNOWN_FACTS, order="-created"
            )
        return self._known_cache[owner]

    def _embed(self, facts: list[tuple[ExtractedFact, str]]) -> list[Vector | None]:
        if self.embedder is None or not facts:
            return [None] * len(facts)
        docs = [document_text(text, None, _key(f), f.subject) for f, text in facts]
        return [np.asarray(row, dtype=np.float32) for row in self.embedder.embed(docs)]

    def _entities(self, run: _Run, extraction: Extraction) -> dict[str, Entity]:
        """Resolve every extracted entity once; casefolded name or alias → entity."""
        counts: dict[str, int] = {}
        for fact in extraction.facts:
            for name in fact.entities:
                counts[name.casefold()] = counts.get(name.casefold(), 0) + 1
        out: dict[str, Entity] = {}
        for item in extraction.entities:
            if not any(n.casefold() in counts for n in (item.name, *item.aliases)):
                continue  # no fact mentions it
            try:
                entity = run.resolver.resolve(
                    item.name, item.type, item.aliases, mentions=counts.get(item.name.casefold(), 1)
                )
            except ValidationError:
                continue
            for name in (item.name, *item.aliases):
                out.setdefault(name.casefold(), entity)
        return out

    # ------------------------------------------------------------------ one fact
    def _fact(
        self,
        run: _Run,
        fact: ExtractedFact,
        text: str,
        vector: Vector | None,
        episodes: list[MemoryNode],
        session: str | None,
        entities: dict[str, Entity],
    ) -> None:
        by_id = {e.id: e for e in episodes}
        sources = [by_id[i] for i in fact.source_ids if i in by_id] or episodes
        first = sources[0]
        ntype = fact.node_type
        types = FACT_TYPES if ntype in FACT_TYPES else (NodeType.PROCEDURAL,)
        user, agent = first.user, first.agent
        scope = Scope.USER if user else Scope.AGENT if agent else Scope.GLOBAL
        key = _key(fact)
        mine = (types, scope, user, agent)
        made_key = (*mine, "key", key.casefold()) if key else None
        made_text = (*mine, "text", content_hash(text))
        node = self._store_fact(
            run, fact, text, vector, key, made_key, made_text, types, scope, sources, session
        )
        run.edges += [
            run.edge(node.id, src.id, EdgeType.DERIVED_FROM, fact.confidence) for src in sources
        ]
        names = [n.casefold() for n in fact.entities]
        linked = list(dict.fromkeys(entities[n].id for n in names if n in entities))
        if linked:
            for target in (node.id, *(s.id for s in sources)):
                self.store.entities.link_entities(run.namespace, target, linked)
            run.report.entities_linked += len(linked)

    def _store_fact(
        self,
        run: _Run,
        fact: ExtractedFact,
        text: str,
        vector: Vector | None,
        key: str | None,
        made_key: tuple[object, ...] | None,
        made_text: tuple[object, ...],
        types: tuple[NodeType, ...],
        scope: Scope,
        sources: list[MemoryNode],
        session: str | None,
    ) -> MemoryNode:
        ns, first = run.namespace, sources[0]
        if made_text in run.made:  # said twice in this batch
            return run.made[made_text]
        new = self._node(run, fact, text, key, scope, sources, session)
        old: MemoryNode | None = run.made.get(made_key) if made_key else None
        if old is None:
            owner = fact_owner(ns, types, scope, user=first.user, agent=first.agent, session=None)
            found = match_fact(
                self.store,
                owner,
                text,
                key=key,
                embed=(lambda: vector) if vector is not None else None,
                threshold=duplicate_threshold(self.settings.duplicate_threshold, self.embedder),
            )
            hit = found.node if found.node is not None and found.node.id not in run.ended else None
            if hit is not None and found.kind is MatchKind.KEY and not _ends_it(text, hit):
                # "no longer lives in Paris" says nothing about the key's "lives in Lisbon"
                hit, key = None, None
                new = new.model_copy(update={"key": None})
            same = hit is not None and same_text(hit.content, text)
            replaces = found.kind is MatchKind.KEY or (
                found.kind is MatchKind.NEAR and fact.fact_type is FactType.CORRECTION
            )  # a correction close to a known fact replaces it rather than confirming it
            if hit is not None and not same and not replaces and hit.key is None:
                # near in meaning, yet it says the opposite ("fast" / "slow")
                replaces = contradiction(hit.content, text) is not None
            if hit is not None and (same or not replaces):
                # one confirmation more, the confidence it was said with (what decay
                # took comes back), and the key and category it brings where it has none
                given = {
                    "key": key if hit.key is None else None,
                    "category": new.category,
                    "confidence": new.confidence,
                }
                self.store.memories.update_node(ns, hit.id, restatement(hit, given)[0])
                run.report.confirmed += 1
                run.made[made_text] = hit
                return hit
            old = hit if replaces else self._corrected(run, fact, owner)
            if old is None and types == FACT_TYPES:  # an unkeyed fact it contradicts
                gone = contradicted(self.store, owner, text, skip=run.ended)
                old = gone[0] if gone is not None else None
        stated = self._stated(ns, old) if old is not None else None
        if old is not None and stated is not None and new.event_time < stated:
            current, new = old, self._historical(run, new, old, stated)  # said before it
        elif old is not None:
            # the old fact held until the new one was said (turns may be dated in the past)
            until = min(run.now, max(new.valid_from, stated or new.valid_from))
            self.store.memories.supersede(ns, old.id, new, now=until)
            run.ended.add(old.id)
            run.report.superseded.append(old.id)
            current = new
        else:
            new = current = self.store.memories.insert_node(new)
        if vector is not None:
            item = PendingEmbedding(new.id, content_hash(text), text, None, key, new.subject)
            self.store.search.save_embeddings([item], vector[None, :])
        run.report.created.append(new.id)
        run.made[made_text] = new
        if made_key:
            run.made[made_key] = current
        return new

    def _stated(self, ns: str, fact: MemoryNode) -> datetime:
        """When a fact's current wording was stated: when it was said, or when it was last
        edited (``update``, a key overwrite: a version after the first)."""
        if fact.version <= 1:
            return fact.event_time
        edits = [v.created_at for v in self.store.memories.versions(ns, fact.id)]
        return max([fact.event_time, *edits])

    def _historical(
        self, run: _Run, new: MemoryNode, newer: MemoryNode, stated: datetime
    ) -> MemoryNode:
        """A fact drawn from turns older than the current fact it conflicts with (a
        session consolidated late, or a fact edited since): stored as already superseded
        by that fact — its validity ends where the newer wording was ``stated`` — so an
        older statement never replaces a newer one."""
        until = max(stated, new.valid_from)
        stored = self.store.memories.insert_node(new.model_copy(update={"valid_until": until}))
        run.edges.append(run.edge(newer.id, stored.id, EdgeType.SUPERSEDES))
        run.ended.add(stored.id)
        run.report.superseded.append(stored.id)
        return stored

    def _corrected(self, run: _Run, fact: ExtractedFact, owner: NodeFilter) -> MemoryNode | None:
        """The fact a ``correction`` replaces: the newest current one about the same
        subject, in the same category if there is one."""
        if fact.fact_type is not FactType.CORRECTION or not fact.subject:
            return None
        subject = fact.subject.casefold()
        same = [
            n
            for n in self.store.memories.list_nodes(owner, limit=200, order="-created")
            if n.id not in run.ended and (n.subject or "").casefold() == subject
        ]
        return next((n for n in same if n.category == fact.category), same[0] if same else None)

    def _node(
        self,
        run: _Run,
        fact: ExtractedFact,
        text: str,
        key: str | None,
        scope: Scope,
        sources: list[MemoryNode],
        session: str | None,
    ) -> MemoryNode:
        ntype, first = fact.node_type, sources[0]
        when = max(s.event_time for s in sources)
        procedural = ntype is NodeType.PROCEDURAL
        return MemoryNode(
            id=short_id(),
            namespace=run.namespace,
            type=ntype,
            content=text,
            key=key,
            category=fact.category,
            subject=fact.subject,
            fact_type=None if procedural else fact.fact_type,
            scope=scope,
            user=first.user,
            agent=first.agent,
            session=session,
            event_time=when,
            created_at=run.now,
            updated_at=run.now,
            valid_from=when,
            confidence=fact.confidence,
            decay_rate=self.settings.decay_rate_default,
            source_type=SourceType.CONSOLIDATION,
            procedure=ProcedureDetails() if procedural else None,
            metadata={"source": "consolidation"},  # says where it came from in exports
        )


_ENDING = re.compile(r"\bno longer\b", re.IGNORECASE)


def _ends_it(text: str, old: MemoryNode) -> bool:
    """Whether a fact may replace the holder of its key: always, unless it says that
    something has ended ("User no longer lives in Paris") and the holder names nothing
    it names (the user's "lives in Lisbon" stands)."""
    if not _ENDING.search(text):
        return True
    names = details(text)[1] - {"user"}
    return bool(names & details(old.content)[1])


def _key(fact: ExtractedFact) -> str | None:
    try:
        return v.key(fact.key)
    except ValidationError:
        return None


def _by_owner(episodes: list[MemoryNode]) -> list[list[MemoryNode]]:
    """``episodes`` grouped by owner (user, agent), in order of first appearance."""
    groups: dict[tuple[str | None, str | None], list[MemoryNode]] = {}
    for episode in episodes:
        groups.setdefault((episode.user, episode.agent), []).append(episode)
    return list(groups.values())
