"""Memory users, threads, entities and provenance of MemoryService (layer: service); API
keys come from :mod:`memloci.service.keys`.

``MemoryService.records``. Every argument is validated before anything is written,
and a change that touches several rows runs in one store transaction; a read-decide-write
holds the lock of its records (:mod:`memloci.storage.locks`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from memloci import validate as v
from memloci.consolidation.profiles import embed_profiles
from memloci.decay import weakest
from memloci.errors import ConflictError, NotFoundError, ValidationError
from memloci.kinds import FACT_TYPES
from memloci.models import (
    ID_RE,
    TURN_MAX,
    Edge,
    EdgeType,
    Entity,
    EntityInfo,
    EntityType,
    Explanation,
    GraphLink,
    GraphNode,
    GraphView,
    MemoryNode,
    MemoryUser,
    RelatedEntity,
    Thread,
    ThreadMessage,
    short_id,
    utcnow,
)
from memloci.service.calls import threaded
from memloci.service.core import Service
from memloci.service.owners import CHAIN_MAX
from memloci.storage.aliases import names_in_use
from memloci.storage.base import NodeFilter
from memloci.storage.locks import entities_lock, users_lock


class Records(Service):
    """Users, threads ("checkpoints"), entities, ``explain`` and ``weak_facts``."""

    # ------------------------------------------------------------------ memory users
    @threaded
    def list_users(
        self,
        *,
        namespace: str | None = None,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[MemoryUser]:
        """Oldest first; ``query`` matches id or display name (case-insensitive)."""
        ns, q = self.core.ns(namespace), v.label(query, "query", 200)
        v.page(limit, offset)
        return self.store.people.list_users(ns, limit, offset, query=q)

    @threaded
    def count_users(self, *, namespace: str | None = None, query: str | None = None) -> int:
        ns, q = self.core.ns(namespace), v.label(query, "query", 200)
        return self.store.people.count_users(ns, query=q)

    @threaded
    def get_user(
        self,
        user_id: str,
        *,
        namespace: str | None = None,
        follow_merged: bool = False,
    ) -> MemoryUser:
        """The user; with ``follow_merged``, the user it was (transitively) merged into."""
        ns, uid = self.core.ns(namespace), v.required(user_id, "user")
        return self._user(ns, uid, v.flag(follow_merged, "follow_merged"))

    def _user(self, ns: str, uid: str, follow: bool) -> MemoryUser:
        user = self.store.people.get_user(ns, uid)
        if user is None:
            raise NotFoundError(
                f"no memory user {uid!r} in namespace {ns!r}", hint="list users to see their ids"
            )
        return self.owners.root_user(ns, user) if follow else user

    @threaded
    def save_user(
        self,
        user_id: str,
        *,
        namespace: str | None = None,
        display_name: str | None = None,
        identifiers: Mapping[str, str] | None = None,
        preferences: Mapping[str, Any] | None = None,
    ) -> MemoryUser:
        """Create or update a user. On update only the given fields change; identifiers
        (channel → id) merge into the known ones, preferences replace them.

        A channel id that already belongs to another user raises :class:`ConflictError`
        (merge the users instead)."""
        ns, uid = self.core.ns(namespace), v.required(user_id, "user")
        name = v.label(display_name, "display_name", 200)
        idents = v.identifiers(identifiers)
        prefs = v.metadata(preferences, "preferences") if preferences is not None else None

        def run() -> MemoryUser:
            with self.store.exclusive(users_lock(ns)):  # the check and the write, atomic
                old = self.store.people.get_user(ns, uid)
                if old is None:
                    user = MemoryUser(
                        id=uid,
                        namespace=ns,
                        display_name=name,
                        identifiers=idents,
                        preferences=prefs or {},
                        created_at=utcnow(),
                    )
                else:
                    changes: dict[str, Any] = {"identifiers": {**old.identifiers, **idents}}
                    if name is not None:
                        changes["display_name"] = name
                    if prefs is not None:
                        changes["preferences"] = prefs
                    user = old.model_copy(update=changes)
                root = self.owners.root_user(ns, user).id
                for channel, ref in idents.items():
                    holder = self.store.people.find_user(ns, channel, ref)
                    if holder is not None and self.owners.root_user(ns, holder).id not in (
                        uid,
                        root,
                    ):
                        raise ConflictError(
                            f"{channel} id {ref!r} belongs to memory user {holder.id!r}",
                            hint="merge the two users instead",
                        )
                return self.store.people.upsert_user(user)

        try:
            return run()
        finally:
            self.owners.changed(ns)

    @threaded
    def find_user(
        self, channel: str, identifier: str, *, namespace: str | None = None
    ) -> MemoryUser | None:
        """The user known on ``channel`` by ``identifier``, following ``merged_into``."""
        ns = self.core.ns(namespace)
        ((chan, ref),) = v.identifiers({channel: identifier}).items()

        user = self.store.people.find_user(ns, chan, ref)
        return None if user is None else self.owners.root_user(ns, user)

    @threaded
    def delete_users(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Delete user records (their memories stay); returns how many were deleted."""
        ns, wanted = self.core.ns(namespace), v.ids(ids, lambda i: v.required(i, "user"))
        try:
            return self.store.people.delete_users(ns, wanted)
        finally:
            self.owners.changed(ns)

    @threaded
    def merge_users(
        self, source_id: str, target_id: str, *, namespace: str | None = None
    ) -> MemoryUser:
        """Merge ``source`` into ``target`` in one transaction: identifiers and preferences
        join the target's (the target wins), conversation counts add up, the source's
        memories and threads move to the target, and the source points at the target.
        From then on every call naming the source acts as the target
        (:mod:`memloci.service.owners`)."""
        ns = self.core.ns(namespace)
        src, dst = v.required(source_id, "user"), v.required(target_id, "user")
        if src == dst:
            raise ValidationError("cannot merge a memory user into itself")

        def run() -> MemoryUser:
            with self.store.exclusive(users_lock(ns)):  # two merges at once: one lands
                source, target = self._user(ns, src, False), self._user(ns, dst, False)
                if source.merged_into is not None:
                    raise ConflictError(
                        f"memory user {src!r} was already merged into {source.merged_into!r}"
                    )
                if target.merged_into is not None:
                    root = self.owners.root_user(ns, target).id
                    raise ConflictError(
                        f"memory user {dst!r} was merged into {target.merged_into!r}",
                        hint="nothing to do" if root == src else f"merge into {root!r} instead",
                    )
                seen = [t for t in (source.last_seen, target.last_seen) if t is not None]
                merged = target.model_copy(
                    update={
                        "display_name": target.display_name or source.display_name,
                        "identifiers": {**source.identifiers, **target.identifiers},
                        "preferences": {**source.preferences, **target.preferences},
                        "conversation_count": source.conversation_count + target.conversation_count,
                        "last_seen": max(seen) if seen else None,
                    }
                )
                self.store.people.upsert_user(merged)
                self.store.people.upsert_user(source.model_copy(update={"merged_into": dst}))
                self.store.people.reassign_user(ns, src, dst)
                return merged

        try:
            merged = run()
        finally:
            self.owners.changed(ns)
        # once more after the commit: a write of another process that looked the source
        # up before this merge committed, and checked it before too, committed by now
        self.store.people.reassign_user(ns, src, merged.id)
        return merged

    @threaded
    def touch_user(
        self,
        user_id: str,
        *,
        namespace: str | None = None,
        new_conversation: bool = False,
        when: datetime | None = None,
    ) -> MemoryUser:
        """Record contact with a user: ``last_seen`` becomes ``when`` (default now; it
        never moves backwards) and ``new_conversation`` adds one to
        ``conversation_count``. One transaction; an unknown user is a NotFoundError, and
        a user merged into another counts for the user it joined."""
        ns, uid = self.core.ns(namespace), v.required(user_id, "user")
        new = v.flag(new_conversation, "new_conversation")
        at = v.when(when) or utcnow()

        with self.store.exclusive(users_lock(ns)):  # no contact lost to another server
            user = self.store.people.get_user(ns, uid)
            if user is None:
                raise NotFoundError(f"no memory user {uid!r} in namespace {ns!r}")
            user = self.owners.root_user(ns, user)
            seen = at if user.last_seen is None else max(user.last_seen, at)
            count = user.conversation_count + (1 if new else 0)
            return self.store.people.upsert_user(
                user.model_copy(update={"last_seen": seen, "conversation_count": count})
            )

    # ------------------------------------------------------------------ threads
    @threaded
    def list_threads(
        self,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Thread]:
        """Newest updated first; listed threads carry ``message_count``, not messages."""
        ns, agent = self.core.ns(namespace), v.ident(agent, "agent")
        v.page(limit, offset)
        user = self.owners.owner(ns, user)
        return self.store.people.list_threads(
            ns, user=user, agent=agent, limit=limit, offset=offset
        )

    @threaded
    def count_threads(
        self,
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
    ) -> int:
        ns, agent = self.core.ns(namespace), v.ident(agent, "agent")
        user = self.owners.owner(ns, user)
        return self.store.people.count_threads(ns, user=user, agent=agent)

    @threaded
    def get_thread(self, thread_id: str, *, namespace: str | None = None) -> Thread:
        ns, tid = self.core.ns(namespace), v.required(thread_id, "thread")
        thread = self.store.people.get_thread(ns, tid)
        if thread is None:
            raise NotFoundError(
                f"no thread {tid!r} in namespace {ns!r}", hint="list threads to see their ids"
            )
        return thread

    @threaded
    def save_thread(self, thread: Thread) -> Thread:
        """Create or replace a thread (in ``thread.namespace``); system messages are dropped,
        the first ``created_at`` is kept and ``updated_at`` is now."""
        if not isinstance(thread, Thread):
            raise ValidationError("save_thread needs a Thread")
        ns, tid = v.namespace(thread.namespace), v.required(thread.id, "thread")
        user, agent = self.owners.owner(ns, thread.user), v.ident(thread.agent, "agent")
        messages = v.thread_messages(thread.messages)
        summary = v.label(thread.summary, "summary", TURN_MAX)

        with self.store.exclusive(f"thread:{ns}:{tid}"):  # one writer per thread
            old = self.store.people.get_thread(ns, tid)
            new = Thread(
                id=tid,
                namespace=ns,
                user=user,
                agent=agent,
                messages=messages,
                summary=summary,
                created_at=old.created_at if old else thread.created_at,
                updated_at=utcnow(),
                message_count=len(messages),
            )
            saved = self.store.people.upsert_thread(new)
        return self.owners.settled_thread(saved)

    @threaded
    def append_messages(
        self,
        thread_id: str,
        messages: Sequence[ThreadMessage | Mapping[str, Any]],
        *,
        namespace: str | None = None,
        user: str | None = None,
        agent: str | None = None,
    ) -> Thread:
        """Append messages (roles user / assistant / tool; system prompts are dropped) to a
        thread, creating it when new. A thread owned by another user or agent is a
        :class:`ConflictError`."""
        ns, tid = self.core.ns(namespace), v.required(thread_id, "thread")
        user, agent = self.owners.owner(ns, user), v.ident(agent, "agent")
        new = v.thread_messages(messages)
        if not messages:
            raise ValidationError("no messages to append")

        def run() -> Thread:
            return self.owners.settled_thread(append())

        def append() -> Thread:
            with self.store.exclusive(f"thread:{ns}:{tid}"):  # concurrent appends: none lost
                now, old = utcnow(), self.store.people.get_thread(ns, tid)
                if old is None:
                    thread = Thread(
                        id=tid,
                        namespace=ns,
                        user=user,
                        agent=agent,
                        messages=new,
                        created_at=now,
                        updated_at=now,
                        message_count=len(new),
                    )
                    return self.store.people.upsert_thread(thread)
                for field, given, have in (("user", user, old.user), ("agent", agent, old.agent)):
                    if given is not None and have is not None and given != have:
                        raise ConflictError(f"thread {tid!r} belongs to {field} {have!r}")
                kept = [*old.messages, *new]
                thread = old.model_copy(
                    update={
                        "user": old.user or user,
                        "agent": old.agent or agent,
                        "messages": kept,
                        "message_count": len(kept),
                        "updated_at": now,
                    }
                )
                return self.store.people.upsert_thread(thread)

        return run()

    @threaded
    def delete_threads(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        ns, wanted = self.core.ns(namespace), v.ids(ids, lambda i: v.required(i, "thread"))
        return self.store.people.delete_threads(ns, wanted)

    # ------------------------------------------------------------------ entities
    @threaded
    def list_entities(
        self,
        *,
        namespace: str | None = None,
        type: EntityType | str | None = None,
        query: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Entity]:
        """Most mentioned first; ``query`` matches names and aliases (case-insensitive)."""
        ns, kind, q = self.core.ns(namespace), entity_type(type), v.label(query, "query", 200)
        v.page(limit, offset)
        return self.store.entities.list_entities(ns, type=kind, query=q, limit=limit, offset=offset)

    @threaded
    def count_entities(
        self,
        *,
        namespace: str | None = None,
        type: EntityType | str | None = None,
        query: str | None = None,
    ) -> int:
        ns, kind, q = self.core.ns(namespace), entity_type(type), v.label(query, "query", 200)
        return self.store.entities.count_entities(ns, type=kind, query=q)

    @threaded
    def get_entity(self, entity_id: str, *, namespace: str | None = None) -> Entity:
        ns, eid = self.core.ns(namespace), v.short_ref(entity_id, "entity")
        entity = self.store.entities.get_entity(ns, eid)
        if entity is None:
            raise NotFoundError(
                f"no entity {eid!r} in namespace {ns!r}", hint="list entities to see their ids"
            )
        return entity

    @threaded
    def find_entity(self, name: str, *, namespace: str | None = None) -> Entity | None:
        """By canonical name or alias, case-insensitive."""
        ns, nm = self.core.ns(namespace), v.name(name)
        return self.store.entities.find_entity(ns, nm)

    @threaded
    def save_entity(
        self,
        name: str,
        *,
        namespace: str | None = None,
        type: EntityType | str | None = None,
        aliases: Sequence[str] = (),
        summary: str | None = None,
        attributes: Mapping[str, Any] | None = None,
        entity_id: str | None = None,
    ) -> Entity:
        """Create an entity, or update one.

        With ``entity_id``: an edit (a new name keeps the old one as an alias; ``type``,
        ``summary`` and ``attributes`` replace when given). Without it, a name (or alias)
        that is already known is a re-mention: aliases join, ``mention_count`` + 1,
        ``last_seen`` = now, and the type changes only from the generic ``concept``.
        A new entity's type defaults to ``concept``."""
        ns, nm = self.core.ns(namespace), v.name(name)
        kind = v.enum(EntityType, type, "type") if type is not None else None
        names = v.aliases(aliases, nm)
        text = v.label(summary, "summary", 2000)
        attrs = v.metadata(attributes, "attributes") if attributes is not None else None
        eid = v.short_ref(entity_id, "entity") if entity_id is not None else None

        def write() -> Entity:
            with self.store.exclusive(entities_lock(ns)):  # one name, one entity
                now = utcnow()
                if eid is not None:
                    old = self.store.entities.get_entity(ns, eid)
                    if old is None:
                        raise NotFoundError(f"no entity {eid!r} in namespace {ns!r}")
                    same = self.store.entities.find_entity(ns, nm)
                    if same is not None and same.id != eid and _same(same.canonical_name, nm):
                        raise ConflictError(f"entity {same.id!r} is already called {nm!r}")
                    renamed = [] if _same(old.canonical_name, nm) else [old.canonical_name]
                    entity = old.model_copy(
                        update={
                            "canonical_name": nm,
                            "type": kind or old.type,
                            "aliases": v.aliases([*old.aliases, *renamed, *names], nm),
                            "summary": text if text is not None else old.summary,
                            "attributes": attrs if attrs is not None else old.attributes,
                        }
                    )
                    return self.store.entities.update_entity(entity)
                old = self.store.entities.find_entity(ns, nm)
                if old is None:
                    return self.store.entities.insert_entity(
                        Entity(
                            id=short_id(),
                            namespace=ns,
                            canonical_name=nm,
                            type=kind or EntityType.CONCEPT,
                            aliases=names,
                            summary=text,
                            first_seen=now,
                            last_seen=now,
                            attributes=attrs or {},
                        )
                    )
                generic = old.type is EntityType.CONCEPT
                entity = old.model_copy(
                    update={
                        "aliases": v.aliases([*old.aliases, nm, *names], old.canonical_name),
                        "type": kind if kind is not None and generic else old.type,
                        "summary": text if text is not None else old.summary,
                        "attributes": attrs if attrs is not None else old.attributes,
                        "mention_count": old.mention_count + 1,
                        "last_seen": now,
                    }
                )
                return self.store.entities.update_entity(entity)

        saved = write()
        if saved.summary:  # its profile, findable by meaning (outside the write's lock)
            embed_profiles(self.store, self.core.embedder, ns, [saved])
        return saved

    @threaded
    def delete_entities(self, ids: Sequence[str], *, namespace: str | None = None) -> int:
        """Delete entities and their links to memories; returns how many were deleted."""
        ns, wanted = self.core.ns(namespace), v.ids(ids, lambda i: v.short_ref(i, "entity"))
        return self.store.entities.delete_entities(ns, wanted)

    @threaded
    def link_entities(
        self,
        node_id: str,
        entity_ids: Sequence[str],
        *,
        namespace: str | None = None,
    ) -> None:
        """Link a memory to entities; all must exist in the namespace, or nothing links."""
        ns, mid = self.core.ns(namespace), v.memory_id(node_id)
        wanted = v.ids(entity_ids, lambda i: v.short_ref(i, "entity"))
        if wanted:
            self.store.entities.link_entities(ns, mid, wanted)

    def _resolve_entity(self, ns: str, ref: str) -> Entity:
        entity = self.store.entities.get_entity(ns, ref) if ID_RE.match(ref) else None
        entity = entity or self.store.entities.find_entity(ns, ref)
        if entity is None:
            raise _no_entity(ns, ref)
        return entity

    @threaded
    def entity_info(
        self,
        name_or_id: str,
        *,
        namespace: str | None = None,
        limit: int = 20,
        user: str | None = None,
    ) -> EntityInfo:
        """An entity (by id, name or alias), the current memories that mention it (newest
        first) and the entities mentioned with it (most shared first). ``user`` hides
        other users' memories, and an entity only they mention is not found."""
        ns, ref = self.core.ns(namespace), v.name(name_or_id, "entity")
        lim = v.limit(limit, "limit", 200)
        flt = NodeFilter(namespaces=(ns,), user=self.owners.owner(ns, user))
        entity = self._resolve_entity(ns, ref)
        memories = self.store.entities.entity_nodes(flt, entity.id, limit=lim)
        if flt.user is not None:  # forgotten memories too: they gave its summary and aliases
            anyone = NodeFilter(namespaces=(ns,), include_invalid=True)
            every = self.store.entities.entity_nodes(anyone, entity.id, limit=200)
            mine = replace(flt, include_invalid=True)
            theirs = self.store.entities.entity_nodes(mine, entity.id, limit=200)
            if every and not theirs:
                raise _no_entity(ns, ref)  # only other users' memories mention it
            seen = {m.id for m in theirs}
            if len(every) > len(theirs) or any(m.id not in seen for m in every):
                entity = _as_seen_by(entity, memories)  # others' memories mention it too
                names = [entity.canonical_name, *entity.aliases]
                if entity.id != ref and not any(n.casefold() == ref.casefold() for n in names):
                    raise _no_entity(ns, ref)  # a name only another user's memories give
        related = self.store.entities.related_entities(flt, entity.id, limit=lim)
        return EntityInfo(
            entity=entity,
            memories=memories,
            related=[RelatedEntity(entity=e, weight=n) for e, n in related],
        )

    @threaded
    def entity_graph(
        self,
        entity_id: str,
        *,
        namespace: str | None = None,
        limit: int = 30,
        user: str | None = None,
    ) -> GraphView:
        """A small graph for display: the entity, its current memories and the other
        entities those memories mention, linked ``mentions`` (memory → entity)."""
        ns, lim = self.core.ns(namespace), v.limit(limit, "limit", 200)
        flt = NodeFilter(namespaces=(ns,), user=self.owners.owner(ns, user))
        entity = self.get_entity.now(entity_id, namespace=ns)
        memories = self.store.entities.entity_nodes(flt, entity.id, limit=lim)
        mentioned = self.store.entities.node_entities(ns, [m.id for m in memories])
        view = GraphView(nodes=[_entity_node(entity)])
        shown = {entity.id}
        for m in memories:
            label = m.content if len(m.content) <= 60 else m.content[:59] + "…"
            view.nodes.append(GraphNode(id=m.id, label=label, kind="memory", type=m.type.value))
            for e in mentioned.get(m.id, []):
                if e.id not in shown and len(shown) <= lim:
                    shown.add(e.id)
                    view.nodes.append(_entity_node(e))
                if e.id in shown:
                    view.links.append(GraphLink(source=m.id, target=e.id, relation="mentions"))
        return view

    # ------------------------------------------------------------------ provenance / health
    @threaded
    def explain(self, memory_id: str, *, namespace: str | None = None) -> Explanation:
        """Where a memory comes from: its versions, the older memories it replaced (newest
        first, following ``supersedes`` edges new → old), the memory that replaced it, the
        episodes it was ``derived_from`` (edge fact → episode), its entities and edges."""
        ns, mid = self.core.ns(namespace), v.memory_id(memory_id)
        memory = self.core.node(ns, mid)

        edges = self.store.memories.edges(ns, mid)
        older: list[str] = []
        queue = [mid]
        while queue and len(older) < CHAIN_MAX:
            node = queue.pop(0)
            links = edges if node == mid else self.store.memories.edges(ns, node, "supersedes")
            fresh = [i for i in _ends(links, EdgeType.SUPERSEDES, node) if i not in older]
            older += [i for i in fresh if i != mid]
            queue += fresh
        newer = _ends(edges, EdgeType.SUPERSEDES, mid, outgoing=False)
        sources = _ends(edges, EdgeType.DERIVED_FROM, mid)
        by_newest = self.store.memories.get_nodes(ns, newer)
        by_newest.sort(key=lambda n: n.created_at, reverse=True)
        return Explanation(
            memory=memory,
            versions=self.store.memories.versions(ns, mid),
            supersedes=self.store.memories.get_nodes(ns, older),
            superseded_by=by_newest[0] if by_newest else None,
            sources=self.store.memories.get_nodes(ns, sources),
            entities=self.store.entities.node_entities(ns, [mid])[mid],
            edges=edges,
        )

    @threaded
    def weak_facts(
        self,
        *,
        namespace: str | None = None,
        user: str | None = None,
        limit: int = 20,
        threshold: float = 0.3,
        now: datetime | None = None,
    ) -> list[tuple[MemoryNode, float]]:
        """Current facts and opinions (visible to ``user``, if given) whose retention
        (see :func:`memloci.decay.retention`) is below ``threshold``, weakest first.
        Protected facts (decay rate 0) are never weak. ``now``: when to judge (default
        now)."""
        ns, lim = self.core.ns(namespace), v.limit(limit, "limit", 1000)
        thr = v.unit(threshold, "threshold")
        owner = self.owners.owner(ns, user)
        flt = NodeFilter(namespaces=(ns,), types=FACT_TYPES, user=owner)

        def facts() -> Iterator[MemoryNode]:
            offset = 0
            while page := self.store.memories.list_nodes(
                flt, limit=1000, offset=offset, order="rowid"
            ):
                offset += len(page)
                yield from page

        def curves() -> dict[str, tuple[float | None, datetime | None]]:
            out: dict[str, tuple[float | None, datetime | None]] = {}
            for kind in FACT_TYPES:  # maintenance's recorded decay curves (none: not run yet)
                after = 0
                while page := self.store.jobs.decay_candidates(ns, kind, after=after, limit=1000):
                    after = page[-1].cursor
                    out.update((c.node.id, (c.base, c.anchor)) for c in page if c.base is not None)
            return out

        return weakest(facts(), now or utcnow(), limit=lim, threshold=thr, curves=curves())


def entity_type(value: EntityType | str | None) -> str | None:
    """An entity type filter, checked: its value, or None for every type."""
    return None if value is None else v.enum(EntityType, value, "type").value


def _ends(
    edges: Sequence[Edge], relation: EdgeType, node_id: str, *, outgoing: bool = True
) -> list[str]:
    """The other ends of the ``relation`` edges leaving (or entering) ``node_id``."""
    if outgoing:
        return [e.target_id for e in edges if e.relation is relation and e.source_id == node_id]
    return [e.source_id for e in edges if e.relation is relation and e.target_id == node_id]


def _same(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def _entity_node(entity: Entity) -> GraphNode:
    return GraphNode(
        id=entity.id, label=entity.canonical_name, kind="entity", type=entity.type.value
    )


def _as_seen_by(entity: Entity, memories: list[MemoryNode]) -> Entity:
    """``entity`` as a caller who sees only ``memories`` may see it, when other users'
    memories mention it too: its summary (drawn from every user's facts) left out, only
    the aliases those memories use, and as many mentions as they hold."""
    aliases = names_in_use(entity.aliases, (m.content for m in memories))
    return entity.model_copy(
        update={"summary": None, "aliases": aliases, "mention_count": len(memories)}
    )


def _no_entity(ns: str, ref: str) -> NotFoundError:
    return NotFoundError(
        f"no entity {ref!r} in namespace {ns!r}",
        hint="check the spelling, or list entities to see the known names",
    )
