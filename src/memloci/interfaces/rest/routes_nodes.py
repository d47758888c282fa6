"""REST routes for memories (layer: interfaces): facts, episodes, procedures, search,
context, provenance, stats and export/import under ``/api/v1``.

Each route validates access to its namespace (deps), calls one service method
and returns its result; nothing here touches storage.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from enum import Enum
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, status
from fastapi.responses import StreamingResponse

from memloci import validate as v
from memloci.consolidation.maintenance import MaintenanceReport
from memloci.errors import NotFoundError, ValidationError
from memloci.interfaces.rest import schemas as s
from memloci.interfaces.rest.deps import (
    Caller,
    CallerDep,
    NamespaceQuery,
    ReadNS,
    Service,
    WriteNS,
)
from memloci.models import (
    NODE_ORDERS,
    ContextReport,
    MemoryNode,
    NodeFilter,
    NodeType,
    SearchHit,
    StoreStats,
    WriteResult,
)
from memloci.service import MemoryService

router = APIRouter(prefix="/api/v1")

KINDS: dict[str, tuple[NodeType, ...]] = {
    "facts": (NodeType.SEMANTIC, NodeType.OPINION),
    "episodes": (NodeType.EPISODIC,),
    "procedures": (NodeType.PROCEDURAL,),
}
Many = Annotated[list[str] | None, Query()]


async def _node_of_kind(service: MemoryService, ns: str, mid: str, kind: str) -> MemoryNode:
    node = await service.memories.get(mid, namespace=ns)
    if node.type not in KINDS[kind]:
        raise NotFoundError(
            f"{mid!r} is a {node.type.value} memory, not one of the {kind}",
            hint=f"use /api/v1/{_kind_of(node.type)}/{mid}",
        )
    return node


def _kind_of(t: NodeType) -> str:
    return next(k for k, types in KINDS.items() if t in types)


def _register(kind: str) -> None:
    types = KINDS[kind]
    tag: list[str | Enum] = [kind]

    @router.get(f"/{kind}/", tags=tag, summary=f"List {kind}")
    async def list_kind(
        service: Service,
        ns: ReadNS,
        user: str | None = Query(
            None, description="the reader: their memories plus shared (wider-scope) ones"
        ),
        agent: str | None = Query(None, description="the reader's agent (as user)"),
        session: str | None = Query(
            None, description="the reader's session: its memories plus wider-scope ones"
        ),
        owner: str | None = Query(None, description="only memories recorded for this user"),
        in_session: str | None = Query(None, description="only memories recorded in this session"),
        category: Many = None,
        scope: Many = None,
        type: Many = None,
        after: str | None = Query(None, description=s.TIME_DOC),
        before: str | None = Query(None, description=s.TIME_DOC),
        min_confidence: float | None = None,
        include_forgotten: bool = Query(False, description="also list soft-deleted ones"),
        order: str = Query("-created", description="one of " + ", ".join(NODE_ORDERS)),
        limit: int = Query(50, description="1–10,000"),
        offset: int = Query(0, description=s.OFFSET_DOC),
        cursor: str | None = Query(None, description=s.CURSOR_DOC),
    ) -> s.Page[MemoryNode]:
        if type:
            wanted = [t for t in type if t in {x.value for x in types}]
            if len(wanted) != len(type):
                raise ValidationError(f"type must be one of {[t.value for t in types]} for {kind}")
        flt = service.filter(
            namespace=ns,
            user=user,
            agent=agent,
            session=session,
            owner_user=owner,
            sessions=None if in_session is None else [in_session],
            category=category,
            scope=scope,
            type=type or list(types),
            after=s.time_bound(after, "after"),
            before=s.time_bound(before, "before"),
            min_confidence=min_confidence,
            include_forgotten=include_forgotten,
        )
        page = await service.paging.page_nodes(
            flt, limit=limit, offset=offset, order=order, cursor=cursor
        )
        return s.Page[MemoryNode](
            items=page.items,
            total=page.total,
            limit=limit,
            offset=offset,
            next_cursor=page.next_cursor,
        )

    @router.get(f"/{kind}/{{memory_id}}", tags=tag, summary=f"Get one of the {kind}")
    async def get_kind(memory_id: str, service: Service, ns: ReadNS) -> s.MemoryDetail:
        node = await _node_of_kind(service, ns, memory_id, kind)
        return s.MemoryDetail(
            memory=node, versions=await service.memories.history(node.id, namespace=ns)
        )

    @router.patch(f"/{kind}/{{memory_id}}", tags=tag, summary="Update in place (new version)")
    async def update_kind(
        memory_id: str, body: s.NodeUpdate, service: Service, ns: WriteNS
    ) -> WriteResult:
        await _node_of_kind(service, ns, memory_id, kind)
        fields = body.model_fields_set
        if not fields:
            raise ValidationError("nothing to update", hint="send content, category, …")
        return await service.edits.update(
            memory_id,
            body.content,
            namespace=ns,
            value=body.value,
            set_value="value" in fields,
            category=body.category,
            subject=body.subject,
            metadata=body.metadata,
        )

    @router.delete(f"/{kind}/{{memory_id}}", tags=tag, summary="Delete (soft by default)")
    async def delete_kind(
        memory_id: str,
        service: Service,
        ns: WriteNS,
        hard: bool = Query(False, description="purge it and its history"),
    ) -> s.Deleted:
        await _node_of_kind(service, ns, memory_id, kind)
        await service.admin.forget_many([memory_id], namespace=ns, types=types, hard=hard)
        return s.Deleted(id=memory_id, hard=hard)

    @router.post(f"/{kind}/batch-delete/", tags=tag, summary=f"Delete several {kind}")
    async def batch_delete_kind(
        body: s.BatchDelete, service: Service, ns: WriteNS
    ) -> s.BatchDeleted:
        ids = await service.admin.forget_many(body.ids, namespace=ns, types=types, hard=body.hard)
        return s.BatchDeleted(deleted=len(ids), ids=ids)


for _kind in KINDS:
    _register(_kind)


@router.post("/facts/", tags=["facts"], status_code=status.HTTP_201_CREATED)
async def create_fact(body: s.FactCreate, service: Service, ns: WriteNS) -> WriteResult:
    """Remember a fact: a duplicate confirms the existing one, a known key updates it."""
    return await service.memories.remember(namespace=ns, **body.model_dump())


@router.post("/facts/{memory_id}/correct", tags=["facts"])
async def correct_fact(
    memory_id: str, body: s.Correction, service: Service, ns: WriteNS
) -> WriteResult:
    """Replace a wrong fact: the new one supersedes it; both stay in the history."""
    await _node_of_kind(service, ns, memory_id, "facts")
    return await service.edits.correct(memory_id, body.content, namespace=ns, value=body.value)


@router.post("/facts/{memory_id}/confirm", tags=["facts"])
async def confirm_fact(memory_id: str, service: Service, ns: WriteNS) -> WriteResult:
    await _node_of_kind(service, ns, memory_id, "facts")
    return await service.edits.confirm(memory_id, namespace=ns)


@router.post("/episodes/", tags=["episodes"], status_code=status.HTTP_201_CREATED)
async def create_episode(body: s.EpisodeCreate, service: Service, ns: WriteNS) -> WriteResult:
    return await service.memories.record_episode(namespace=ns, **body.model_dump())


@router.post("/turns/", tags=["episodes"], status_code=status.HTTP_201_CREATED)
async def add_turns(body: s.TurnsCreate, service: Service, ns: WriteNS) -> list[MemoryNode]:
    """The hot path: store conversation turns as episodes (system prompts are dropped)."""
    data = body.model_dump()
    return await service.memories.add(data.pop("messages"), namespace=ns, **data)


@router.post("/procedures/", tags=["procedures"], status_code=status.HTTP_201_CREATED)
async def create_procedure(body: s.ProcedureCreate, service: Service, ns: WriteNS) -> WriteResult:
    data = body.model_dump(exclude_none=True)
    return await service.memories.learn_procedure(data.pop("content"), namespace=ns, **data)


@router.post("/procedures/{memory_id}/uses", tags=["procedures"])
async def record_procedure_use(
    memory_id: str, body: s.ProcedureUse, service: Service, ns: WriteNS
) -> MemoryNode:
    """Count one use of a procedure, with its outcome and duration when known; answers
    the procedure with its track record (``procedure.times_used``, ``success_rate``,
    ``avg_duration_ms``)."""
    node = await _node_of_kind(service, ns, memory_id, "procedures")
    return await service.memories.record_procedure_use(
        node.id, namespace=ns, success=body.success, duration_ms=body.duration_ms
    )


# ---------------------------------------------------------------- any memory
@router.get("/memories/{memory_id}/history", tags=["memories"])
async def history(memory_id: str, service: Service, ns: ReadNS) -> s.MemoryDetail:
    node = await service.memories.get(memory_id, namespace=ns)
    return s.MemoryDetail(
        memory=node, versions=await service.memories.history(memory_id, namespace=ns)
    )


@router.get("/memories/{memory_id}/explain", tags=["memories"])
async def explain(memory_id: str, service: Service, ns: ReadNS) -> Any:
    """Provenance: versions, what it supersedes, source episodes, linked entities."""
    return await service.records.explain(memory_id, namespace=ns)


# ---------------------------------------------------------------- search and context
def _search_filter(
    service: MemoryService, body: s.SearchRequest, namespace: str | None, caller: Caller
) -> Any:
    """The search's filter. ``namespaces`` in the body name what is read (each must be
    readable); then the server's default namespace is not read and needs no permission,
    but a ``?namespace`` the caller gave is still checked."""
    ns = service.settings.namespace if namespace is None else namespace
    if namespace is not None or not body.namespaces:
        ns = caller.check(ns, write=False)
    nss = [caller.check(n, write=False) for n in body.namespaces] if body.namespaces else [ns]
    return service.filter(
        namespace=nss,
        user=body.user,
        agent=body.agent,
        session=body.session,
        owner_user=body.owner,
        sessions=None if body.in_session is None else [body.in_session],
        type=body.type,
        category=body.category,
        scope=body.scope,
        after=s.time_bound(body.after, "after"),
        before=s.time_bound(body.before, "before"),
        min_confidence=body.min_confidence,
        as_of=body.as_of,
    )


@router.post("/search", tags=["search"])
async def search(
    body: s.SearchRequest, service: Service, caller: CallerDep, namespace: NamespaceQuery = None
) -> s.SearchResponse:
    """Hybrid search (full text + vectors + key), fused by weighted RRF; ``namespaces``
    searches several namespaces (each readable by the caller) instead of ``?namespace``."""
    flt = _search_filter(service, body, namespace, caller)
    hits: list[SearchHit] = await service.memories.search(
        body.query, flt, k=body.k, recipe=body.recipe
    )
    return s.SearchResponse(query=body.query, hits=hits)


@router.get("/search", tags=["search"], summary="Search (query-string form)")
async def search_get(
    service: Service,
    caller: CallerDep,
    namespace: NamespaceQuery = None,
    q: str = Query(description="the query"),
    user: str | None = None,
    type: Many = None,
    category: Many = None,
    k: int = 10,
) -> s.SearchResponse:
    body = s.SearchRequest(query=q, user=user, type=type, category=category, k=k)
    return await search(body, service, caller, namespace)


def _context_filter(service: MemoryService, body: s.ContextRequest, ns: str) -> NodeFilter:
    """The reader a context is composed for: the namespace, then the user, agent and
    session of the body (their memories plus shared, wider-scope ones)."""
    return service.filter(namespace=ns, user=body.user, agent=body.agent, session=body.session)


@router.post("/context", tags=["search"])
async def context(body: s.ContextRequest, service: Service, ns: ReadNS) -> s.ContextResponse:
    """The deterministic, token-budgeted memory block for a system prompt."""
    from memloci.context import estimate_tokens

    flt = _context_filter(service, body, ns)
    text = await service.context.context(body.prompt, flt, budget=body.budget)
    return s.ContextResponse(context=text, tokens=estimate_tokens(text))


@router.post("/context/report", tags=["search"])
async def context_report(body: s.ContextRequest, service: Service, ns: ReadNS) -> ContextReport:
    """The same block as ``/context``, with how it was composed: the budget and the
    tokens used, the relevance threshold, each section (cacheable or not) with its
    tokens and items (lines, memory ids, score, tokens, why), and the search hits left
    out for scoring below the threshold (the web UI's Context tab shows it)."""
    flt = _context_filter(service, body, ns)
    return await service.context.context_report(body.prompt, flt, budget=body.budget)


@router.get("/stats", tags=["server"])
async def stats(service: Service, ns: ReadNS) -> StoreStats:
    return await service.memories.stats([ns])


@router.get("/namespaces", tags=["server"])
async def namespaces(service: Service, caller: CallerDep) -> list[str]:
    """Namespaces that hold memories and that the caller's key may read."""
    found = await service.admin.namespaces()
    return [ns for ns in found if caller.key is None or caller.key.allows(ns, False)]


@router.post("/maintain", tags=["server"])
async def maintain(service: Service, caller: CallerDep) -> MaintenanceReport:
    """Run maintenance now (admin): the same job the nightly schedule runs. ``ran`` is
    false when another process is already running it."""
    caller.require_admin()
    return await service.consolidation.maintain()


@router.post("/chat-command", tags=["memories"])
async def chat_command(body: s.ChatCommand, service: Service, ns: WriteNS) -> s.ChatAnswer:
    """Answer `/memory`, `/memory list`, `/memory delete <id>` without an LLM."""
    from memloci.interfaces.chat_commands import answer_memory_command

    v.ident(body.user, "user"), v.ident(body.agent, "agent")  # checked even for plain text
    answer = await answer_memory_command(
        body.text, service, namespace=ns, user=body.user, agent=body.agent
    )
    return s.ChatAnswer(command=answer is not None, answer=answer)


# ---------------------------------------------------------------- export / import
@router.get("/export", tags=["transfer"], response_class=StreamingResponse)
async def export(
    service: Service, ns: ReadNS, vectors: bool = Query(True, description="include vectors")
) -> StreamingResponse:
    """The namespace as JSON Lines (every record: memories, versions, edges, users,
    entities and their links, threads, sessions, knowledge)."""
    lines = service.admin.export_lines(ns, vectors=vectors)

    def step() -> list[str]:
        return list(itertools.islice(lines, 500))

    async def body() -> AsyncIterator[bytes]:
        while chunk := await asyncio.to_thread(step):
            yield "".join(line + "\n" for line in chunk).encode()

    headers = {"Content-Disposition": f'attachment; filename="memloci-{ns}.jsonl"'}
    return StreamingResponse(body(), media_type="application/x-ndjson", headers=headers)


@router.post("/import", tags=["transfer"])
async def import_lines(request: Request, service: Service, ns: WriteNS) -> s.ImportResult:
    """Import JSON Lines (as exported) into the namespace: all lines or none."""
    raw = await request.body()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError("the import body is not UTF-8 text") from exc
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValidationError("the import body is empty", hint="send JSON Lines from /export")
    report = await service.admin.import_lines(lines, namespace=ns)
    return s.ImportResult(**{k: getattr(report, k) for k in s.ImportResult.model_fields})
