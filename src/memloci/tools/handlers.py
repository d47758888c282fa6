"""Agent tool handlers (layer: tools): validated arguments → service call → result text.

Each handler gets the caller's :class:`Bound` identity (namespace, user, agent, session)
fixed by the host application, never by the model, and returns a short message.
Errors are raised as :class:`~memloci.errors.MemlociError`; the dispatcher turns them
into ``Error: …`` texts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from memloci.errors import NotFoundError, PermissionDeniedError
from memloci.models import (
    EpisodeDetails,
    MemoryNode,
    NodeFilter,
    NodeType,
    ProcedureType,
    SearchHit,
    WriteResult,
)
from memloci.service import MemoryService
from memloci.tools import render as r
from memloci.tools.args import (
    AddToMemoryArgs,
    CorrectFactArgs,
    EntityInfoArgs,
    LearnProcedureArgs,
    ListMemoriesArgs,
    MemoryIdArgs,
    NoArgs,
    RecallArgs,
    RecordEpisodeArgs,
    RecordProcedureUseArgs,
    RememberArgs,
    SearchMemoryArgs,
    UpdateMemoryArgs,
    WeakFactsArgs,
    kind_types,
)

FIND_IDS = "use recall or list_memories to find memory ids"
SHOWN = 10  # versions, linked memories, entities explain_fact lists: a result must fit a prompt


def change_refused(
    node: MemoryNode, *, user: str | None, agent: str | None
) -> PermissionDeniedError | None:
    """Why a caller bound to ``user`` / ``agent`` may read ``node`` but not change it
    (None: they may): another agent's memory in a shared namespace, or, for a caller
    bound to a user, a memory every user shares (no owner user)."""
    if agent is not None and node.agent not in (None, agent):
        return PermissionDeniedError(
            f"memory {node.id} belongs to agent {node.agent!r}: you can read it, not change it"
        )
    if user is not None and node.user != user:  # every user reads it
        return PermissionDeniedError(
            f"memory {node.id} is shared with every user ({node.scope.value} scope): you "
            "can read it, not change it",
            hint="store what this user says with remember; it then holds for them",
        )
    return None


@dataclass(frozen=True)
class Bound:
    """Who is calling: applied to every tool call, whatever the arguments say."""

    service: MemoryService
    namespace: str
    user: str | None = None
    agent: str | None = None
    session: str | None = None

    types: tuple[NodeType, ...] | None = None  # the memory tiers this caller may use

    def filter(self, **kwargs: Any) -> NodeFilter:
        """What this caller may see (their memories and shared ones, of its tiers),
        narrowed by ``kwargs``."""
        flt = self.service.filter(
            namespace=self.namespace,
            user=self.user,
            agent=self.agent,
            session=self.session,
            **kwargs,
        )
        if self.types is None:
            return flt
        allowed = tuple(t for t in (flt.types or self.types) if t in self.types)
        return replace(flt, types=allowed) if allowed else replace(flt, ids=())

    def may_store(self, kind: NodeType) -> None:
        """Refuse a write to a memory tier this caller may not use (its ``types``)."""
        if self.types is not None and kind not in self.types:
            raise PermissionDeniedError(
                f"this memory has no {kind.value} tier for you: nothing was stored",
                hint=f"it holds {', '.join(t.value for t in self.types)} memories",
            )

    async def remember(self, text: str, **options: Any) -> WriteResult:
        """Store a fact as this caller (its namespace, user, agent and session) through
        the service's ``remember``; refused when the caller has no fact tier."""
        self.may_store(NodeType.SEMANTIC)
        return await self.service.memories.remember(
            text,
            namespace=self.namespace,
            user=self.user,
            agent=self.agent,
            session=self.session,
            **options,
        )

    async def writable(self, memory_id: str) -> MemoryNode:
        """The memory, if this caller may change it: another agent's memories in a
        shared namespace, and for a caller bound to a user the memories every user shares
        (no owner user), can be read, not changed."""
        node = await self.node(memory_id)
        refused = change_refused(node, user=self.user, agent=self.agent)
        if refused is not None:
            raise refused
        return node

    async def node(self, memory_id: str) -> MemoryNode:
        """The memory, if this caller may see it (forgotten ones included)."""
        flt = replace(self.filter(include_forgotten=True), ids=(memory_id,))
        found = await self.service.memories.list_nodes(flt, limit=1)
        if not found:
            raise NotFoundError(f"no memory with id {memory_id!r}", hint=FIND_IDS)
        return found[0]

    async def visible(self, nodes: Iterable[MemoryNode]) -> set[str]:
        """The ids among ``nodes`` this caller may see."""
        ids = tuple(dict.fromkeys(n.id for n in nodes))
        if not ids:
            return set()
        flt = replace(self.filter(include_forgotten=True), ids=ids)
        return {n.id for n in await self.service.memories.list_nodes(flt, limit=len(ids))}


