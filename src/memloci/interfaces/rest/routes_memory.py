"""The versioned-memory endpoints ``/api/memory/`` (layer: interfaces).

The small API agent tools and chat front ends use: list the active
memories, get one with its version history, create (5–500 characters, one of the four
categories, an optional subject), update (same id, new version) and soft delete.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel, Field

from memloci.errors import ConflictError, NotFoundError
from memloci.interfaces.rest.deps import ReadNS, Service, WriteNS
from memloci.interfaces.rest.schemas import CURSOR_DOC, OFFSET_DOC, Body, Flag
from memloci.models import MemoryNode, NodeType

router = APIRouter(prefix="/api/memory", tags=["memory (versioned)"])
_FACTS = (NodeType.SEMANTIC, NodeType.OPINION)


MemoryCategory = Literal["person", "preference", "context", "project"]
LIMIT_MAX = 10_000  # what the service accepts; the description below says the same


class CreateMemoryRequest(Body):
    content: str = Field(description="5–500 characters")
    category: MemoryCategory = Field(description="person, preference, context or project")
    subject: str | None = Field(None, max_length=200, description="who or what it is about")
    user: str | None = Field(None, description="owner (user-scoped memory)")
    allow_similar: Flag = Field(
        False, description="create even when a memory with the same subject exists"
    )


class UpdateMemoryRequest(Body):
    content: str = Field(description="5–500 characters")


class MemoryResponse(BaseModel):
    id: str
    category: str
    subject: str | None
    content: str
    version: int
    created_at: datetime
    updated_at: datetime = Field(
        description="when the latest version was made (version 1: created_at)"
    )


class CreatedMemory(MemoryResponse):
    """The memory a create call left: ``created`` (201); ``superseded`` (201) when it
    contradicts an older memory of the same subject and property, which no longer holds
    (``message`` names it; it stays in its history); or ``confirmed`` (200) when the
    same memory already existed — then it is returned unchanged and ``message`` says
    which requested fields were not applied."""

    action: Literal["created", "superseded", "confirmed"]
    message: str


class VersionResponse(BaseModel):
    version: int
    content: str
    created_at: datetime


class MemoryWithHistory(MemoryResponse):
    versions: list[VersionResponse]


class MemoryListResponse(BaseModel):
    memories: list[MemoryResponse]
    total: int = Field(description="how many match, read with the memories (one snapshot)")
    next_cursor: str | None = Field(
        None, description="pass as ?cursor= for the next page (null: this is the last page)"
    )


class UpdatedMemory(MemoryResponse):
    previous_content: str


class DeletedMemory(BaseModel):
    id: str
    content: str
    deleted: bool = True


def _out(node: MemoryNode) -> MemoryResponse:
    return MemoryResponse(
        id=node.id,
        category=node.category,
        subject=node.subject,
        content=node.content,
        version=node.version,
        created_at=node.created_at,
        updated_at=node.updated_at if node.version > 1 else node.created_at,
    )


async def _active(service: Service, ns: str, memory_id: str) -> MemoryNode:
    node = await service.memories.get(memory_id, namespace=ns)
    if node.type not in _FACTS or node.valid_until is not None:
        raise NotFoundError(f"no active memory {memory_id!r}", hint="GET /api/memory/ lists them")
    return node


@router.get("/")
async def list_memories(
    service: Service,
    ns: ReadNS,
    user: str | None = None,
    category: str | None = None,
    limit: int = Query(200, description=f"1–{LIMIT_MAX}"),
    offset: int = Query(0, description=OFFSET_DOC),
    cursor: str | None = Query(None, description=CURSOR_DOC),
) -> MemoryListResponse:
    """Active memories, ordered by category then creation (stable for prompt caches);
    page on with ``cursor`` (the previous page's ``next_cursor``)."""
    flt = service.filter(namespace=ns, user=user, type=list(_FACTS), category=category)
    page = await service.paging.page_nodes(
        flt, limit=limit, offset=offset, order="category", cursor=cursor
    )
    return MemoryListResponse(
        memories=[_out(n) for n in page.items], total=page.total, next_cursor=page.next_cursor
    )


@router.get("/{memory_id}")
async def get_memory(memory_id: str, service: Service, ns: ReadNS) -> MemoryWithHistory:
    node = await _active(service, ns, memory_id)
    versions = await service.memories.history(memory_id, namespace=ns)
    return MemoryWithHistory(
        **_out(node).model_dump(),
        versions=[
            VersionResponse(**x.model_dump(include={"version", "content", "created_at"}))
            for x in versions
        ],
    )


@router.post(
    "/",
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": CreatedMemory, "description": "the same memory existed: confirmed"}},
)
async def create_memory(
    body: CreateMemoryRequest, service: Service, ns: WriteNS, response: Response
) -> CreatedMemory:
    """Create a memory (201). The same memory again confirms the existing one (200, with
    ``action: confirmed`` and a message naming any requested category or subject that
    was not applied). A memory with the same subject → 409 with its id (update it
    instead)."""
    result = await service.memories.remember(
        body.content,
        namespace=ns,
        category=body.category,
        subject=body.subject,
        user=body.user,
        suggest_on_subject=not body.allow_similar,
    )
    if result.action == "suggest_update":
        ids = [n.id for n in result.similar]
        raise ConflictError(
            f"a memory about {body.subject!r} exists: {', '.join(ids[:3])}",
            hint=f"update it with PUT /api/memory/{ids[0]} (or send allow_similar=true)",
            similar=ids,
        )
    node = result.memory
    if result.action in ("created", "superseded"):  # superseded: a new memory replaced one
        return CreatedMemory(
            **_out(node).model_dump(), action=result.action, message=result.message
        )
    response.status_code = status.HTTP_200_OK
    notes = [result.message.rstrip(".") + "; nothing new was created"]
    for field, asked, kept in (
        ("category", body.category, node.category),
        ("subject", body.subject, node.subject),
    ):
        if asked is not None and asked != kept:
            notes.append(
                f"the requested {field} {asked!r} was not applied (it stays {kept!r}; "
                f"PUT /api/memory/{node.id} changes the content only)"
            )
    return CreatedMemory(**_out(node).model_dump(), action="confirmed", message="; ".join(notes))


@router.put("/{memory_id}")
async def update_memory(
    memory_id: str, body: UpdateMemoryRequest, service: Service, ns: WriteNS
) -> UpdatedMemory:
    """Update the content: same id, version + 1, the old text kept in the history."""
    old = await _active(service, ns, memory_id)
    result = await service.edits.update(memory_id, body.content, namespace=ns)
    return UpdatedMemory(**_out(result.memory).model_dump(), previous_content=old.content)


@router.delete("/{memory_id}")
async def delete_memory(memory_id: str, service: Service, ns: WriteNS) -> DeletedMemory:
    """Soft delete: it stops being active; its history stays."""
    node = await _active(service, ns, memory_id)
    await service.edits.forget(memory_id, namespace=ns)
    return DeletedMemory(id=node.id, content=node.content)
