"""REST routes for people, conversations, entities and API keys (layer: interfaces).

``/api/v1/memory-users`` (with merge), ``/api/v1/checkpoints`` (alias
``/api/v1/threads``: short-term conversation memory), ``/api/v1/entities`` (with
a neighbourhood graph) and ``/api/v1/keys`` (admin only).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any, TypeVar

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, Field
from starlette.convertors import Convertor, register_url_convertor

from memloci import validate as v
from memloci.errors import NotFoundError, ValidationError
from memloci.interfaces.rest.deps import CallerDep, ReadNS, Service, WriteNS
from memloci.interfaces.rest.schemas import (
    CURSOR_DOC,
    OFFSET_DOC,
    BatchDeleted,
    Body,
    Flag,
    Page,
    Patch,
)
from memloci.models import Entity, KeyPage, MemoryUser, Thread
from memloci.service.privacy import ForgetReport

router = APIRouter(prefix="/api/v1")


class _PathId(Convertor[str]):
    """An id in a URL path that may hold ``/`` (sent as is or as ``%2F``: user
    ``mail/sam``, a thread of chat ``team/ops``), but never one a sibling route's path
    would make (``…/forget``, ``batch-delete``): a method those routes lack then answers
    405, as it should, instead of looking up a strange id. With a trailing ``/``
    (``…/forget/``) the path is sent to the one without it (307), as on every route."""

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


class _UserId(_PathId):
    regex = r"(?!batch-delete/?$)[^/].*(?<!/forget)(?<!/forget/)(?<!/merge)(?<!/merge/)"


class _ThreadId(_PathId):
    regex = r"(?!batch-delete/?$)[^/].*(?<!/messages)(?<!/messages/)"


register_url_convertor("memloci_user", _UserId())
register_url_convertor("memloci_thread", _ThreadId())


class IdsBody(Body):
    ids: list[str] = Field(description="ids to delete (all must exist, or nothing is deleted)")


class EntityIds(IdsBody):
    """Entity ids (8 letters or digits) to delete."""


class UserCreate(Body):
    id: str = Field(description="canonical id, e.g. 'telegram:12345' or 'sam'")
    display_name: str | None = None
    identifiers: dict[str, str] | None = Field(None, description="channel → id on that channel")
    preferences: dict[str, Any] | None = None


class UserUpdate(Body):
    display_name: str | None = None
    identifiers: dict[str, str] | None = None
    preferences: dict[str, Any] | None = None


class MergeBody(Body):
    into: str = Field(description="the user that keeps the merged identity")


class MessagesBody(Body):
    messages: list[dict[str, Any]] = Field(description="[{role, content}, …]; system dropped")
    user: str | None = None
    agent: str | None = None


class EntityCreate(Body):
    name: str
    type: str | None = Field(None, description="person, project, organization, place, …")
    aliases: list[str] | None = None
    summary: str | None = None
    attributes: dict[str, Any] | None = None


class EntityUpdate(Patch):
    name: str | None = None
    type: str | None = None
    aliases: list[str] | None = None
    summary: str | None = None
    attributes: dict[str, Any] | None = None


class KeyCreate(Body):
    name: str
    namespaces: list[str] = Field(description="namespaces it may use; ['*'] for admin keys")
    write: Flag = True
    admin: Flag = False


class KeyCreated(BaseModel):
    key: Any
    secret: str = Field(description="shown once; only its hash is stored")


class KeyOut(BaseModel):
    id: str
    name: str
    namespaces: list[str]
    can_write: bool
    admin: bool
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


SYSTEM_ROLES = ("system", "developer")


def _checkpoint(messages: list[dict[str, Any]]) -> None:
    """What a checkpoint adds, checked like turns: text in every message (never blank)
    and at least one message that is not a system prompt (those are dropped)."""
    kept = v.thread_messages(messages)
    for i, msg in enumerate(messages):
        content, role = msg.get("content"), str(msg.get("role", "")).strip().lower()
        if isinstance(content, str) and not content.strip() and role not in SYSTEM_ROLES:
            raise ValidationError(
                f"message {i}: content is empty", hint="give 1–20000 characters of text"
            )
    if not kept:
        raise ValidationError(
            "no user, assistant or tool messages to add (system prompts are not stored)",
            hint="send the conversation's messages; instructions go to learn_procedure",
        )


PageT = TypeVar("PageT", bound=Page[Any])


def _page(model: type[PageT], page: KeyPage[Any], limit: int, offset: int) -> PageT:
    return model(
        items=page.items,
        total=page.total,
        limit=limit,
        offset=offset,
        next_cursor=page.next_cursor,
    )


def _deleted(count: int, ids: list[str]) -> BatchDeleted:
    return BatchDeleted(deleted=count, ids=ids)


async def _delete_all(deleter: Any, ids: list[str], ns: str, exists: Any) -> BatchDeleted:
    """Check every id first (404 naming the missing ones), then delete them together."""
    for one in ids:
        await exists(one, namespace=ns)
    return _deleted(await deleter(ids, namespace=ns), ids)


# ---------------------------------------------------------------- memory users
USERS: list[str | Enum] = ["memory users"]


@router.get("/memory-users/", tags=USERS)
async def list_users(
    service: Service,
    ns: ReadNS,
    q: str | None = Query(None, description="matches id or display name"),
    limit: int = 50,
    offset: int = Query(0, description=OFFSET_DOC),
    cursor: str | None = Query(None, description=CURSOR_DOC),
) -> Page[MemoryUser]:
    """Memory users, oldest first (then by id)."""
    page = await service.paging.page_users(
        namespace=ns, query=q, limit=limit, offset=offset, cursor=cursor
    )
    return _page(Page[MemoryUser], page, limit, offset)


@router.get("/memory-users/{user_id:memloci_user}", tags=USERS)
async def get_user(user_id: str, service: Service, ns: ReadNS) -> MemoryUser:
    return await service.records.get_user(user_id, namespace=ns)


@router.post("/memory-users/", tags=USERS, status_code=status.HTTP_201_CREATED)
async def create_user(body: UserCreate, service: Service, ns: WriteNS) -> MemoryUser:
    data = body.model_dump()
    return await service.records.save_user(data.pop("id"), namespace=ns, **data)


@router.patch("/memory-users/{user_id:memloci_user}", tags=USERS)
async def update_user(user_id: str, body: UserUpdate, service: Service, ns: WriteNS) -> MemoryUser:
    await service.records.get_user(user_id, namespace=ns)
    return await service.records.save_user(user_id, namespace=ns, **body.model_dump())


@router.delete("/memory-users/{user_id:memloci_user}", tags=USERS)
async def delete_user(user_id: str, service: Service, ns: WriteNS) -> BatchDeleted:
    return await _delete_all(service.records.delete_users, [user_id], ns, service.records.get_user)


@router.post("/memory-users/batch-delete/", tags=USERS)
async def batch_delete_users(body: IdsBody, service: Service, ns: WriteNS) -> BatchDeleted:
    return await _delete_all(service.records.delete_users, body.ids, ns, service.records.get_user)


@router.post("/memory-users/{user_id:memloci_user}/merge", tags=USERS)
async def merge_user(user_id: str, body: MergeBody, service: Service, ns: WriteNS) -> MemoryUser:
    """Merge ``user_id`` into ``into``: identifiers, preferences and memories move over."""
    return await service.records.merge_users(user_id, body.into, namespace=ns)


@router.post("/memory-users/{user_id:memloci_user}/forget", tags=USERS)
async def forget_user(user_id: str, service: Service, ns: WriteNS) -> ForgetReport:
    """Forget a person: their memories (every type, with versions, vectors, edges and
    entity links), entities only they mention, threads, user record and identifiers (and
    users merged into them) and session state, in one transaction; then the store is
    scrubbed so none of their text stays on disk. Needs a write key for the namespace.
    The scrub waits for no other connection: when one holds an old read snapshot the
    reply says ``scrubbed: false`` with ``scrub_reason`` and the scrub stays due.
    A user with nothing stored (unknown, mistyped or already forgotten) answers 404; it
    scrubs only when a scrub is still due, so a retry finishes an unfinished one
    (``details.scrubbed``); a merged-away user answers 409."""
    report = await service.privacy.forget_user(user_id, namespace=ns)
    if not report.removed:
        raise NotFoundError(
            f"nothing stored for memory user {report.user!r} in namespace {ns!r}: no user "
            "record, memories or threads (already forgotten, or a mistyped id)",
            hint="list users to see their ids; send an id once percent-encoded (/ as %2F)",
            scrubbed=report.scrubbed,
            **({"scrub_reason": report.scrub_reason} if report.scrub_reason else {}),
        )
    return report


# ---------------------------------------------------------------- checkpoints / threads
THREADS: list[str | Enum] = ["checkpoints"]


def _thread_routes(prefix: str, include_in_schema: bool) -> None:
    one = f"/{prefix}/{{thread_id:memloci_thread}}"  # a thread id may hold "/"

    @router.get(f"/{prefix}/", tags=THREADS, include_in_schema=include_in_schema)
    async def list_threads(
        service: Service,
        ns: ReadNS,
        user: str | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = Query(0, description=OFFSET_DOC),
        cursor: str | None = Query(None, description=CURSOR_DOC),
    ) -> Page[Thread]:
        """Threads, last updated first (then by id). A thread that gets messages moves to
        the top: while paging by cursor it is listed once more or not at all; no other
        thread is skipped or repeated."""
        page = await service.paging.page_threads(
            namespace=ns, user=user, agent=agent, limit=limit, offset=offset, cursor=cursor
        )
        return _page(Page[Thread], page, limit, offset)

    @router.get(one, tags=THREADS, include_in_schema=include_in_schema)
    async def get_thread(thread_id: str, service: Service, ns: ReadNS) -> Thread:
        return await service.records.get_thread(thread_id, namespace=ns)

    @router.post(
        f"{one}/messages",
        tags=THREADS,
        include_in_schema=include_in_schema,
    )
    async def append(thread_id: str, body: MessagesBody, service: Service, ns: WriteNS) -> Thread:
        """Checkpoint messages onto a thread (created when new); as strict as turns: each
        message needs non-blank content, and system prompts alone are nothing to add."""
        _checkpoint(body.messages)
        return await service.records.append_messages(
            thread_id, body.messages, namespace=ns, user=body.user, agent=body.agent
        )

    @router.delete(one, tags=THREADS, include_in_schema=include_in_schema)
    async def delete_thread(thread_id: str, service: Service, ns: WriteNS) -> BatchDeleted:
        return await _delete_all(
            service.records.delete_threads, [thread_id], ns, service.records.get_thread
        )

    @router.post(f"/{prefix}/batch-delete/", tags=THREADS, include_in_schema=include_in_schema)
    async def batch_delete_threads(body: IdsBody, service: Service, ns: WriteNS) -> BatchDeleted:
        return await _delete_all(
            service.records.delete_threads, body.ids, ns, service.records.get_thread
        )


_thread_routes("checkpoints", True)
_thread_routes("threads", False)


# ---------------------------------------------------------------- entities
ENTITIES: list[str | Enum] = ["entities"]


@router.get("/entities/", tags=ENTITIES)
async def list_entities(
    service: Service,
    ns: ReadNS,
    type: str | None = None,
    q: str | None = Query(None, description="matches name or alias"),
    limit: int = 50,
    offset: int = Query(0, description=OFFSET_DOC),
    cursor: str | None = Query(None, description=CURSOR_DOC),
) -> Page[Entity]:
    """Entities, most mentioned first (then by name, id). An entity mentioned again
    moves up: while paging by cursor it is listed once more or not at all; no other
    entity is skipped or repeated."""
    page = await service.paging.page_entities(
        namespace=ns, type=type, query=q, limit=limit, offset=offset, cursor=cursor
    )
    return _page(Page[Entity], page, limit, offset)


@router.get("/entities/{entity_id}", tags=ENTITIES)
async def get_entity(entity_id: str, service: Service, ns: ReadNS, limit: int = 20) -> Any:
    """The entity, its current memories and related entities."""
    entity = await service.records.get_entity(entity_id, namespace=ns)
    return await service.records.entity_info(entity.id, namespace=ns, limit=limit)


@router.get("/entities/{entity_id}/graph", tags=ENTITIES)
async def entity_graph(entity_id: str, service: Service, ns: ReadNS, limit: int = 30) -> Any:
    """Nodes and links around the entity, for a small graph view."""
    return await service.records.entity_graph(entity_id, namespace=ns, limit=limit)


class LinksBody(Body):
    # at least one: the schema says so, and an empty list would link nothing (a 400)
    memory_ids: list[str] = Field(description="memories that mention the entity", min_length=1)


@router.post("/entities/{entity_id}/links", tags=ENTITIES)
async def link_entity(entity_id: str, body: LinksBody, service: Service, ns: WriteNS) -> Any:
    """Link memories to the entity (all must exist, or nothing is linked)."""
    entity = await service.records.get_entity(entity_id, namespace=ns)
    for mid in body.memory_ids:
        await service.memories.get(mid, namespace=ns)
    for mid in body.memory_ids:
        await service.records.link_entities(mid, [entity.id], namespace=ns)
    return await service.records.entity_info(entity.id, namespace=ns)


@router.post("/entities/", tags=ENTITIES, status_code=status.HTTP_201_CREATED)
async def create_entity(body: EntityCreate, service: Service, ns: WriteNS) -> Entity:
    data = body.model_dump(exclude_none=True)
    return await service.records.save_entity(data.pop("name"), namespace=ns, **data)


@router.patch("/entities/{entity_id}", tags=ENTITIES)
async def update_entity(
    entity_id: str, body: EntityUpdate, service: Service, ns: WriteNS
) -> Entity:
    old = await service.records.get_entity(entity_id, namespace=ns)
    data = body.model_dump(exclude_none=True)
    name = data.pop("name", old.canonical_name)
    return await service.records.save_entity(name, namespace=ns, entity_id=old.id, **data)


@router.delete("/entities/{entity_id}", tags=ENTITIES)
async def delete_entity(entity_id: str, service: Service, ns: WriteNS) -> BatchDeleted:
    return await _delete_all(
        service.records.delete_entities, [entity_id], ns, service.records.get_entity
    )


@router.post("/entities/batch-delete/", tags=ENTITIES)
async def batch_delete_entities(body: EntityIds, service: Service, ns: WriteNS) -> BatchDeleted:
    return await _delete_all(
        service.records.delete_entities, body.ids, ns, service.records.get_entity
    )


# ---------------------------------------------------------------- API keys (admin)
KEYS: list[str | Enum] = ["keys"]


def _key_out(key: Any) -> KeyOut:
    return KeyOut(**key.model_dump(include=set(KeyOut.model_fields)))


@router.get("/keys/", tags=KEYS)
async def list_keys(
    service: Service, caller: CallerDep, include_revoked: bool = False
) -> list[KeyOut]:
    caller.require_admin(key=True)
    return [_key_out(k) for k in await service.keys.list_keys(include_revoked=include_revoked)]


@router.post("/keys/", tags=KEYS, status_code=status.HTTP_201_CREATED)
async def create_key(body: KeyCreate, service: Service, caller: CallerDep) -> KeyCreated:
    caller.require_admin(key=True)
    key, secret = await service.keys.create_key(
        body.name, body.namespaces, write=body.write, admin=body.admin
    )
    return KeyCreated(key=_key_out(key), secret=secret)


@router.delete("/keys/{key_id}", tags=KEYS)
async def revoke_key(key_id: str, service: Service, caller: CallerDep) -> KeyOut:
    caller.require_admin(key=True)
    return _key_out(await service.keys.revoke_key(key_id))