async def _shown(b: Bound, flt: NodeFilter, nodes: list[MemoryNode], limit: int) -> str:
    """``3 memories`` or, when the list was cut, ``20 of 57 memories``."""
    total = await b.service.memories.count(flt) if len(nodes) >= limit else len(nodes)
    if total > len(nodes):
        return f"{len(nodes)} of {r.count(total)}"
    return r.count(len(nodes))


def _hits(hits: list[SearchHit]) -> str:
    return r.lines(h.memory for h in hits)


# ---------------------------------------------------------------------------- reading


async def recall(b: Bound, a: RecallArgs) -> str:
    """No query or key → list facts, highest confidence first; ``key`` →
    exact, then fuzzy; ``query`` → search.

    Defaults: facts, ``min_confidence`` 0.5, 10 results; ``top_k`` / ``memory_types``
    are other spellings of the same options, accepted so that either works."""
    limit, conf = a.count, a.min_confidence
    if a.key is not None:
        node = await b.service.memories.lookup(
            a.key, namespace=b.namespace, user=b.user, agent=b.agent, session=b.session
        )
        if node is not None and b.types is not None and node.type not in b.types:
            node = None  # a tier this caller may not use
        if node is not None and node.confidence >= conf:
            return f"{a.key} → {r.line(node)}"
        if node is not None and a.query is None:  # stored, but faded: never "nothing"
            return (
                f"The fact under the key {a.key!r} has faded below confidence {conf:.2f} "
                f"(now {node.confidence:.2f}). Pass min_confidence=0 to see it, then check "
                "it with the user."
            )
        flt = b.filter(type=a.types(), min_confidence=conf)
        hits = await b.service.memories.search(a.key, flt, k=limit)
        by_key = [h for h in hits if "key" in h.strategies]
        if by_key:
            return f"No fact has exactly the key {a.key!r}. Closest keys:\n{_hits(by_key)}"
        if a.query is None:
            hits = [h for h in hits if "fulltext" in h.strategies]  # words, not vector noise
            if hits:
                return f"No fact has the key {a.key!r}. Related memories:\n{_hits(hits)}"
            return f"Nothing is stored under the key {a.key!r}."
    if a.query is not None:
        flt = b.filter(type=a.types(), min_confidence=conf, **_when(a))
        if isinstance(a, SearchMemoryArgs) and a.entity_name is not None:
            ids = await _entity_ids(b, a.entity_name)
            if not ids:
                return f"Nothing is known about {a.entity_name!r}."
            flt = replace(flt, ids=ids)
        hits = await b.service.memories.search(a.query, flt, k=limit)
        if not hits:
            return f"No memories match {a.query!r}{await _weaker(b, a.query, flt, limit)}."
        threshold = b.service.settings.relevance_threshold
        text = r.scored(hits, threshold)
        if all(h.score < threshold for h in hits):
            text = f"None of them scores as an answer (below {threshold:.2f}):\n\n{text}"
        return f"{r.count(len(hits))} for {a.query!r} (best first):\n\n{text}"
    flt = b.filter(type=a.types(), min_confidence=conf, **_when(a))
    nodes = await b.service.memories.list_nodes(flt, limit=limit, order="-confidence")
    if not nodes:
        weaker = await b.service.memories.count(replace(flt, min_confidence=None))
        if weaker:
            return (
                f"No memories at confidence {conf:.2f} or more; {r.count(weaker)} below it "
                "(pass min_confidence=0 to see them)."
            )
        return "No memories match those filters." if a.memory_type else "No memories stored yet."
    return f"{await _shown(b, flt, nodes, limit)}, highest confidence first:\n{r.lines(nodes)}"


