"""Memories written and read (layer: service): ``MemoryService.memories``.

Every argument is validated before anything is written, so a bad call writes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memloci import validate as v
from memloci.consolidation.contradiction import contradicted, contradiction
from memloci.consolidation.dedupe import (
    FactMatch,
    MatchKind,
    fact_lock,
    fact_owner,
    match_fact,
    restatement,
)
from memloci.consolidation.dedupe import duplicate_threshold as _threshold
from memloci.errors import NotFoundError, ProviderError, ValidationError
from memloci.kinds import FACT_TYPES
from memloci.models import (
    SCOPE_ORDER,
    EpisodeDetails,
    FactType,
    MemoryNode,
    MemoryVersion,
    NodeType,
    ProcedureDetails,
    ProcedureType,
    Scope,
    SearchHit,
    SourceType,
    StoreStats,
    WriteResult,
    normalize_key,
    short_id,
    utcnow,
)
from memloci.procedures import record_use
from memloci.retrieval.pipeline import Retriever
from memloci.retrieval.query import document_text
from memloci.service.calls import threaded
from memloci.service.consolidation import Consolidation
from memloci.service.core import Core, Service
from memloci.service.edits import Edits
from memloci.storage.base import NodeFilter, NodePatch
from memloci.storage.rows import content_hash
from memloci.telemetry import observed

log = logging.getLogger("memloci.service")


@dataclass(frozen=True)
class _Remembered:
    """What ``remember``'s check-and-write did: the match, the same-subject memories,
    the stored node, the changes made to a confirmed one, and the fact it replaced (with
    how the new one contradicts it)."""

    found: FactMatch
    similar: list[MemoryNode] = field(default_factory=list)
    stored: MemoryNode | None = None
    changes: list[str] = field(default_factory=list)
    replaced: tuple[MemoryNode, str] | None = None


@dataclass(frozen=True)
class VisibleStats:
    """Counts of the memories one caller may see (see :meth:`Memories.visible_stats`)."""

    current_by_type: dict[str, int]
    nodes_by_type: dict[str, int]  # current or not
    entities: int  # entities the current ones mention


class Memories(Service):
    """Memories written and read: conversation turns (the hot path), facts, procedures,
    episodes; get, lookup, list, search and counts."""

    def __init__(
        self, core: Core, retriever: Retriever, edits: Edits, consolidation: Consolidation
    ) -> None:
        super().__init__(core)
        self.retriever = retriever
        self.edits = edits
        self.consolidation = consolidation

    # ------------------------------------------------------------------ hot path
    @threaded
    def add(self, /, content: str | Sequence[Mapping[str, Any]], **turn: Any) -> list[MemoryNode]:
        """Store conversation turns as episodes, linked in order within their session.

        Keyword arguments: ``namespace``, ``user``, ``agent``, ``session``, ``speaker``,
        ``role``, ``event_time``, ``metadata``. ``add.now(...)`` is the hot path, run in
        the caller's thread (no hand-offs): validate, then one transaction for the
        episodes, their temporal edges and full-text rows.
        """
        return self._store_turns(self._turn_nodes(content, **turn))

    def _turn_nodes(
        self,
        content: str | Sequence[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        speaker: str | None = None,
        role: str | None = None,
        event_time: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> list[MemoryNode]:
        ns = self.core.ns(namespace)
        user, agent, session = v.ident(user, "user"), v.ident(agent, "agent"), v.ident(session)
        when = v.when(event_time)
        meta = v.metadata(metadata)
        now = utcnow()
        if isinstance(content, str):
            turns = [(v.turn(content), v.label(speaker, "speaker"), v.role(role))]
        else:
            turns = v.messages(content)
            if speaker is not None or role is not None:
                raise ValidationError("speaker/role go inside each message when adding a list")
        scope = v.scope(None, user=user, agent=agent, session=session)
        nodes = [
            MemoryNode(
                id=short_id(),
                namespace=ns,
                type=NodeType.EPISODIC,
                content=text,
                category="conversation",
                scope=scope,
                user=user,
                agent=agent,
                session=session,
                speaker=who or r,
                event_time=when or now,
                created_at=now,
                updated_at=now,
                valid_from=when or now,
                decay_rate=0.0,
                source_type=SourceType.CONVERSATION,
                source_role=r,
                metadata=meta,
            )
            for text, who, r in turns
        ]
        return nodes

    @observed("add")
    def _store_turns(self, nodes: list[MemoryNode]) -> list[MemoryNode]:
        nodes = self.owners.as_owner(nodes)  # a merged user's turns: the user's it joined
        self.consolidation.session_seen(
            nodes[-1]
        )  # a new session hands the last one to consolidation
        if len(nodes) == 1:
            nodes = [self.store.memories.insert_node(nodes[0], link_previous=True)]
        else:
            self.store.memories.insert_nodes(nodes, link_previous=True)
        if self.worker:
            self.worker.wake()
        self.core.prune(nodes[0].namespace, (NodeType.EPISODIC,), self.settings.max_episodes)
        return self.owners.settled(nodes)

    # ------------------------------------------------------------------ explicit writes
    @threaded
    def remember(
        self,
        content: str,
        *,
        namespace: str | None = None,
        key: str | None = None,
        value: Any = None,
        category: str | None = None,
        subject: str | None = None,
        fact_type: FactType | str | None = None,
        type: NodeType | str = NodeType.SEMANTIC,
        scope: Scope | str | None = None,
        confidence: float = 1.0,
        user: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        event_time: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        overwrite: bool = True,
        suggest_on_subject: bool = False,
        source_type: SourceType | str = SourceType.USER,
    ) -> WriteResult:
        """Store a fact. Duplicates confirm the existing one (and set a key or value it
        lacks or holds otherwise, or a category it lacks: ``updated``); a known key
        updates it."""
        ns = self.core.ns(namespace)
        text = v.fact(content)
        ntype = v.enum(NodeType, type, "type")
        if ntype not in FACT_TYPES:
            raise ValidationError("remember stores semantic or opinion memories")
        user, agent, session = self.owners.who(ns, user, agent, session)
        sc = v.scope(scope, user=user, agent=agent, session=session)
        ft = v.enum(FactType, fact_type, "fact_type") if fact_type is not None else None
        conf = v.unit(confidence, "confidence")
        key = v.key(key)
        cat, subj = v.category(category), v.label(subject, "subject", 200)
        meta, src = v.metadata(metadata), v.enum(SourceType, source_type, "source_type")
        v.json_value(value)
        when, now = v.when(event_time), utcnow()
        owner = fact_owner(ns, FACT_TYPES, sc, user=user, agent=agent, session=session)
        vector, doc = None, document_text(text, None, key, subj)
        if self.embedder is not None:  # embed first: no lock is held while the model runs
            try:
                vector = (self.embedder.embed([doc]))[0]
            except ProviderError as exc:  # embedder down: store it now, embed it later
                log.warning("remember: not embedded now (%s); the worker embeds it later", exc)
        node = MemoryNode(
            id=short_id(),
            namespace=ns,
            type=ntype,
            content=text,
            key=key,
            value=value,
            category=cat,
            subject=subj,
            fact_type=ft,
            scope=sc,
            user=user,
            agent=agent,
            session=session,
            event_time=when or now,
            created_at=now,
            updated_at=now,
            valid_from=when or now,
            confidence=conf,
            decay_rate=self.settings.decay_rate_default,
            source_type=src,
            metadata=meta,
        )
        given = {
            "key": key,
            "value": value,
            "category": cat if category is not None else None,
            "confidence": conf,
        }
        owner_user = user if sc is Scope.USER else None  # caps count per user

        def write() -> _Remembered:
            done = self._remember_atomic(owner, node, vector, suggest_on_subject, given)
            if done.stored is not None:  # stored: the cap too, in this thread, so a caller
                # that stops waiting (a timeout) never leaves the store over it
                self.core.prune(ns, FACT_TYPES, self.settings.max_memories, owner_user)
                return replace(done, stored=self.owners.settled([done.stored])[0])
            return done

        done = write()
        found, similar, stored, changes = done.found, done.similar, done.stored, done.changes
        old = found.node
        if old is not None and found.kind is MatchKind.KEY:
            if not overwrite:
                return WriteResult(
                    action="exists",
                    memory=old,
                    similar=[old],
                    message=f"[{old.id}] already holds key {key!r}; pass overwrite=True "
                    "or update it",
                )
            # the key's fact as it is now (it may have changed since the match)
            current = self.edits.current(ns, old.id, "it can no longer change")
            patch = NodePatch(content=text, value=value, set_value=True, times_confirmed_delta=1)
            return self.edits.rewrite(
                current,
                patch,
                session=session,
                embedded=(doc, vector) if vector is not None else None,
            )
        if done.replaced is not None:  # an unkeyed fact it contradicts: it holds no more
            gone, how = done.replaced
            if vector is None and self.worker:
                self.worker.wake()
            elif self.worker:
                self.worker.link([node.id])
            return WriteResult(
                action="superseded",
                memory=stored or node,
                similar=[gone],
                message=f"Remembered [{node.id}]; it supersedes [{gone.id}] "
                f"({gone.content!r} no longer holds: {how}; kept in its history).",
            )
        if old is not None:  # with a key, value or category it lacked: set them
            told = f" and set {', '.join(changes)} (version {old.version})" if changes else ""
            return WriteResult(
                action="updated" if changes else "confirmed",
                memory=old,
                message=f"Already remembered as [{old.id}] ({found.why}); confirmed it "
                f"({old.times_confirmed}x){told}.",
            )
        if similar and suggest_on_subject:
            ids = ", ".join(n.id for n in similar[:3])
            return WriteResult(
                action="suggest_update",
                memory=similar[0],
                similar=similar,
                message=f"memories about {subj!r} exist ({ids}); update one instead?",
            )
        if vector is None and self.worker:
            self.worker.wake()  # embeds it, then links it
        elif self.worker:
            self.worker.link([node.id])  # its subject and the names it mentions
        message = f"Remembered [{node.id}]."
        if similar:
            message += f" Related memories about {subj}: " + ", ".join(n.id for n in similar[:3])
        memory = stored or node
        return WriteResult(action="created", memory=memory, message=message, similar=similar)

    def _remember_atomic(
        self,
        owner: NodeFilter,
        node: MemoryNode,
        vector: Any,
        suggest: bool,
        given: Mapping[str, Any],
    ) -> _Remembered:
        """Check and write as one unit (``store.exclusive``): a concurrent ``remember`` of
        the same fact — another thread, process or server — waits, then sees this one's
        row and vector. Returns the match (a confirmed duplicate comes back updated, with
        the key, value and category ``given`` that it lacked: see
        :func:`~memloci.service.edits.restatement`), the same-subject memories, the stored
        node and the changes made to a confirmed one; with no match and no suggestion,
        ``node`` is stored together with its vector — superseding the current unkeyed fact
        of the owner it contradicts, if any (same subject and property, an incompatible
        value: :mod:`memloci.consolidation.contradiction`), unless that one is dated
        later."""
        store = self.store
        with store.exclusive(fact_lock(node.namespace)):
            found = match_fact(
                store,
                owner,
                node.content,
                key=node.key,
                value=node.value,
                embed=(lambda: vector) if vector is not None else None,
                threshold=_threshold(self.settings.duplicate_threshold, self.embedder),
            )
            replaced: tuple[MemoryNode, str] | None = None
            if found.node is not None and found.kind is not MatchKind.KEY:
                how = contradiction(found.node.content, node.content)
                if how is None or found.node.key is not None:
                    patch, changes = restatement(found.node, given)
                    updated = store.memories.update_node(found.node.namespace, found.node.id, patch)
                    return _Remembered(replace(found, node=updated), changes=changes)
                replaced = found.node, how  # near in meaning, yet it says the opposite
            elif found.node is not None:
                return _Remembered(found)
            else:
                replaced = contradicted(store, owner, node.content)
            if replaced is not None and replaced[0].event_time > node.event_time:
                replaced = None  # stated after this one (an event_time in the past)
            similar: list[MemoryNode] = []
            if node.subject and replaced is None:  # the newest memories about the subject
                about = replace(owner, subject=node.subject)
                similar = store.memories.list_nodes(about, limit=20, order="-created")
                if similar and suggest:
                    return _Remembered(found, similar)
            if replaced is not None:
                store.memories.supersede(node.namespace, replaced[0].id, node, now=utcnow())
                stored = store.memories.get_node(node.namespace, node.id) or node
            else:
                stored = store.memories.insert_node(node)
            self.edits.save_vector(node, vector)
            return _Remembered(FactMatch(), similar, stored, replaced=replaced)

    @threaded
    def purge(self, memory_id: str, *, namespace: str | None = None) -> None:
        """Hard delete (privacy): the memory, its history, edges and vector are gone."""
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        if not self.store.memories.purge_node(ns, mid):
            raise NotFoundError(f"no memory {mid!r} in namespace {ns!r}")

    @threaded
    def learn_procedure(
        self,
        content: str,
        *,
        namespace: str | None = None,
        triggers: Mapping[str, Any] | None = None,
        procedure_type: ProcedureType | str = ProcedureType.WORKFLOW_GRAPH,
        category: str | None = "procedure",
        user: str | None = None,
        agent: str | None = None,
        scope: Scope | str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> WriteResult:
        """Store a how-to / standing instruction: without ``triggers`` it is injected into
        every context; with ``triggers={"goal_contains": [...]}`` only when the prompt
        mentions one of the phrases (see :func:`memloci.validate.triggers`).

        The same text again in the same scope (and for the same user / agent) confirms
        the known procedure; given ``triggers`` that differ from its own replace them,
        as a new version (``action="updated"``)."""
        ns, text = self.core.ns(namespace), v.fact(content)
        user, agent = self.owners.owner(ns, user), v.ident(agent, "agent")
        sc = v.scope(scope, user=user, agent=agent, session=None)
        wanted = None if triggers is None else v.triggers(triggers)
        details = ProcedureDetails(
            procedure_type=v.enum(ProcedureType, procedure_type, "procedure_type"),
            triggers=wanted or {},
        )
        types = (NodeType.PROCEDURAL,)
        owner = fact_owner(ns, types, sc, user=user, agent=agent, session=None)
        now = utcnow()
        node = MemoryNode(
            id=short_id(),
            namespace=ns,
            type=NodeType.PROCEDURAL,
            content=text,
            category=v.category(category),
            scope=sc,
            user=user,
            agent=agent,
            event_time=now,
            created_at=now,
            updated_at=now,
            valid_from=now,
            procedure=details,
            decay_rate=self.settings.decay_rate_default,
            metadata=v.metadata(metadata),
        )

        def check_and_insert() -> tuple[MemoryNode, str, dict[str, Any]]:  # one unit
            with self.store.exclusive(fact_lock(ns)):
                dupes = self.store.memories.find_by_hash(owner, content_hash(text))
                if not dupes:
                    created = self.store.memories.insert_node(node)
                    self.core.prune(ns, (NodeType.PROCEDURAL,), self.settings.max_procedures)
                    return self.owners.settled([created])[0], "created", {}
                old = dupes[0]
                known = old.procedure or ProcedureDetails()
                if wanted is None or wanted == known.triggers:
                    patch = NodePatch(times_confirmed_delta=1)
                    return self.store.memories.update_node(ns, old.id, patch), "confirmed", {}
                new = known.model_copy(update={"triggers": wanted})
                extra = {"procedure": new, "version": old.version + 1}
                patch = NodePatch(times_confirmed_delta=1, extra=extra)
                return self.store.memories.update_node(ns, old.id, patch), "updated", known.triggers

        node, action, before = check_and_insert()
        if action == "confirmed":
            return WriteResult(
                action="confirmed",
                memory=node,
                message=f"Already remembered as [{node.id}] (already known); confirmed it "
                f"({node.times_confirmed}x).",
            )
        if action == "updated":
            now_on = node.procedure.triggers if node.procedure else {}
            return WriteResult(
                action="updated",
                memory=node,
                message=f"Already known as [{node.id}]; its triggers changed (version "
                f"{node.version}): {before or 'none'} → {now_on or 'none'}.",
            )
        if self.worker:
            self.worker.wake()
        return WriteResult(action="created", memory=node, message=f"Learned [{node.id}].")

    @threaded
    def record_procedure_use(
        self,
        memory_id: str,
        *,
        namespace: str | None = None,
        success: bool | None = None,
        duration_ms: float | None = None,
    ) -> MemoryNode:
        """Count one use of a learned procedure, with its outcome and duration when known
        (``times_used``, ``success_rate``, ``avg_duration_ms``; atomic across writers).
        A forgotten or replaced procedure is refused (ValidationError)."""
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        if success is not None:
            success = v.flag(success, "success")
        ms = v.non_negative(duration_ms, "duration_ms") if duration_ms is not None else None

        with self.store.exclusive(f"procedure:{ns}:{mid}"):
            node = self.store.memories.get_node(ns, mid)
            if node is None or node.type is not NodeType.PROCEDURAL:
                raise NotFoundError(f"no procedure with id {mid!r}")
            if not node.is_current:  # forgotten or replaced: its record is closed
                raise ValidationError(
                    f"procedure {mid} is no longer current (forgotten or replaced); "
                    "its uses are no longer counted",
                    hint="record the use on the procedure that replaced it",
                )
            details = record_use(
                node.procedure or ProcedureDetails(), success=success, duration_ms=ms
            )
            patch = NodePatch(extra={"procedure": details, "updated_at": node.updated_at})
            return self.store.memories.update_node(ns, mid, patch)

    @threaded
    def record_episode(
        self,
        content: str,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        session: str | None = None,
        details: EpisodeDetails | Mapping[str, Any] | None = None,
        event_time: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        category: str | None = None,
    ) -> WriteResult:
        """Store a structured episode (trigger, actions, outcome, timing, feedback);
        ``category`` defaults to ``episode`` (e.g. ``autonomous_run`` for agent runs)."""
        ns, text = self.core.ns(namespace), v.turn(content)
        user, agent, session = self.owners.who(ns, user, agent, session)
        episode = v.episode(details)
        now, when = utcnow(), v.when(event_time)
        node = MemoryNode(
            id=short_id(),
            namespace=ns,
            type=NodeType.EPISODIC,
            content=text,
            category=v.category(category) if category else "episode",
            scope=v.scope(None, user=user, agent=agent, session=session),
            user=user,
            agent=agent,
            session=session,
            event_time=when or now,
            created_at=now,
            updated_at=now,
            valid_from=when or now,
            decay_rate=0.0,
            source_type=SourceType.TOOL_RESULT,
            episode=episode,
            metadata=v.metadata(metadata),
        )

        def write() -> MemoryNode:  # the cap in the same thread (see remember)
            stored = self.store.memories.insert_node(node, link_previous=session is not None)
            self.core.prune(ns, (NodeType.EPISODIC,), self.settings.max_episodes)
            return self.owners.settled([stored])[0]

        node = write()
        if self.worker:
            self.worker.wake()
        return WriteResult(action="created", memory=node, message=f"Recorded [{node.id}].")

    # ------------------------------------------------------------------ reads
    @threaded
    def get(self, memory_id: str, *, namespace: str | None = None) -> MemoryNode:
        return self.core.node(self.core.ns(namespace), v.memory_id(memory_id))

    @threaded
    def history(self, memory_id: str, *, namespace: str | None = None) -> list[MemoryVersion]:
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        return self.store.memories.versions(ns, mid)

    @threaded
    def lookup(
        self,
        key: str,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        session: str | None = None,
    ) -> MemoryNode | None:
        """The fact stored under ``key``, most specific scope first (session → global)."""
        ns, norm = self.core.ns(namespace), normalize_key(v.key(key) or "")
        user, agent, session = self.owners.who(ns, user, agent, session)
        for sc in SCOPE_ORDER:
            missing = {Scope.SESSION: session, Scope.USER: user, Scope.AGENT: agent}
            if sc in missing and not missing[sc]:
                continue
            flt = NodeFilter(
                namespaces=(ns,),
                key_norm=norm,
                scopes=(sc,),
                agent=agent,
                session=session,
                owner_user=user if sc is Scope.USER else None,
                sessions=(session,) if sc is Scope.SESSION and session else None,
            )
            found = self.store.memories.list_nodes(flt, limit=1, order="-created")
            if found:
                return found[0]
        return None

    @threaded
    def list_nodes(
        self, flt: NodeFilter, *, limit: int = 50, offset: int = 0, order: str = "created"
    ) -> list[MemoryNode]:
        v.page(limit, offset)
        return self.store.memories.list_nodes(flt, limit=limit, offset=offset, order=order)

    @threaded
    def count(self, flt: NodeFilter) -> int:
        return self.store.memories.count_nodes(flt)

    @threaded
    def clear(self, flt: NodeFilter) -> int:
        """Hard-delete every memory matching the filter (one namespace, one transaction)."""
        if len(flt.namespaces) != 1:
            raise ValidationError("clear works on exactly one namespace")
        flt = replace(flt, include_invalid=True)
        return self.store.memories.clear(flt.namespaces[0], flt)

    @threaded
    @observed("search")
    def search(
        self,
        query: str,
        flt: NodeFilter,
        *,
        k: int = 10,
        recipe: str = "hybrid",
        reinforce: bool = True,
    ) -> list[SearchHit]:
        """Hybrid search; every interface's search ends here. ``reinforce=False``: the
        hits are not touched even with ``reinforce_on_search`` (a look nobody is shown).
        ``search.now(...)`` runs it in the caller's thread (the sync SDK: no hand-offs)."""
        text = v.query(query)
        k = v.limit(k, "k", 200)
        with self.consolidation.foreground():
            if self.worker is not None and recipe != "fulltext":
                self.worker.catch_up()  # a few memories just written: embed them first
            hits = self.retriever.search(text, flt, k, recipe=recipe)
        if flt.as_of is not None:  # each memory as it read then, not as it reads now
            hits = [self._as_it_was(h, flt.as_of) for h in hits]
        if hits and reinforce and self.settings.reinforce_on_search:
            for ns in flt.namespaces:
                ids = [h.memory.id for h in hits if h.memory.namespace == ns]
                if ids and self.worker:
                    self.worker.touch(ns, ids)  # applied in the background
                elif ids:
                    self.store.memories.touch(ns, ids, now=utcnow())
        return hits

    def _as_it_was(self, hit: SearchHit, when: datetime) -> SearchHit:
        """``hit`` with its memory's text and value of the version current at ``when``."""
        m = hit.memory
        if m.version == 1 or m.updated_at <= when:
            return hit
        then = [x for x in self.store.memories.versions(m.namespace, m.id) if x.created_at <= when]
        if not then or then[-1].version == m.version:
            return hit
        old = then[-1]
        memory = m.model_copy(
            update={"content": old.content, "value": old.value, "version": old.version}
        )
        return hit.model_copy(update={"memory": memory})

    @threaded
    def stats(self, namespaces: Sequence[str] | None = None) -> StoreStats:
        nss = [v.namespace(n) for n in (namespaces or [self.settings.namespace])]
        return self.store.stats(nss)

    @threaded
    def visible_stats(self, flt: NodeFilter) -> VisibleStats:
        """What one caller may see (``flt``: their memories and shared ones): memories
        by type, current and including forgotten ones, and how many entities the current
        ones mention. Unlike :meth:`stats` it never counts other users' memories."""

        current: dict[str, int] = {}
        total: dict[str, int] = {}
        for kind in flt.types or tuple(NodeType):
            one = replace(flt, types=(kind,))
            if n := self.store.memories.count_nodes(replace(one, include_invalid=True)):
                total[kind.value] = n
                current[kind.value] = self.store.memories.count_nodes(one)
        entities: set[str] = set()
        for ns in flt.namespaces:
            own, offset = replace(flt, namespaces=(ns,), include_invalid=False), 0
            while page := self.store.memories.list_nodes(
                own, limit=1000, offset=offset, order="rowid"
            ):
                offset += len(page)
                linked = self.store.entities.node_entities(ns, [n.id for n in page])
                entities.update(e.id for found in linked.values() for e in found)
        return VisibleStats(
            current_by_type={k: n for k, n in current.items() if n},
            nodes_by_type=total,
            entities=len(entities),
        )