async def _weaker(b: Bound, query: str, flt: NodeFilter, limit: int) -> str:
    """`` at confidence 0.50 or more; 2 memories below it do (…)`` when faded facts
    match ``query`` by its words (not by vector nearness: that finds something always)."""
    if not flt.min_confidence:
        return ""
    # a look the model is not shown: the faded facts it finds are not reinforced
    hits = await b.service.memories.search(
        query, replace(flt, min_confidence=None), k=limit, reinforce=False
    )
    faded = [h for h in hits if h.memory.confidence < flt.min_confidence]
    if not (faded := [h for h in faded if {"fulltext", "key"} & set(h.strategies)]):
        return ""
    return (
        f" at confidence {flt.min_confidence:.2f} or more; {r.count(len(faded))} below it "
        f"{'does' if len(faded) == 1 else 'do'} (pass min_confidence=0 to see "
        f"{'it' if len(faded) == 1 else 'them'}, then check with the user)"
    )


def _when(a: RecallArgs) -> dict[str, Any]:
    if not isinstance(a, SearchMemoryArgs):
        return {}
    return {k: getattr(a, k) for k in ("after", "before") if getattr(a, k) is not None}


async def _entity_ids(b: Bound, name: str) -> tuple[str, ...]:
    """The ids of the memories this caller may see that mention the entity ``name``."""
    try:
        info = await b.service.records.entity_info(
            name, namespace=b.namespace, limit=200, user=b.user
        )
    except NotFoundError:
        return ()
    return tuple(sorted(await b.visible(info.memories)))


async def list_memories(b: Bound, a: ListMemoriesArgs) -> str:
    """Every type unless ``memory_type`` narrows it, newest first, as
    ``[semantic:preferences] (time) [id:…] text`` lines."""
    flt = b.filter(type=kind_types(a.memory_type, default="all"), category=a.category)
    nodes = await b.service.memories.list_nodes(flt, limit=a.limit, order="-created")
    kinds = a.memory_type or "all types"
    what = kinds if a.category is None else f"{kinds} in category {a.category!r}"
    if not nodes:
        return f"No memories ({what})."
    return f"{await _shown(b, flt, nodes, a.limit)} ({what}), newest first:\n{r.listed(nodes)}"


async def get_entity_info(b: Bound, a: EntityInfoArgs) -> str:
    info = await b.service.records.entity_info(
        a.name, namespace=b.namespace, limit=a.limit, user=b.user
    )
    e = info.entity
    head = f"{e.canonical_name} ({e.type.value}), mentioned {e.mention_count}x"
    out = [head]
    if e.aliases:
        out.append("Also called: " + ", ".join(e.aliases))
    if e.summary:
        out.append(f"Summary: {e.summary}")
    seen = await b.visible(info.memories)
    memories = [m for m in info.memories if m.id in seen]
    out.append(f"Memories:\n{r.lines(memories)}" if memories else "No memories mention it.")
    if info.related:
        related = ", ".join(
            f"{x.entity.canonical_name} ({x.entity.type.value}, {x.weight:g} shared)"
            for x in info.related
        )
        out.append(f"Related: {related}")
    return "\n".join(out)


async def explain_fact(b: Bound, a: MemoryIdArgs) -> str:
    node = await b.node(a.memory_id)
    ex = await b.service.records.explain(node.id, namespace=b.namespace)
    m = ex.memory
    out = [
        r.line(m),
        f"Version {m.version}, confidence {m.confidence:.2f}, confirmed {m.times_confirmed}x, "
        f"contradicted {m.times_contradicted}x; source {m.source_type.value}; "
        f"recorded {m.created_at:%Y-%m-%d %H:%M} UTC.",
    ]
    if len(ex.versions) > 1:
        shown = ex.versions[-SHOWN:]  # the newest; a rewritten key has hundreds
        out.append(
            "History:"
            if len(shown) == len(ex.versions)
            else f"History (the last {len(shown)} of {len(ex.versions)} versions):"
        )
        out += [f"  v{x.version} {x.created_at:%Y-%m-%d}: {r.quote(x.content)}" for x in shown]
    linked = [*ex.supersedes, *ex.sources, *([ex.superseded_by] if ex.superseded_by else [])]
    seen = await b.visible(linked)
    if supersedes := [n for n in ex.supersedes if n.id in seen]:
        out.append(f"Replaces:\n{_some(supersedes, 'older memories')}")
    if ex.superseded_by is not None and ex.superseded_by.id in seen:
        out.append(f"Replaced by: {r.line(ex.superseded_by)}")
    if sources := [n for n in ex.sources if n.id in seen]:
        out.append(f"Learned from:\n{_some(sources, 'sources')}")
    if ex.entities:
        names = [f"{e.canonical_name} ({e.type.value})" for e in ex.entities[:SHOWN]]
        more = len(ex.entities) - len(names)
        out.append(f"About: {', '.join(names)}{f' and {more} more' if more else ''}")
    return "\n".join(out)


def _some(nodes: list[MemoryNode], noun: str) -> str:
    """The first :data:`SHOWN` of ``nodes`` as lines, and how many more there are."""
    more = len(nodes) - SHOWN
    return r.lines(nodes[:SHOWN]) + (f"\n({more} more {noun} not shown)" if more > 0 else "")


async def memory_stats(b: Bound, a: NoArgs) -> str:
    if (b.user, b.agent, b.session, b.types) != (None, None, None, None):
        return await _visible_stats(b)
    s = await b.service.memories.stats([b.namespace])
    current = ", ".join(f"{n} {t}" for t, n in sorted(s.current_by_type.items())) or "none"
    total = sum(s.nodes_by_type.values())
    out = [
        f"Memory in namespace {b.namespace!r}: {current} current ({total} including forgotten).",
        f"{s.entities} entities, {sum(s.edges_by_type.values())} links, {s.users} users; "
        f"{s.pending_embeddings} waiting to be embedded.",
    ]
    if s.edges_by_type:
        out.append(
            "Links by type: "
            + ", ".join(f"{n} {t}" for t, n in sorted(s.edges_by_type.items()))
            + "."
        )
    out.append(f"Storage size: {_size(s.size_bytes)}.")
    if s.orphans:
        out.append(f"{r.count(s.orphans, 'fact is', 'facts are')} not linked to anything yet.")
    out.append(
        f"Last maintenance: {s.last_maintenance:%Y-%m-%d %H:%M} UTC."
        if s.last_maintenance is not None
        else "Maintenance has not run yet."
    )
    return "\n".join(out)


async def _visible_stats(b: Bound) -> str:
    """A bound caller's view: only what it may see (its memories and shared ones), never
    namespace-wide figures that count other users' memories."""
    s = await b.service.memories.visible_stats(b.filter())
    who = ", ".join(
        f"{kind} {name!r}"
        for kind, name in (("user", b.user), ("agent", b.agent), ("session", b.session))
        if name is not None
    )
    current = ", ".join(f"{n} {t}" for t, n in sorted(s.current_by_type.items())) or "none"
    total = sum(s.nodes_by_type.values())
    return (
        f"Memory you can see in namespace {b.namespace!r}{f' (as {who})' if who else ''}: "
        f"{current} current ({total} including forgotten); "
        f"{r.count(s.entities, 'entity', 'entities')} mentioned in them."
    )


def _size(n: int) -> str:
    """``812 bytes``, ``3.4 MB``."""
    size, unit = float(n), "bytes"
    for bigger in ("KB", "MB", "GB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"


async def weak_facts(b: Bound, a: WeakFactsArgs) -> str:
    pairs = await b.service.records.weak_facts(
        namespace=b.namespace, user=b.user, limit=a.limit, threshold=a.threshold
    )
    seen = await b.visible(n for n, _ in pairs)
    pairs = [(n, c) for n, c in pairs if n.id in seen]
    if not pairs:
        return f"No facts are below confidence {a.threshold:.2f}."
    shown = "\n".join(f"- {r.line(n, confidence=c)}" for n, c in pairs)
    return (
        f"{r.count(len(pairs), 'fact', 'facts')} below confidence {a.threshold:.2f} "
        f"(weakest first). Ask the user, then confirm_fact, correct_fact or forget them:\n{shown}"
    )


# ---------------------------------------------------------------------------- writing


async def remember(b: Bound, a: RememberArgs) -> str:
    result = await b.remember(
        a.text,
        key=a.key,
        value=a.value,
        category=a.category,
        subject=a.subject,
        fact_type=a.fact_type,
        overwrite=a.overwrite,
    )
    if a.content is None:  # a key/value: "Remembered: color = blue (created)"
        if result.action == "exists":  # the model must not read that red was stored
            held = result.memory.content
            return f"Not changed: {held} (exists; overwrite is false) {r.ref(result.memory)}"
        where = f"category: {result.memory.category}"
        return f"Remembered: {a.text} ({result.action}) {r.ref(result.memory)} ({where})"
    previous = None
    if result.action == "updated":
        versions = await b.service.memories.history(result.memory.id, namespace=b.namespace)
        before = result.memory.version - 1
        previous = next((x.content for x in versions if x.version == before), None)
    return r.write(result, previous=previous)


async def add_to_memory(b: Bound, a: AddToMemoryArgs) -> str:
    result = await b.remember(
        a.content, category=a.category, subject=a.subject, suggest_on_subject=True
    )
    return r.write(result)


async def update_memory(b: Bound, a: UpdateMemoryArgs) -> str:
    old = await b.writable(a.memory_id)
    result = await b.service.edits.update(
        old.id, a.content, namespace=b.namespace, session=b.session
    )
    if result.memory.version == old.version:
        return f"No change: {r.ref(old)} already says {r.quote(old.content)}."
    return r.write(result, previous=old.content)


async def correct_fact(b: Bound, a: CorrectFactArgs) -> str:
    old = await b.writable(a.memory_id)
    if a.content.split() == old.content.split():  # nothing to correct: no new fact
        return f"No change: {r.ref(old)} already says {r.quote(old.content)}."
    new = (await b.service.edits.correct(old.id, a.content, namespace=b.namespace)).memory
    return (
        f"Corrected: {r.ref(new)} replaces {r.ref(old)}: {r.quote(old.content)} → "
        f"{r.quote(new.content)}. The old fact is kept in the history but no longer current."
    )


async def confirm_fact(b: Bound, a: MemoryIdArgs) -> str:
    node = (
        await b.service.edits.confirm((await b.writable(a.memory_id)).id, namespace=b.namespace)
    ).memory
    return (
        f"Confirmed {r.ref(node)}: {r.quote(node.content)} (confidence {node.confidence:.2f}, "
        f"confirmed {node.times_confirmed}x; it no longer fades)."
    )


async def forget(b: Bound, a: MemoryIdArgs) -> str:
    result = await b.service.edits.forget((await b.writable(a.memory_id)).id, namespace=b.namespace)
    node = result.memory
    if result.action == "unchanged":
        return f"{r.ref(node)} was already forgotten: {r.quote(node.content)}."
    return f"Forgot {r.ref(node)}: {r.quote(node.content)}."


async def learn_procedure(b: Bound, a: LearnProcedureArgs) -> str:
    b.may_store(NodeType.PROCEDURAL)
    result = await b.service.memories.learn_procedure(
        a.content,
        namespace=b.namespace,
        category=a.category or "procedure",
        triggers={"goal_contains": a.triggers} if a.triggers else None,
        procedure_type=a.procedure_type or ProcedureType.WORKFLOW_GRAPH,
        user=b.user,
        agent=b.agent,
    )
    return r.write(result)


async def record_procedure_use(b: Bound, a: RecordProcedureUseArgs) -> str:
    """Count one use of a procedure this caller may see, with its outcome and duration."""
    node = await b.node(a.memory_id)
    if node.type is not NodeType.PROCEDURAL:
        raise NotFoundError(
            f"{r.ref(node)} is a {node.type.value} memory, not a procedure",
            hint="recall with memory_type 'procedures' lists the procedures",
        )
    done = await b.service.memories.record_procedure_use(
        node.id, namespace=b.namespace, success=a.success, duration_ms=a.duration_ms
    )
    return f"Recorded a use of {r.ref(done)}: {r.procedure_record(done)}."


async def record_episode(b: Bound, a: RecordEpisodeArgs) -> str:
    b.may_store(NodeType.EPISODIC)
    outcome: dict[str, Any] = {}
    if a.outcome is not None:
        outcome["success"] = a.outcome == "success"
    if a.error is not None:
        outcome["error"] = a.error
    details = None
    if outcome or a.duration_ms is not None:
        details = EpisodeDetails(outcome=outcome or None, duration_ms=a.duration_ms)
    result = await b.service.memories.record_episode(
        a.content,
        namespace=b.namespace,
        user=b.user,
        agent=b.agent,
        session=b.session,
        details=details,
        category=a.category,
    )
    return r.write(result)
